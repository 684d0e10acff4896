"""The paper's result tables (its Tables 16-19) computed from the runs: tier summary, token
breakdown, latency breakdown and per-criterion scores."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_scylla.core.outcomes import COUNTED
from pytest_scylla.results import metrics
from pytest_scylla.results.rows import GroupSummary, RunRow
from pytest_scylla.results.tables import Tables

Rows = list[dict[str, Any]]  # a table of the paper's
Columns = Sequence[Mapping[str, Any]]  # rows read column by column
TOKEN_COLUMNS = ("input_tokens", "output_tokens", "cache_creation_tokens", "cache_read_tokens")


def paper_tables(tables: Tables, summary: list[GroupSummary] | None = None) -> dict[str, Rows]:
    """The paper's result tables (its Tables 16-19) computed from the runs: tier summary,
    token breakdown (mean per run), latency breakdown (mean per run) and per-criterion mean and
    sample standard deviation over every judge's category score. `summary` is the runs' tier
    summary when the caller has it already (its intervals are bootstrapped: not cheap)."""
    summary = summary if summary is not None else metrics.group_summary(tables.runs)
    by_tier: dict[str, list[RunRow]] = {}
    for row in tables.runs:
        if row["outcome"] in COUNTED:
            by_tier.setdefault(str(row["tier"]), []).append(row)
    tokens, latency = [], []
    for s in summary:
        rows = by_tier.get(s["tier"], [])
        tokens.append(_token_row(s["tier"], rows))
        latency.append(_latency_row(s["tier"], rows))
    criteria = _criterion_rows(tables.criteria)
    tiers = [
        {
            "tier": s["tier"],
            "n": s["n"],
            "pass_rate": s["pass_rate"],
            "mean_score": s["mean_score"],
            "median_score": s["median_score"],
            "grade": s["modal_grade"],
            "cop": s["cop"],
        }
        for s in summary
    ]
    return {"tiers": tiers, "tokens": tokens, "latency": latency, "criteria": criteria}


def _values(rows: Columns, column: str) -> list[float]:
    """A column's values over the runs that have it."""
    return [float(r[column]) for r in rows if r.get(column) not in (None, "")]


def _mean(rows: Columns, column: str) -> float | None:
    """The mean over the runs that have the value; None (shown "-") when none has it."""
    found = _values(rows, column)
    return statistics.fmean(found) if found else None


def _token_row(tier: Any, rows: Columns) -> dict[str, Any]:
    """A tier's token breakdown (Table 17): each kind's mean per run, and their total."""
    counts = {c: _mean(rows, c) for c in TOKEN_COLUMNS}
    known = [v for v in counts.values() if v is not None]
    return {
        "tier": tier,
        "n": len(_values(rows, "input_tokens")),
        **counts,
        "total_tokens": sum(known) if known else None,
    }


def _latency_row(tier: Any, rows: Columns) -> dict[str, Any]:
    """A tier's latency breakdown (Table 18): mean seconds per run of each phase, and the
    judges' share of the total."""
    agent, judge = _mean(rows, "agent_duration_seconds"), _mean(rows, "judge_duration_seconds")
    total = _mean(rows, "duration_seconds")
    return {
        "tier": tier,
        "n": len(_values(rows, "duration_seconds")),
        "agent_seconds": agent,
        "checks_seconds": _mean(rows, "checks_duration_seconds"),
        "judge_seconds": judge,
        "total_seconds": total,
        "ttft_seconds": _mean(rows, "ttft_seconds"),
        "judge_share": judge / total if judge is not None and total else None,
    }


def _criterion_rows(criteria: Columns) -> Rows:
    """Per-criterion score (Table 19): mean and sample sd over every judge's category score."""
    per_criterion: dict[str, list[float]] = {}
    for c in criteria:
        if c.get("criterion_score") not in (None, ""):
            per_criterion.setdefault(str(c["criterion"]), []).append(float(c["criterion_score"]))
    return [
        {
            "criterion": name,
            "mean": statistics.fmean(v),
            "sd": statistics.stdev(v) if len(v) > 1 else None,
            "n": len(v),
        }
        for name, v in per_criterion.items()
    ]
