"""The controller's side: collect every run record from the reports as they arrive (the same at
-n 0 and under xdist), append them to `runs.jsonl` at once, and at the end of the session write
the exports and print the tier table. Registered on the controller only."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, cast

import pytest

from pytest_scylla.core.outcomes import Outcome
from pytest_scylla.core.record import RunRecord, of_report, read_dict, stop_kind, stored_records
from pytest_scylla.core.runspec import RunKey, is_run_item
from pytest_scylla.core.terminal import safe
from pytest_scylla.core.warm import import_soon
from pytest_scylla.formats import provenance
from pytest_scylla.formats.tiers import tier_sources
from pytest_scylla.results import report
from pytest_scylla.results.decision_tables import decision_lines
from pytest_scylla.results.decisions import (
    DecisionRow,
    manifest_entry,
    session_decisions,
)
from pytest_scylla.results.hook_notes import run_warnings
from pytest_scylla.results.tables import RUNS_FILE, Tables


def crash_record(nodeid: str) -> RunRecord:
    """The row of an item whose worker died before it could report: an infra_error, placed by
    its node id, so it shows as a crashed run rather than a hole."""
    key = RunKey.from_nodeid(nodeid)
    place: RunRecord = {}
    if key:
        place = {
            "case": key.case,
            "tier": key.tier,
            "subtest": key.subtest,
            "run": key.run,
            "run_key": key.folder,
            **({"model": key.model} if key.model else {}),
        }
    return {
        "run_key": nodeid,
        **place,
        "outcome": Outcome.INFRA_ERROR,
        "passed": False,
        "reason": "the worker running this item crashed; nothing was recorded",
        "crashed": True,
    }


def earlier_rows(out: Path) -> dict[str, RunRecord]:
    """The rows of an earlier session's runs.jsonl that have no run folder: the crash rows of
    items whose worker died. (A run with a folder is its run.json, or runs again when that is
    missing; a line a kill cut short is dropped.)"""
    found: dict[str, RunRecord] = {}
    path = out / RUNS_FILE
    if not path.is_file():
        return found
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        key = row.get("run_key") if isinstance(row, dict) else None
        if isinstance(key, str) and key and not (out / "runs" / key).exists():
            found[key] = row
    return found


class Aggregator:
    def __init__(self, out: Path, settings: Any, writers: dict[str, Any] | None = None) -> None:
        self.out = out
        self.settings = settings
        self.writers = writers or {}  # reports plugins add (extensions.report_writers)
        # runs already in the folder (a resumed experiment): part of every report
        self.stored = {} if settings.plan else {**earlier_rows(out), **stored_records(out)}
        self.records: dict[str, RunRecord] = {}  # this session's
        self.skips: Counter[str] = Counter()
        self.keys: set[RunKey] = set()  # the runs reported (for --scylla-stop=decided)
        self.stopped = 0  # runs skipped because their cell was decided
        self.decisions: list[DecisionRow] = []
        self.failure = ""
        self.partial: str | None = None
        self._log_ready = False
        self._first: tuple[Any, ...] | None = None  # the first record's tier, outcome, score

    # -- as reports arrive --------------------------------------------------------------------
    def _rewrite_log(self, records: list[RunRecord]) -> None:
        """runs.jsonl, atomically, as exactly these records, one line each."""
        path = self.out / RUNS_FILE
        text = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records)
        tmp = path.with_name(f".{RUNS_FILE}.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)

    def _append(self, rec: RunRecord) -> None:
        """Add a record to runs.jsonl the moment it arrives (a crash keeps it). The first time,
        the file is first rewritten from the folder's stored runs, which drops a line a killed
        session cut short and the lines of runs that run again."""
        self.out.mkdir(parents=True, exist_ok=True)
        if not self._log_ready:
            self._log_ready = True
            if self.stored or (self.out / RUNS_FILE).exists():
                self._rewrite_log(
                    [
                        r
                        for k, r in sorted(self.stored.items())  # not re-run now
                        if k not in self.records or self.records[k].get("cached")
                    ]
                )
        with open(self.out / RUNS_FILE, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(rec, separators=(",", ":")) + "\n")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        rec = of_report(report)
        if report.when == "setup" and (run := RunKey.from_nodeid(report.nodeid)) is not None:
            self.keys.add(run)
        if report.skipped and report.when == "setup" and is_run_item(report.nodeid):
            if stop_kind(report) is not None:  # by design, not a gap in the results
                self.stopped += 1
            else:
                reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else ""
                self.skips[str(reason).removeprefix("Skipped: ").split(":")[0]] += 1
        if rec is None:
            # xdist reports an item whose worker died with when="???" and no payload
            if report.failed and report.when in ("call", "???") and is_run_item(report.nodeid):
                rec = crash_record(report.nodeid)
            else:
                return
        key = rec["run_key"]
        if key in self.records:
            return
        self.records[key] = rec
        self._warm(rec)
        if not rec.get("cached"):  # a cached run is in the file already
            self._append(cast(RunRecord, {k: v for k, v in rec.items() if k != "rejudged_now"}))

    def _warm(self, rec: RunRecord) -> None:
        """Import what the exports will need while the runs go on, not after the last one: the
        intervals' scipy.special (~0.15 s) from the first record; scipy.stats (~0.5 s: the
        judges' correlations, the omnibus tests) once two records differ in outcome or score;
        statsmodels too (the tier comparisons' correction) once a second tier has a record."""
        mark = (rec.get("tier"), rec.get("outcome"), rec.get("score"))
        first = self._first = self._first or mark
        if mark[0] != first[0]:
            import_soon("scipy.special", "scipy.stats", "statsmodels.stats.multitest")
        elif mark != first:
            import_soon("scipy.special", "scipy.stats")
        else:
            import_soon("scipy.special")

    # -- at the end -----------------------------------------------------------------------------
    def all_records(self) -> list[RunRecord]:
        """The experiment's runs: the stored ones, overridden by this session's."""
        merged: dict[str, RunRecord] = {
            **self.stored,
            **{
                k: cast(
                    RunRecord, {x: v for x, v in r.items() if x not in ("cached", "rejudged_now")}
                )
                for k, r in self.records.items()
            },
        }
        return [merged[k] for k in sorted(merged)]

    def _tally(self) -> tuple[int, int, int]:
        """This session's runs: (run now, reused from disk, re-scored)."""
        cached = sum(bool(r.get("cached")) for r in self.records.values())
        rejudged = sum(bool(r.get("rejudged_now")) for r in self.records.values())
        return len(self.records) - cached - rejudged, cached, rejudged

    def _tables(self) -> Tables:
        tables = Tables(partial=self.partial)
        tables.add_records(self.all_records(), self.out.name, self.out)
        return tables

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if not self.records:
            return
        if exitstatus == pytest.ExitCode.INTERRUPTED:
            self.partial = "interrupted: the session stopped before every run finished"
            # runs that a worker recorded while it was being stopped, whose reports never came
            self.stored.update(
                {k: r for k, r in stored_records(self.out).items() if k not in self.records}
            )
        elif self.skips:
            self.partial = "not every run was run: " + ", ".join(
                f"{n} skipped ({why})" for why, n in self.skips.items()
            )
        if self.settings.stop == "decided":
            self.decisions = session_decisions(self.settings, self.keys, self.out)
        try:
            self._rewrite_log(self.all_records())  # one line per run, as the report counts
            report.write(
                self.out,
                self._tables(),
                self._manifest(self.all_records()),
                self.settings.report,
                self.writers,
            )
        except Exception as exc:  # the records are safe in runs.jsonl: say so, don't crash
            self.failure = (
                f"writing the reports failed ({type(exc).__name__}: {exc}); every "
                f"run is kept in {self.out / RUNS_FILE}: rebuild with "
                f"`scylla report {self.out}`"
            )

    def _manifest(self, records: list[RunRecord]) -> dict[str, Any]:
        s = self.settings
        manifest = provenance.manifest(
            records,
            {
                "runs": s.runs,
                "tiers": s.tiers,
                "subtests": s.subtests,
                "model": s.model,
                "models": list(s.models),
                "label": s.label,
                "judges": [j.label for j in s.judges],
                "min_judges": s.min_judges,
                "panel": s.panel,
                "oracle": s.oracle,
                "sandbox": s.sandbox,
                "image": s.image,
                "limits": dict(zip(("memory", "cpus", "pids"), s.limits, strict=True)),
                "docker_copy": s.docker_copy,
                "report": list(s.report),
                "budget_usd": s.budget_usd,
                "max_run_cost": s.max_run_cost,
                "fresh": s.fresh,
                "rejudge": s.rejudge,
            },
        )
        old = read_dict(self.out / "manifest.json")
        ran, cached, rejudged = self._tally()
        manifest["sessions"] = [
            *(old.get("sessions") or []),
            {  # each that wrote to this folder
                "at": manifest["written_at"],
                "ran": ran,
                "from_disk": cached,
                "rejudged": rejudged,
                "partial": self.partial,
            },
        ]
        rejudges = [*(old.get("rejudges") or [])]
        if rejudged:
            rejudges.append(
                {
                    "at": manifest["written_at"],
                    "judges": [j.label for j in s.judges],
                    "runs": sorted(k for k, r in self.records.items() if r.get("rejudged_now")),
                }
            )
        manifest["rejudges"] = rejudges
        if s.shard is not None:  # `scylla report` merges the shards and names missing ones
            manifest["shard"] = {
                "index": s.shard[0],
                "count": s.shard[1],
                "experiment": s.label or f"shards-of-{s.shard[1]}",
            }
        manifest["tier_sources"] = tier_sources(s.tier_dirs)  # packaged (which version) or own
        manifest["partial"] = self.partial
        if s.stop == "decided":
            manifest["stop"] = manifest_entry(s, self.decisions)
        return manifest

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.records:
            return
        terminalreporter.section("pytest-scylla")
        if self.failure:
            terminalreporter.write_line(safe(self.failure), red=True)
        for line in report.tier_table(self._tables(), self.out, self.decisions):
            loud = line.startswith(("SIMULATED", "PARTIAL"))
            terminalreporter.write_line(safe(line), yellow=loud, bold=loud)
        for line in run_warnings(list(self.records.values())):  # hooks that failed
            terminalreporter.write_line(safe(line), yellow=True)
        ran, cached, rejudged = self._tally()
        earlier = len(set(self.stored) - set(self.records))
        if cached or rejudged or earlier:
            terminalreporter.write_line(
                safe(
                    f"resumed {self.out.name}: {ran} run now, "
                    f"{cached} reused from disk (cached), {rejudged} re-scored, {earlier} earlier "
                    "runs outside this selection kept in the report"
                )
            )
        for line in decision_lines(self.decisions, self.stopped):
            terminalreporter.write_line(safe(line))
        if self.partial:
            terminalreporter.write_line(
                safe(f"PARTIAL report: {self.partial}; run the same command again to resume"),
                yellow=True,
                bold=True,
            )
