"""The controller's side: collect every run record from the reports as they arrive (the same at
-n 0 and under xdist), append them to `runs.jsonl` at once, and at the end of the session write
the exports and print the tier table. Registered on the controller only."""

from __future__ import annotations

import csv
import json
import math
import platform
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from . import __version__, metrics, pricing
from .record import write_json

RUNS_FILE = "runs.jsonl"


class Aggregator:
    def __init__(self, out: Path, settings: Any) -> None:
        self.out = out
        self.settings = settings
        self.records: dict[str, dict[str, Any]] = {}

    # -- as reports arrive --------------------------------------------------------------------
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        props = dict(report.user_properties)
        rec: dict[str, Any] | None = props.get("scylla_run")  # type: ignore[assignment]
        if rec is None:
            if report.failed and "test.yaml::" in report.nodeid and report.when == "call" \
                    and report.nodeid not in self.records:
                rec = {"run_key": report.nodeid, "outcome": "infra_error", "passed": False,
                       "reason": "the worker running this item crashed; nothing was recorded",
                       "crashed": True}
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
    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if not self.records:
            return
        experiment = self.out.name
        records = list(self.records.values())
        runs = [metrics.run_row(r, experiment) for r in records]
        _csv(self.out / "runs.csv", runs, metrics.RUN_COLUMNS)
        _csv(self.out / "judges.csv", [j for r in records for j in metrics.judge_rows(
            r, experiment)])
        _csv(self.out / "criteria.csv", [c for r in records for c in metrics.criteria_rows(
            r, experiment)])
        summary = metrics.group_summary(runs)
        best = metrics.frontier(summary)
        write_json(self.out / "summary.json", _jsonable({
            "experiment": experiment, "runs": len(runs),
            "outcomes": dict(Counter(r["outcome"] for r in runs)),
            "simulated": any(r["simulated"] for r in runs),
            "agent_cost_usd": sum(r["cost_usd"] or 0 for r in runs),
            "judge_cost_usd": sum(r["judge_cost_usd"] or 0 for r in runs),
            "tiers": summary, "frontier": {"tier": best[0], "cop": best[1]} if best else None}))
        write_json(self.out / "manifest.json", self._manifest(records))

    def _manifest(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        s = self.settings
        return {
            "written_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "plugin_version": __version__, "python": sys.version.split()[0],
            "platform": platform.platform(),
            "cli_versions": sorted({r["cli_version"] for r in records if r.get("cli_version")}),
            "agent_models": sorted({r["model"] for r in records if r.get("model")}),
            "judges": [j.label for j in s.judges], "min_judges": s.min_judges,
            "oracle": s.oracle, "sandbox": s.sandbox,
            "prices_as_of": pricing.PRICES_AS_OF,
            "prices_usd_per_mtok": {m: {"input": i, "output": o} for m, (i, o) in
                                    pricing.PRICES.items()},
            "config_hashes": dict(sorted({r["run_key"]: r.get("config_hash")
                                          for r in records}.items())),
            "options": {"runs": s.runs, "tiers": s.tiers, "subtests": s.subtests,
                        "model": s.model}}

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.records:
            return
        runs = [metrics.run_row(r, self.out.name) for r in self.records.values()]
        summary = metrics.group_summary(runs)
        best = metrics.frontier(summary)
        tr = terminalreporter
        tr.section("pytest-scylla")
        if any(r["simulated"] for r in runs):
            tr.write_line("SIMULATED MODEL: oracle agent and judges, not a real evaluation",
                          yellow=True, bold=True)
        tr.write_line(f"{'tier':<6}{'runs':>5}{'pass rate [95% CI]':>24}{'score':>7}"
                      f"{'grade':>6}{'cost/run':>10}{'CoP':>10}  note")
        for s in summary:
            mark = " <- frontier" if best and s["tier"] == best[0] else ""
            score = "-" if s["mean_score"] is None else f"{s['mean_score']:.2f}"
            tr.write_line(
                f"{s['tier']:<6}{s['n']:>5}{_rate(s):>24}{score:>7}{s['modal_grade'] or '-':>6}"
                f"{'$' + format(s['mean_cost'], '.4f'):>10}{metrics.fmt_cop(s['cop']):>10}"
                f"{mark}{'  ' + s['warning'] if s['warning'] and not mark else ''}")
        counts = Counter(r["outcome"] for r in runs)
        tr.write_line("outcomes: " + ", ".join(f"{n} {o}" for o, n in sorted(counts.items()))
                      + " (infra_error and judge_error runs are not counted in pass rates)")
        agent = sum(r["cost_usd"] or 0 for r in runs)
        judges = sum(r["judge_cost_usd"] or 0 for r in runs)
        tr.write_line(f"spend: agent ${agent:.4f} + judges ${judges:.4f} = ${agent + judges:.4f}"
                      f"; results: {self.out}")


def _rate(s: dict[str, Any]) -> str:
    return f"{s['pass_rate']:.0%} [{s['ci_low']:.0%}, {s['ci_high']:.0%}]"


def _csv(path: Path, rows: list[dict[str, Any]], columns: list[str] | None = None) -> None:
    names = columns or (list(rows[0]) if rows else [])
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=names, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def _jsonable(value: Any) -> Any:
    """JSON has no infinity: CoP of a tier that never passed is written as the string "inf"."""
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value
