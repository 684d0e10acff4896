"""The model axis (`--scylla-models=a,b`) in the results: when the runs used more than one agent
model, every tier summary is kept per model (a pooled tier row would mix the models' costs and
pass rates), and the model comparison table sets the models side by side: pass rate with its
interval, score, cost, Cost-of-Pass, each model's own frontier tier, tokens and agent time, with
the models tested against each other (Kruskal-Wallis, pairwise Mann-Whitney U, Holm)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

from pytest_scylla.results import metrics, stats

MODEL_KEY = "agent_model"


def models(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The agent models of the rows, sorted."""
    return sorted({str(r.get(MODEL_KEY)) for r in rows})


def tier_keys(rows: Sequence[dict[str, Any]]) -> tuple[str, ...]:
    """The keys a tier summary groups by: the model too, when there is more than one."""
    return (MODEL_KEY, "tier") if len(models(rows)) > 1 else ("tier",)


def _mean(rows: Sequence[dict[str, Any]], column: str) -> float | None:
    values = [float(r[column]) for r in rows if r.get(column) not in (None, "")]
    return statistics.fmean(values) if values else None


def comparison(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per model over its counted runs (empty with fewer than two models)."""
    if len(models(rows)) < 2:
        return []
    per_tier = metrics.group_summary(rows, (MODEL_KEY, "tier"))
    out = []
    for row in metrics.group_summary(rows, (MODEL_KEY,)):
        name = row[MODEL_KEY]
        counted = [r for r in rows if str(r.get(MODEL_KEY)) == name
                   and r["outcome"] in metrics.COUNTED]
        best = metrics.frontier([t for t in per_tier if t[MODEL_KEY] == name])
        out.append({MODEL_KEY: name, **{k: row[k] for k in (
            "n", "excluded", "passes", "pass_rate", "ci_low", "ci_high", "ci_method",
            "mean_score", "modal_grade", "mean_cost", "total_cost", "cop", "cases",
            "warning")},
            "frontier_tier": best[0] if best else None,
            "frontier_cop": best[1] if best else None,
            "mean_tokens": _mean(counted, "total_tokens"),
            "mean_agent_seconds": _mean(counted, "agent_duration_seconds")})
    return out


def tests(rows: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The models against each other on score, pass and cost (None with fewer than two)."""
    names = models(rows)
    if len(names) < 2:
        return None
    counted = [r for r in rows if r["outcome"] in metrics.COUNTED]
    out: dict[str, Any] = {"omnibus": [], "pairwise": []}
    for metric in ("score", "passed", "cost_usd"):
        groups = {m: sorted(float(r[metric]) for r in counted if str(r.get(MODEL_KEY)) == m
                            and r.get(metric) not in (None, "")) for m in names}
        out["omnibus"].append({"metric": metric, **stats.kruskal(groups)})
        out["pairwise"] += [{"metric": metric, **row} for row in stats.pairwise(groups, names)]
    return out


def frontiers(tier_rows: Sequence[dict[str, Any]]) -> dict[str, tuple[str, float] | None]:
    """Each model's frontier (its tier of lowest finite Cost-of-Pass), from per-model rows."""
    found: dict[str, tuple[str, float] | None] = {}
    for name in sorted({str(r.get(MODEL_KEY)) for r in tier_rows}):
        found[name] = metrics.frontier([r for r in tier_rows if str(r.get(MODEL_KEY)) == name])
    return found


def fmt_cost(value: float | None) -> str:
    if value is None:
        return "-"
    return "∞" if math.isinf(value) else f"${value:.4f}"
