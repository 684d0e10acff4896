"""Resuming an experiment folder: which stored runs count, which run again, and the lock that
keeps two processes (say a stale worker of a killed session and the session resuming it) from
running the same run at once.

A run's record (`runs/<key>/run.json`) is written atomically at its very end, so a run folder
without one was cut short and runs again; an `infra_error` record (including "interrupted") runs
again; any other record with the same config hash is the run's result and is reported from disk
(`cached`), except a `judge_error`, whose judges are asked again (the agent is not re-run).
A record made under other conditions is never silently mixed in.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .record import RECORD_FILE

LOCKS = ".locks"
OWNER_FILE = "owner.pid"  # in each run's private temp folder: who may remove it


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


def decide(run_dir: Path, config_hash: str, judge_hash: str, inputs: dict[str, str], *,
           fresh: bool = False, rejudge: bool = False) -> Decision:
    """What to do with the run whose folder is `run_dir`, given the current conditions."""
    path = run_dir / RECORD_FILE
    if not path.is_file():
        if rejudge:
            return Decision("skip", None, "--scylla-rejudge: this run is not stored, so there "
                                          "is nothing to re-score (run it without the option)")
        why = "half-written run (killed mid-way): run again" if run_dir.exists() else ""
        return Decision("run", None, why)
    try:
        rec = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        return Decision("run", None, f"{path}: unreadable record: run again")
    if fresh:
        return Decision("run", None, "--scylla-fresh: run again")
    stored_hash = rec.get("config_hash")
    if rec.get("outcome") == "infra_error" and stored_hash in (None, config_hash):
        return Decision("run", None, f"stored infra_error ({rec.get('reason', '')}): run again")
    if stored_hash != config_hash:
        changed = _changed(rec.get("inputs") or {}, inputs)
        detail = (f"changed: {', '.join(changed)}" if changed else
                  "the model, CLI version, subtest settings, sandbox, oracle mode or limits "
                  "changed")
        return Decision("conflict", rec, (
            f"{run_dir}: the stored run was made under other conditions (config hash "
            f"{stored_hash}, now {config_hash}; {detail}). Run it again with --scylla-fresh, "
            "or write to a new --scylla-out folder"))
    if rejudge:
        return Decision("rejudge", rec)
    if rec.get("outcome") == "judge_error":  # the agent's work stands; only the panel failed
        return Decision("rejudge", rec, "stored judge_error: the judges are asked again")
    if rec.get("judge_hash") not in (None, judge_hash):
        return Decision("conflict", rec, (
            f"{run_dir}: the rubric or the judge panel changed since this run was scored. "
            "Re-score stored runs with --scylla-rejudge (no agent is re-run), or run them "
            "again with --scylla-fresh"))
    return Decision("cached", rec)


PRIVATE_PREFIXES = ("scylla-run-", "scylla-gw-")  # a run's folder; a gateway's socket folder


def claim_private(prefix: str = "scylla-run-") -> Path:
    """A private temp folder (a run's, or a gateway's), marked with this process's pid so that
    `clean_stale` can remove it once this process is gone."""
    private = Path(tempfile.mkdtemp(prefix=prefix))
    (private / OWNER_FILE).write_text(str(os.getpid()), encoding="utf-8")
    return private


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_stale(temp_root: Path | None = None) -> list[Path]:
    """Remove the run and gateway folders left in the temp dir by processes that are gone (a
    SIGKILLed session); folders of live processes (another session on this host) are left
    alone."""
    root = temp_root or Path(tempfile.gettempdir())
    removed = []
    for folder in sorted(f for prefix in PRIVATE_PREFIXES for f in root.glob(f"{prefix}*")):
        owner = folder / OWNER_FILE
        try:
            pid = int(owner.read_text(encoding="utf-8").strip())
        except (OSError, ValueError):
            continue  # not ours to judge (no owner file yet, or not a folder)
        if not _alive(pid):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def stored_records(out: Path) -> dict[str, dict[str, Any]]:
    """Every complete run record in an experiment folder, by run key."""
    found = {}
    for path in sorted(out.glob(f"runs/*/{RECORD_FILE}")):
        try:
            rec = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(rec, dict) and rec.get("run_key"):
            found[rec["run_key"]] = rec
    return found
