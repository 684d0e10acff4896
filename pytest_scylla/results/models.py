"""The axes an experiment varies in the results: the model (`--scylla-models=a,b`) and the agent
CLI (`--scylla-agent`, experiments of several CLIs merged by `scylla report A B`). When the runs
used more than one of either, every tier summary is kept per value (a pooled tier row would mix
their costs and pass rates), and a comparison table sets them side by side: pass rate with its
interval, score, cost, Cost-of-Pass, each one's own frontier tier, tokens and agent time, tested
against each other (Kruskal-Wallis, pairwise Mann-Whitney U, Holm)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pytest_scylla.core.outcomes import COUNTED
from pytest_scylla.results import metrics, stats
from pytest_scylla.results.rows import RunRow

Axis = Literal["agent", "agent_model"]  # a column of `RunRow` an experiment may vary
MODEL_KEY: Axis = "agent_model"
AGENT_KEY: Axis = "agent"
AXES: tuple[Axis, ...] = (AGENT_KEY, MODEL_KEY)  # the agent CLI, then the model
NAMES: dict[str, str] = {AGENT_KEY: "agent", MODEL_KEY: "model"}  # an axis's column and filter
Measure = Literal["score", "passed", "cost_usd"]  # what the axis's values are tested on
MEASURES: tuple[Measure, ...] = ("score", "passed", "cost_usd")


def values(rows: Sequence[Mapping[str, object]], key: Axis = MODEL_KEY) -> list[str]:
    """The distinct values of `key` in the rows (unknown ones left out), sorted."""
    return sorted({str(r[key]) for r in rows if r.get(key) not in (None, "")})


def models(rows: Sequence[Mapping[str, object]]) -> list[str]:
    """The agent models of the rows, sorted."""
    return values(rows, MODEL_KEY)


def axes(rows: Sequence[Mapping[str, object]]) -> tuple[Axis, ...]:
    """The axes the rows vary along (more than one agent CLI, more than one model)."""
    return tuple(key for key in AXES if len(values(rows, key)) > 1)


def tier_keys(rows: Sequence[Mapping[str, object]]) -> tuple[str, ...]:
    """The keys a tier summary groups by: each axis the runs vary along, then the tier."""
    return (*axes(rows), "tier")


def _mean(
    rows: Sequence[RunRow], column: Literal["total_tokens", "agent_duration_seconds"]
) -> float | None:
    values_ = [float(v) for r in rows if (v := r.get(column)) is not None and v != ""]
    return statistics.fmean(values_) if values_ else None


def comparison(rows: Sequence[RunRow], key: Axis = MODEL_KEY) -> list[dict[str, Any]]:
    """One row per value of `key` (a model, or an agent CLI) over its counted runs (empty with
    fewer than two)."""
    if len(values(rows, key)) < 2:
        return []
    per_tier: Sequence[Mapping[str, Any]] = metrics.group_summary(rows, (key, "tier"))
    summary: Sequence[Mapping[str, Any]] = metrics.group_summary(rows, (key,))
    out = []
    for row in summary:
        name = row[key]
        counted = [r for r in rows if str(r.get(key)) == name and r["outcome"] in COUNTED]
        best = metrics.frontier([t for t in per_tier if t[key] == name])
        out.append(
            {
                key: name,
                **{
                    k: row[k]
                    for k in (
                        "n",
                        "excluded",
                        "passes",
                        "pass_rate",
                        "ci_low",
                        "ci_high",
                        "ci_method",
                        "mean_score",
                        "modal_grade",
                        "mean_cost",
                        "total_cost",
                        "cop",
                        "cases",
                        "warning",
                    )
                },
                "frontier_tier": best[0] if best else None,
                "frontier_cop": best[1] if best else None,
                "mean_tokens": _mean(counted, "total_tokens"),
                "mean_agent_seconds": _mean(counted, "agent_duration_seconds"),
            }
        )
    return out


def significance(rows: Sequence[RunRow], key: Axis = MODEL_KEY) -> dict[str, Any] | None:
    """The values of `key` against each other on score, pass and cost (None with fewer than
    two)."""
    names = values(rows, key)
    if len(names) < 2:
        return None
    counted = [r for r in rows if r["outcome"] in COUNTED]
    out: dict[str, Any] = {"omnibus": [], "pairwise": []}
    for metric in MEASURES:
        groups = {
            m: sorted(
                float(v)
                for r in counted
                if str(r.get(key)) == m and (v := r.get(metric)) is not None
            )
            for m in names
        }
        out["omnibus"].append({"metric": metric, **stats.kruskal(groups)})
        out["pairwise"] += [{"metric": metric, **row} for row in stats.pairwise(groups, names)]
    return out


def frontiers(
    tier_rows: Sequence[Mapping[str, Any]], keys: Sequence[str]
) -> dict[tuple[str, ...], tuple[str, float] | None]:
    """Each axis combination's frontier (its tier of lowest finite Cost-of-Pass)."""
    found: dict[tuple[str, ...], tuple[str, float] | None] = {}
    for group in sorted({tuple(str(r.get(k)) for k in keys) for r in tier_rows}):
        found[group] = metrics.frontier(
            [r for r in tier_rows if tuple(str(r.get(k)) for k in keys) == group]
        )
    return found


def pooled(summary: dict[str, Any]) -> str:
    """` (all models pooled)` and the like, for a tier table over an experiment's axes."""
    what = [w for w in ("models", "agents") if summary.get(w)]
    return f" (all {' and '.join(what)} pooled)" if what else ""


def fmt_cost(value: float | None) -> str:
    if value is None:
        return "-"
    return "∞" if math.isinf(value) else f"${value:.4f}"
