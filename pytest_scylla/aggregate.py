"""The controller's side: collect every run record from the reports as they arrive (the same at
-n 0 and under xdist), append them to `runs.jsonl` at once, and at the end of the session write
the exports and print the tier table. Registered on the controller only."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from . import provenance, report
from .report import RUNS_FILE

ITEM_ID = re.compile(r"::(?P<case>[^\[]+)\[(?P<tier>T\d+)-(?P<number>\d{2})-r(?P<run>\d+)\]$")


def crash_record(nodeid: str) -> dict[str, Any]:
    """The row of an item whose worker died before it could report: an infra_error, placed by
    its node id, so it shows as a crashed run rather than a hole."""
    match = ITEM_ID.search(nodeid)
    place: dict[str, Any] = {}
    if match:
        place = {"case": match["case"], "tier": match["tier"],
                 "subtest": f"{match['tier']}-{match['number']}", "run": int(match["run"]),
                 "run_key": f"{match['case']}-{match['tier']}-{match['number']}-r{match['run']}"}
    return {"run_key": nodeid, **place, "outcome": "infra_error", "passed": False,
            "reason": "the worker running this item crashed; nothing was recorded",
            "crashed": True}


class Aggregator:
    def __init__(self, out: Path, settings: Any) -> None:
        self.out = out
        self.settings = settings
        self.records: dict[str, dict[str, Any]] = {}
        self.failure = ""

    # -- as reports arrive --------------------------------------------------------------------
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        props = dict(report.user_properties)
        rec: dict[str, Any] | None = props.get("scylla_run")  # type: ignore[assignment]
        if rec is None:
            # xdist reports an item whose worker died with when="???" and no payload
            if report.failed and report.when in ("call", "???") and ITEM_ID.search(report.nodeid):
                rec = crash_record(report.nodeid)
            else:
                return
        key = rec["run_key"]
        if key in self.records:
            return
        self.records[key] = rec
        self.out.mkdir(parents=True, exist_ok=True)
        with open(self.out / RUNS_FILE, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(rec, separators=(",", ":")) + "\n")

    # -- at the end -----------------------------------------------------------------------------
    def _tables(self) -> report.Tables:
        tables = report.Tables()
        tables.add_records(list(self.records.values()), self.out.name, self.out)
        return tables

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if not self.records:
            return
        try:
            report.write(self.out, self._tables(), self._manifest(list(self.records.values())),
                         self.settings.report)
        except Exception as exc:  # the records are safe in runs.jsonl: say so, don't crash
            self.failure = (f"writing the reports failed ({type(exc).__name__}: {exc}); every "
                            f"run is kept in {self.out / RUNS_FILE}: rebuild with "
                            f"`scylla report {self.out}`")

    def _manifest(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        s = self.settings
        return provenance.manifest(records, {
            "runs": s.runs, "tiers": s.tiers, "subtests": s.subtests, "model": s.model,
            "label": s.label, "judges": [j.label for j in s.judges], "min_judges": s.min_judges,
            "oracle": s.oracle, "sandbox": s.sandbox, "report": list(s.report)})

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.records:
            return
        terminalreporter.section("pytest-scylla")
        if self.failure:
            terminalreporter.write_line(self.failure, red=True)
        for line in report.tier_table(self._tables(), self.out):
            terminalreporter.write_line(line, yellow=line.startswith("SIMULATED"),
                                        bold=line.startswith("SIMULATED"))
