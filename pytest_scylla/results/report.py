"""Outputs from stored runs: the exports, `summary.json` and `statistical_results.json` (the
terminal tier table is `terminal_table`'s). Used at the end of a session (controller) and by
`scylla report`, which rebuilds them from one or several experiment folders (e.g. shards from
several machines) or from a folder of paper-format CSVs."""

from __future__ import annotations

import copy
import csv
import math
import statistics
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_scylla.core.outcomes import COUNTED
from pytest_scylla.core.record import RunRecord, write_json
from pytest_scylla.core.tiers import tier_key
from pytest_scylla.formats.rubric import DEFAULT_PASS_THRESHOLD
from pytest_scylla.results import ablation_score as ablation
from pytest_scylla.results import builtin_reports, metrics, models, stats
from pytest_scylla.results.decision_tables import (
    tier_decisions,
    with_decisions,
    write_decisions,
)
from pytest_scylla.results.decisions import DecisionRow, stored
from pytest_scylla.results.report_input import ReportInput
from pytest_scylla.results.rows import RunRow
from pytest_scylla.results.tables import Tables
from pytest_scylla.results.terminal_table import tier_table as tier_table

SUBTEST_KEYS = ("experiment", "agent_model", "case_id", "tier", "subtest")
SUBTEST_COLUMNS = [  # the paper's subtests.csv, then ours
    "experiment",
    "agent_model",
    "tier",
    "subtest",
    "pass_rate",
    "mean_score",
    "median_score",
    "std_score",
    "mean_impl_rate",
    "median_impl_rate",
    "std_impl_rate",
    "consistency",
    "mean_cost",
    "total_cost",
    "mean_duration",
    "cop",
    *(f"grade_{g}" for g in metrics.GRADES),
    "modal_grade",
    "case_id",
    "n",
    "passes",
    "excluded",
    "ci_low",
    "ci_high",
    "ci_method",
    "warning",
    "cop_low",
    "cop_high",
]


def _tier_tests(counted: Sequence[RunRow]) -> dict[str, Any]:
    """The tiers against each other on score, pass and cost."""
    order = sorted({str(r["tier"]) for r in counted}, key=tier_key)
    out: dict[str, Any] = {"omnibus": [], "pairwise": []}
    for metric in models.MEASURES:
        groups = {
            t: sorted(float(v) for r in counted if r["tier"] == t and (v := r[metric]) is not None)
            for t in order
        }  # order-free results
        out["omnibus"].append({"metric": metric, **stats.kruskal(groups)})
        out["pairwise"] += [{"metric": metric, **row} for row in stats.pairwise(groups, order)]
    return out


def statistical_results(tables: Tables) -> dict[str, Any]:
    counted = [r for r in tables.runs if r["outcome"] in COUNTED]
    out: dict[str, Any] = {**_tier_tests(counted), "n_runs": len(counted)}
    names = models.models(counted)
    out["agents"] = models.significance(counted, models.AGENT_KEY)  # several agent CLIs
    out["models"] = models.significance(counted)  # the model axis: models against each other,
    out["tiers_per_model"] = (
        [
            {
                "agent_model": m,
                **_tier_tests(  # the tiers within each model
                    [r for r in counted if str(r.get("agent_model")) == m]
                ),
            }
            for m in names
        ]
        if len(names) > 1
        else []
    )
    judges: Sequence[Mapping[str, Any]] = tables.judges  # cells as written in a paper CSV
    scores = [
        (
            str(j["judge_model"]),
            str(
                j.get("run_key")
                or f"{j.get('case_id') or j.get('experiment')}/"
                f"{j['tier']}-{j['subtest']}-{j['run_number']}"
            ),
            float(j["judge_score"]),
        )
        for j in judges
        if j.get("judge_score") not in (None, "") and str(j.get("judge_is_valid")) != "False"
    ]  # empty: not said invalid
    out["krippendorff_alpha"] = stats.krippendorff_alpha(scores)
    out["gwet_ac2"] = stats.gwet_ac2(scores)
    out["judge_vs_checks"] = judge_vs_checks(tables.records)
    out["ablation"] = ablation.ablation_scores(tables.records)
    out["utilisation"] = ablation.utilisation(tables.records)
    out["adaptive_panel"] = adaptive_panel(tables.records)
    out["judge_pairs"] = stats.judge_pairs(scores)
    bias: dict[str, list[float]] = {}
    for judge, _, score in scores:
        bias.setdefault(judge, []).append(score)
    out["judge_bias"] = [
        {"judge": j, "n": len(v), "mean_score": math.fsum(v) / len(v)}
        for j, v in sorted(bias.items())
    ]
    return out


def write(
    out: Path,
    tables: Tables,
    manifest: dict[str, Any] | None = None,
    formats: tuple[str, ...] = ("csv", "json"),
    writers: Mapping[str, Callable[..., None]] | None = None,
) -> dict[str, Any]:
    """Write the exports (CSV and JSON always: they are the store others rebuild from) and the
    requested reports of `writers` (default: the built-in `md` and `html`; a session passes
    every plugin's too) into `out`; return the summary."""
    out.mkdir(parents=True, exist_ok=True)
    _csv(out / "runs.csv", sorted(tables.runs, key=_row_order), metrics.RUN_COLUMNS)
    _csv(out / "judges.csv", sorted(tables.judges, key=_row_order))
    _csv(out / "criteria.csv", sorted(tables.criteria, key=_row_order))  # stable: rubric order
    decided = _decided(out, tables, manifest)
    tiers = metrics.group_summary(tables.runs)
    best = metrics.frontier(tiers)
    if decided:
        said = tier_decisions(decided)
        for row in tiers:
            row["decision"] = said.get(str(row.get("tier")), "")
    summary = {
        "experiment": out.name,
        "runs": len(tables.runs),
        "outcomes": dict(Counter(r["outcome"] for r in tables.runs)),
        "simulated": any(bool(r.get("simulated")) for r in tables.runs),
        "agent_cost_usd": math.fsum(float(r["cost_usd"] or 0) for r in tables.runs),
        "judge_cost_usd": math.fsum(float(r.get("judge_cost_usd") or 0) for r in tables.runs),
        "reward_hacks": sum(
            1 for r in tables.runs if int(float(r.get("integrity_findings") or 0)) > 0
        ),
        "tiers": tiers,
        "frontier": {"tier": best[0], "cop": best[1]} if best else None,
        "partial": tables.partial,
        "warnings": tables.warnings,
        "excluded": tables.excluded,  # runs not counted: outside the design, a share; twice
    }
    for key, name in ((models.MODEL_KEY, "model"), (models.AGENT_KEY, "agent")):
        if len(models.values(tables.runs, key)) > 1:  # an axis: per value, and side by side
            summary[f"{name}_tiers"] = metrics.group_summary(tables.runs, (key, "tier"))
            summary[f"{name}s"] = models.comparison(tables.runs, key)
    if decided:
        summary["decisions"] = decided
    results = statistical_results(tables)
    write_json(out / "summary.json", _jsonable(summary))
    write_json(out / "statistical_results.json", _jsonable(results))
    if manifest is not None:
        write_json(out / "manifest.json", manifest)
    chosen = builtin_reports.WRITERS if writers is None else writers
    for name, writer in chosen.items():
        if name in formats:  # each its own copy: what one writer changes, no other sees
            copied = copy.deepcopy((summary, results, tiers))
            writer(ReportInput(out, tables, *copied))
    return summary


def _decided(out: Path, tables: Tables, manifest: dict[str, Any] | None) -> list[DecisionRow]:
    """subtests.csv (with a decision column under `--scylla-stop=decided`) and decisions.csv;
    the decisions."""
    stop = (manifest or {}).get("stop")
    decided = stored(stop)
    subtests = metrics.group_summary(tables.runs, SUBTEST_KEYS)
    _csv(
        out / "subtests.csv",
        with_decisions(subtests, decided) if decided else subtests,
        [*SUBTEST_COLUMNS, "decision"] if decided else SUBTEST_COLUMNS,
    )
    if isinstance(stop, dict):
        write_decisions(out, decided)
    return decided


def _row_order(row: Mapping[str, Any]) -> tuple[Any, ...]:
    """Rows in a fixed order (experiment, case, tier, subtest, run, judge), whatever order the
    runs finished in: the exports of the same runs are the same files at any worker count."""

    def whole(value: Any) -> int:
        try:
            return int(value)
        except (TypeError, ValueError):
            return 0

    return (
        str(row.get("experiment") or ""),
        str(row.get("case_id") or ""),
        tier_key(str(row.get("tier") or "")),
        str(row.get("subtest") or ""),
        whole(row.get("run_number")),
        whole(row.get("judge_number")),
    )


def _csv(path: Path, rows: Sequence[Mapping[str, Any]], columns: list[str] | None = None) -> None:
    names = columns or (list(rows[0]) if rows else [])
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=names, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def _jsonable(value: Any) -> Any:
    """JSON has no infinity: the CoP of a tier that never passed is written as "inf"."""
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def adaptive_panel(records: list[RunRecord]) -> dict[str, Any] | None:
    """With --scylla-panel=adaptive: how often the strongest judge was asked, and what the
    judging cost per run (the saving against a full panel: `scylla compare` of the two)."""
    runs = [
        r
        for r in records
        if isinstance(r.get("panel"), dict) and r["panel"].get("mode") == "adaptive"
    ]
    if not runs:
        return None
    escalated = sum(bool(r["panel"].get("escalated")) for r in runs)
    costs = [
        float(r["judge_cost_usd"])
        for r in runs
        if isinstance(r.get("judge_cost_usd"), (int, float))
    ]
    return {
        "runs": len(runs),
        "escalated": escalated,
        "escalation_rate": escalated / len(runs),
        "judge_cost_per_run": statistics.fmean(costs) if costs else None,
    }


def judge_vs_checks(
    records: list[RunRecord],
    category: str = "functional",
    threshold: float = DEFAULT_PASS_THRESHOLD,
) -> list[dict[str, Any]]:
    """How often each judge's functional verdict contradicts the checks: over the counted runs
    that ran checks, a judge "says it works" when its `category` score reaches `threshold`;
    the checks say so when every check passed. Runs without checks or without that category
    are left out (n says how many are in)."""
    by_judge: dict[str, list[tuple[bool, bool]]] = {}
    for rec in records:
        checks = rec.get("checks") or []
        if rec.get("outcome") not in COUNTED or not checks:
            continue
        works = all(c.get("passed") for c in checks)
        for judge in rec.get("judges") or []:
            score = next(
                (
                    c.get("score")
                    for c in judge.get("categories") or []
                    if c.get("name") == category
                ),
                None,
            )
            if judge.get("valid", True) and isinstance(score, (int, float)):
                by_judge.setdefault(str(judge.get("judge_model")), []).append(
                    (score >= threshold, works)
                )
    rows = []
    for name, pairs in sorted(by_judge.items()):
        optimistic = sum(says and not works for says, works in pairs)
        pessimistic = sum(works and not says for says, works in pairs)
        rows.append(
            {
                "judge": name,
                "n": len(pairs),
                "says_works_checks_fail": optimistic,
                "says_broken_checks_pass": pessimistic,
                "contradiction_rate": (optimistic + pessimistic) / len(pairs),
            }
        )
    return rows
