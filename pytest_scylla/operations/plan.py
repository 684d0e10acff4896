"""`--scylla-plan` (and `scylla plan`): before anything is spent, how many runs the selection
has, how many are already stored in the experiment folder, and what the rest should cost and
take — estimated from stored history (this folder and its sibling experiment folders) of the
same model, at the finest level that has data: case x tier, case, tier, everything."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from pytest_scylla.core.outcomes import Outcome
from pytest_scylla.core.record import RunRecord, stored_records
from pytest_scylla.core.tiers import tier_key
from pytest_scylla.results.inputs import ReportInputError
from pytest_scylla.results.tables import read_records

Sample = tuple[float, float]  # (dollars incl. judges, seconds)
Pool = dict[tuple[Any, int, Any], list[Sample]]  # (model, level, its key): samples


def history(out: Path, simulated: bool) -> list[RunRecord]:
    """Finished runs (not infra errors) of this folder and its siblings, real or simulated as
    asked (a simulated run says nothing about a real run's cost)."""
    folders = {out.resolve()} if out.is_dir() else set()
    if out.parent.is_dir():
        folders |= {p.resolve() for p in out.parent.iterdir() if p.is_dir()}
    found = []
    for folder in sorted(folders):
        try:
            records = read_records(folder)
        except (ReportInputError, OSError, ValueError):
            continue
        found += [
            r
            for r in records
            if r.get("outcome") not in (None, Outcome.INFRA_ERROR)
            and bool(r.get("simulated")) == simulated
            and r.get("timings")
        ]
    return found


def _sample(rec: RunRecord) -> Sample:
    return (
        float(rec.get("cost_usd") or 0) + float(rec.get("judge_cost_usd") or 0),
        float((rec.get("timings") or {}).get("total_s") or 0),
    )


def _levels(case: Any, tier: Any) -> tuple[Any, ...]:
    """Where a run's history is pooled, finest first: case x tier, case, tier, everything."""
    return (case, tier), case, tier, None


def estimate(
    specs: list[Any],
    out: Path,
    model: str,
    oracle: str | None,
    fresh: bool,
    rejudge: bool,
    workers: int,
    budget: float | None,
) -> list[str]:
    """The plan's lines. `specs` are the collected items' RunSpecs (case, subtest, run, and
    model on a model axis); a real run is estimated from its own model's history only."""
    stored = {} if fresh else stored_records(out)
    past = history(out, simulated=oracle is not None)
    pooled = _pool(past, model, oracle)
    rows, unknown_cap = _tier_rows(specs, stored, pooled, model, oracle, rejudge)
    total = {
        k: sum(r[k] for r in rows.values())
        for k in ("runs", "stored", "cost", "seconds", "unknown")
    }
    return [
        *_table(rows, oracle, workers),
        _total_line(total, out, rejudge, workers, len(past)),
        *_unknown_and_budget_lines(total, unknown_cap, budget),
    ]


def _pool(past: list[RunRecord], model: str, oracle: str | None) -> Pool:
    """The history's samples by (model, level, its key): a real run's history is its model's
    (oracle runs: one pool)."""
    pooled: Pool = defaultdict(list)
    for rec in past:
        used = None if oracle else rec.get("model") or model
        for level, place in enumerate(_levels(rec.get("case"), rec.get("tier"))):
            pooled[used, level, place].append(_sample(rec))
    return pooled


def _tier_rows(
    specs: list[Any],
    stored: dict[str, RunRecord],
    pooled: Pool,
    model: str,
    oracle: str | None,
    rejudge: bool,
) -> tuple[dict[str, dict[str, Any]], float]:
    """Per tier, its runs, how many are stored, and the estimated cost and time of the rest;
    and the summed cost limits of the runs without history."""
    rows: dict[str, dict[str, Any]] = {}
    unknown_cap = 0.0
    for spec in specs:
        key = spec.key.folder
        tier = spec.subtest.tier
        row = rows.setdefault(
            tier, {"runs": 0, "stored": 0, "cost": 0.0, "seconds": 0.0, "unknown": 0}
        )
        row["runs"] += 1
        old = stored.get(key)
        if old is not None and old.get("outcome") != Outcome.INFRA_ERROR and not rejudge:
            row["stored"] += 1
            continue
        if rejudge and old is None:
            continue  # nothing to re-score
        used = None if oracle else spec.model or spec.subtest.model or model
        samples = next(
            (
                pooled[used, level, place]
                for level, place in enumerate(_levels(spec.case.id, tier))
                if pooled.get((used, level, place))
            ),
            None,
        )
        if samples is None:
            row["unknown"] += 1
            unknown_cap += spec.case.max_cost_usd
        else:
            _add_estimate(row, samples, old, rejudge)
    return rows, unknown_cap


def _add_estimate(
    row: dict[str, Any], samples: list[Sample], old: RunRecord | None, rejudge: bool
) -> None:
    """One run's estimated cost and time, added to its tier's row."""
    if rejudge:  # judges only: the stored run's judge cost is the best guess
        row["cost"] += float((old or {}).get("judge_cost_usd") or 0)
        row["seconds"] += float((old or {}).get("judge_duration_seconds") or 0)
    else:
        row["cost"] += statistics.fmean(c for c, _ in samples)
        row["seconds"] += statistics.fmean(t for _, t in samples)


def _table(rows: dict[str, dict[str, Any]], oracle: str | None, workers: int) -> list[str]:
    """The plan's title and its table: a line per tier."""
    lines = [
        "scylla plan (nothing has run)"
        + (" -- SIMULATED MODEL: oracle runs cost nothing real" if oracle else ""),
        f"{'tier':<6}{'runs':>6}{'stored':>8}{'to run':>8}{'est. cost':>12}{'est. time':>11}",
    ]
    for tier in sorted(rows, key=tier_key):
        r = rows[tier]
        lines.append(
            f"{tier:<6}{r['runs']:>6}{r['stored']:>8}{r['runs'] - r['stored']:>8}"
            f"{_dollars(r):>12}{_time(r['seconds'] / workers):>11}"
        )
    return lines


def _total_line(
    total: dict[str, Any], out: Path, rejudge: bool, workers: int, history_runs: int
) -> str:
    """The totals: runs, stored ones, and the estimate for those with history."""
    to_run = total["runs"] - total["stored"]
    known = to_run - total["unknown"]
    return (
        f"total: {total['runs']} runs, {total['stored']} stored in {out}"
        f"{' (reused)' if total['stored'] else ''}, {to_run} to "
        f"{'re-score' if rejudge else 'run'}: "
        + (
            f"about ${total['cost']:.2f} and {_time(total['seconds'] / workers)} "
            f"for {known} on {workers} worker(s), from {history_runs} stored runs of "
            "history"
            if known
            else "no estimate (no stored runs of history)"
        )
    )


def _unknown_and_budget_lines(
    total: dict[str, Any], unknown_cap: float, budget: float | None
) -> list[str]:
    """What the runs without history may cost at most, and whether the estimate fits the
    budget."""
    lines = []
    if total["unknown"]:
        lines.append(
            f"no history for {total['unknown']} runs (? above): not estimated; "
            f"their per-run limits (max_cost_usd) add up to ${unknown_cap:.2f} of "
            "agent spend at most, judges not included"
        )
    if budget is not None:
        verdict = (
            "fits"
            if total["cost"] + (unknown_cap if total["unknown"] else 0) <= budget
            else "may not fit: later runs would be skipped"
        )
        lines.append(
            f"budget ${budget:.2f}: the estimate {verdict}"
            + (" (the runs without history counted at their limits)" if total["unknown"] else "")
        )
    return lines


def _dollars(row: dict[str, Any]) -> str:
    """A tier's estimated cost; `?` for what has no history (never a made-up $0.00)."""
    if not row["unknown"]:
        return f"${row['cost']:.2f}"
    return "?" if row["unknown"] == row["runs"] - row["stored"] else f"${row['cost']:.2f} + ?"


def _time(seconds: float) -> str:
    if not math.isfinite(seconds) or seconds <= 0:
        return "-"
    minutes = seconds / 60
    return (
        f"{minutes / 60:.1f} h"
        if minutes >= 90
        else f"{minutes:.0f} min"
        if minutes >= 1
        else f"{seconds:.0f} s"
    )
