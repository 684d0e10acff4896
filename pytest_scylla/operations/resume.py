"""Resuming an experiment folder: which stored runs count, which run again, and the lock that
keeps two processes (say a stale worker of a killed session and the session resuming it) from
running the same run at once. The item's fixtures (`pytest_scylla.session.fixtures`) act on the
decision: reuse, re-score or run, unless the session budget is spent or a usage-window pause
holds new runs.

A run's record (`runs/<key>/run.json`) is written atomically, after the agent (saying "not
judged yet") and at the end, so a run folder without one was cut short and runs again; an
`infra_error` record (including "interrupted") runs again; any other record with the same config
hash is the run's result and is reported from disk (`cached`), except a `judge_error`, whose
judges are asked again (the agent is not re-run).
A record made under other conditions is never silently mixed in.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import pytest

from pytest_scylla.core.outcomes import Outcome
from pytest_scylla.core.record import RECORD_FILE, RunRecord
from pytest_scylla.formats.provenance import Conditions, differences
from pytest_scylla.formats.spec import Case
from pytest_scylla.judging import judge_run
from pytest_scylla.operations.run_steps import timestamp
from pytest_scylla.operations.runtime import Runtime
from pytest_scylla.run import checks

LOCKS = ".locks"


@dataclass(frozen=True)
class Decision:
    action: str  # run | cached | rejudge | skip | conflict
    record: dict[str, Any] | None = None
    reason: str = ""


@contextlib.contextmanager
def run_lock(out: Path, key: str) -> Iterator[None]:
    """Hold the run's lock (an flock, so a killed holder releases it) while deciding and running."""
    folder = out / LOCKS
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"{key}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _changed(old: dict[str, str], new: dict[str, str]) -> list[str]:
    return sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))


def _what_changed(
    rec: dict[str, Any], inputs: dict[str, str], conditions: dict[str, Any] | None
) -> str:
    """What differs between a stored run's conditions and the current ones, field by field
    (a record from before conditions were kept: its input files and the fields it has)."""
    stored = rec.get("conditions")
    if isinstance(stored, dict) and conditions is not None:
        found = differences(stored, conditions)
    else:
        found = [f"{k}: changed" for k in _changed(rec.get("inputs") or {}, inputs)]
        if conditions is not None:
            for field, now in (
                ("model", conditions.get("model")),
                ("cli_version", conditions.get("cli")),
                ("oracle", conditions.get("oracle")),
                ("sandbox", conditions.get("sandbox")),
            ):
                if field in rec and rec[field] != now:
                    found.append(f"{field}: {rec[field]} -> {now}")
    if not found:
        return "no field of the record says what (a record from an older version)"
    shown = found[:8] + ([f"and {len(found) - 8} more"] if len(found) > 8 else [])
    return "changed: " + "; ".join(shown)


def decide(
    run_dir: Path,
    config_hash: str,
    judge_hash: str,
    inputs: dict[str, str],
    *,
    fresh: bool = False,
    rejudge: bool = False,
    conditions: dict[str, Any] | None = None,
) -> Decision:
    """What to do with the run whose folder is `run_dir`, given the current conditions."""
    path = run_dir / RECORD_FILE
    if not path.is_file():
        why = "half-written run (killed mid-way): run again" if run_dir.exists() else ""
        return _again(why, "this run is not stored", rejudge)
    try:
        rec = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        return _again(f"{path}: unreadable record: run again", f"{path} is unreadable", rejudge)
    if fresh:
        return Decision("run", None, "--scylla-fresh: run again")
    return _config_decision(
        run_dir, rec, config_hash, inputs, rejudge, conditions
    ) or _judging_decision(run_dir, rec, judge_hash, rejudge)


def _again(why: str, unscorable: str, rejudge: bool) -> Decision:
    """Run it again; under --scylla-rejudge (which runs no agent) skip it instead."""
    if rejudge:
        return Decision(
            "skip",
            None,
            f"--scylla-rejudge: {unscorable}, so there is nothing "
            "to re-score (run it without the option)",
        )
    return Decision("run", None, why)


def _config_decision(
    run_dir: Path,
    rec: dict[str, Any],
    config_hash: str,
    inputs: dict[str, str],
    rejudge: bool,
    conditions: dict[str, Any] | None,
) -> Decision | None:
    """A void stored run runs again, one made under other conditions is a conflict; None for a
    run of the current conditions."""
    stored_hash = rec.get("config_hash")
    if rec.get("outcome") == Outcome.INFRA_ERROR and stored_hash in (None, config_hash):
        # a void run has nothing worth scoring
        return _again(
            f"stored infra_error ({rec.get('reason', '')}): run again",
            "the stored run is an infra_error",
            rejudge,
        )
    if stored_hash != config_hash:
        detail = _what_changed(rec, inputs, conditions)
        return Decision(
            "conflict",
            rec,
            (
                f"{run_dir}: the stored run was made under other conditions (config hash "
                f"{stored_hash}, now {config_hash}; {detail}). Run it again with --scylla-fresh, "
                "or write to a new --scylla-out folder"
            ),
        )
    return None


def _judging_decision(
    run_dir: Path, rec: dict[str, Any], judge_hash: str, rejudge: bool
) -> Decision:
    """A stored run of the current conditions: reused, re-scored, or a conflict when the rubric
    or panel changed since it was scored."""
    if rejudge:
        return Decision("rejudge", rec)
    if rec.get("outcome") == Outcome.JUDGE_ERROR:  # the agent's work stands; only the panel failed
        return Decision("rejudge", rec, "stored judge_error: the judges are asked again")
    if rec.get("judge_hash") not in (None, judge_hash):
        return Decision(
            "conflict",
            rec,
            (
                f"{run_dir}: the rubric or the judge panel changed since this run was scored. "
                "Re-score stored runs with --scylla-rejudge (no agent is re-run), or run them "
                "again with --scylla-fresh"
            ),
        )
    return Decision("cached", rec)


def wait_out_pause(rt: Runtime, say: Callable[[str], None]) -> None:
    """Hold this run while the session is paused by a usage-window limit; skip it when the
    pause is longer than --scylla-max-pause."""
    assert rt.ledger is not None
    told = 0.0
    while (pause := rt.ledger.paused()) is not None:
        if pause.remaining > rt.settings.max_pause:
            pytest.skip(
                f"upstream usage limit ({pause.reason}): new runs paused for "
                f"{pause.remaining:.0f}s, longer than --scylla-max-pause="
                f"{rt.settings.max_pause:.0f}; resume later with the same --scylla-out"
            )
        if time.monotonic() - told > 60:
            until = datetime.fromtimestamp(pause.until, UTC)
            say(
                f"scylla: PAUSED by an upstream usage limit ({pause.reason}); new runs wait "
                f"{pause.remaining:.0f}s, until {until:%H:%M:%S} UTC"
            )
            told = time.monotonic()
        time.sleep(min(1.0, pause.remaining + 0.05))


def stored_evidence(run_dir: Path, stored: dict[str, Any]) -> judge_run.Evidence:
    """What the judges see of a stored run, read back from its folder (final message, diff,
    file list, check results): re-scoring runs no agent."""

    def exact(name: str) -> str:  # as written: no newline translation (a diff's \r\n stays)
        path = run_dir / name
        return path.read_bytes().decode("utf-8", errors="replace") if path.is_file() else ""

    return judge_run.Evidence(
        final_message=stored.get("final_message") or "",
        diff=exact("diff.patch"),
        files=[name for name in exact("files.txt").split("\n") if name],  # one a line: a
        # name may hold spaces, and so does the note of a cut list
        checks=[
            checks.CheckResult(**c) for c in stored.get("checks") or [] if c.get("kind") != "assert"
        ],
    )


def for_rejudge(
    stored: dict[str, Any], case: Case, evidence: judge_run.Evidence, cond: Conditions
) -> RunRecord:
    """A stored run made ready to be scored again with the current rubric and panel: the old
    scores move to `rejudged` (so the change is visible), an evaluation's old assert items go."""
    previous = {
        k: stored.get(k) for k in ("outcome", "score", "grade", "judge_hash", "judge_cost_usd")
    }
    previous["judges"] = [j.get("judge_model") for j in stored.get("judges") or []]
    kept = {
        k: v
        for k, v in stored.items()
        if k not in ("score", "impl_rate", "grade", "consensus", "judges")
    }
    kept["checks"] = [c for c in stored.get("checks") or [] if c.get("kind") != "assert"]
    return cast(
        RunRecord,
        {
            **kept,
            "check_items": evidence.check_rows(case),
            "check_score": evidence.check_score(case),
            "pass_threshold": case.rubric.pass_threshold,
            "judge_hash": cond.judge_hash,
            "inputs": cond.inputs,
            "rejudged": [
                *(stored.get("rejudged") or []),
                {"at": timestamp(), "previous": previous},
            ],
        },
    )
