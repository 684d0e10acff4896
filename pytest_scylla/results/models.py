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
from typing import Any

from pytest_scylla.core.outcomes import COUNTED
from pytest_scylla.results import metrics, stats

MODEL_KEY = "agent_model"
AGENT_KEY = "agent"
AXES = (AGENT_KEY, MODEL_KEY)  # the agent CLI, then the model: what an experiment may vary
NAMES = {AGENT_KEY: "agent", MODEL_KEY: "model"}  # an axis as a column and filter is named


def values(rows: Sequence[Mapping[str, Any]], key: str = MODEL_KEY) -> list[str]:
    """The distinct values of `key` in the rows (unknown ones left out), sorted."""
    return sorted({str(r[key]) for r in rows if r.get(key) not in (None, "")})


def models(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The agent models of the rows, sorted."""
    return values(rows, MODEL_KEY)


def axes(rows: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """The axes the rows vary along (more than one agent CLI, more than one model)."""
    return tuple(key for key in AXES if len(values(rows, key)) > 1)


def tier_keys(rows: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """The keys a tier summary groups by: each axis the runs vary along, then the tier."""
    return (*axes(rows), "tier")


def _mean(rows: Sequence[Mapping[str, Any]], column: str) -> float | None:
    values_ = [float(r[column]) for r in rows if r.get(column) not in (None, "")]
    return statistics.fmean(values_) if values_ else None


def comparison(rows: Sequence[Mapping[str, Any]], key: str = MODEL_KEY) -> list[dict[str, Any]]:
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


def significance(rows: Sequence[Mapping[str, Any]], key: str = MODEL_KEY) -> dict[str, Any] | None:
    """The values of `key` against each other on score, pass and cost (None with fewer than
    two)."""
    names = values(rows, key)
    if len(names) < 2:
        return None
    counted = [r for r in rows if r["outcome"] in COUNTED]
    out: dict[str, Any] = {"omnibus": [], "pairwise": []}
    for metric in ("score", "passed", "cost_usd"):
        groups = {
            m: sorted(
                float(r[metric])
                for r in counted
                if str(r.get(key)) == m and r.get(metric) not in (None, "")
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
