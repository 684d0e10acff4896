"""Cost-of-Pass with a bootstrap interval: a group's (each tier of the session's report, from
`metrics.group_summary`) and the change a factor makes (`component_effects`).

Both resample the runs within each cell (a bootstrap stratified by cell: one case's runs of one
arm, or of one subtest of a tier), 2,000 resamples with a fixed seed, and give the 2.5 and 97.5
percentiles. Zero passes: a side that never passed has no finite Cost-of-Pass, so it gets no
interval, and a change of it no number (its note says which side). A resample in which a side
passes nowhere counts as an infinite Cost-of-Pass, and an interval end that falls on one is
left open (None: no bound); `inf` and `nan` are never given.

- A group's CoP is pooled, as `stats.cop` gives it: its mean cost per run over its pass rate,
  i.e. each cell weighted by its runs. Where the resamples do not vary (one run per cell, or
  every cell's runs alike) it gets no interval rather than one of zero width.
- A factor's Δ CoP compares two sides (the arms with the factor, those without), each side's
  CoP the mean cost over the pass rate, each the mean over the side's cells, so runs spread
  unequally over cases or arms weigh as the design meant."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy

from pytest_scylla.results.stats import cop, cop_draws

RESAMPLES = 2000
SEED = 20261129
Cell = tuple[str, ...]  # (case, arm) for a factor; a run's design cell for a group
METHOD = "bootstrap of the runs within each case"
GROUP_CELL = ("experiment", "agent", "agent_model", "case_id", "tier", "subtest")


@dataclass(frozen=True)
class Draws:
    """Each cell's runs, observed mean cost and pass rate, and their bootstrap resamples."""

    runs: Mapping[Cell, int]
    cost: Mapping[Cell, float]
    rate: Mapping[Cell, float]
    cost_draws: Mapping[Cell, numpy.ndarray]
    rate_draws: Mapping[Cell, numpy.ndarray]


@dataclass(frozen=True)
class Delta:
    value: float | None
    low: float | None
    high: float | None
    note: str = ""


def draws(cells: Mapping[Cell, tuple[Sequence[float | None], Sequence[bool]]]) -> Draws:
    """The resamples of every cell (its runs' costs, None where unknown, and passes)."""
    rng = numpy.random.default_rng(SEED)
    runs, cost, rate, cost_draws, rate_draws = {}, {}, {}, {}, {}
    for cell in sorted(cells):
        costs = numpy.array([math.nan if c is None else c for c in cells[cell][0]], float)
        passes = numpy.array(cells[cell][1], float)
        pick = rng.integers(0, len(passes), size=(RESAMPLES, len(passes)))
        runs[cell] = len(passes)
        rate[cell], rate_draws[cell] = float(passes.mean()), passes[pick].mean(axis=1)
        if numpy.isnan(costs).all():
            continue
        cost[cell] = float(numpy.nanmean(costs))
        with numpy.errstate(invalid="ignore"):
            sums, known = numpy.nansum(costs[pick], axis=1), (~numpy.isnan(costs[pick])).sum(1)
            cost_draws[cell] = numpy.where(known > 0, sums / numpy.maximum(known, 1), cost[cell])
    return Draws(runs, cost, rate, cost_draws, rate_draws)


def group(runs: Iterable[Mapping[str, Any]]) -> tuple[float | None, float | None]:
    """The 95 % interval of a group's pooled Cost-of-Pass (its counted runs; an unknown cost
    counts as 0, as in `metrics`), stratified by the runs' design cells (`GROUP_CELL`).
    (None, None) when no run passed, or when the resamples do not vary (one run per cell, or
    each cell's runs alike in cost and outcome); high None when open."""
    cells: dict[Cell, tuple[list[float | None], list[bool]]] = {}
    for r in runs:
        costs, passes = cells.setdefault(tuple(str(r.get(k) or "") for k in GROUP_CELL), ([], []))
        costs.append(float(r.get("cost_usd") or 0))
        passes.append(bool(r.get("passed")))
    if not any(any(p) for _, p in cells.values()):
        return None, None
    low, high = _percentiles(_side(draws(cells), sorted(cells), weighted=True))
    if low is not None and high is not None and math.isclose(low, high, rel_tol=1e-9):
        return None, None  # the resamples do not vary: they say nothing of the uncertainty
    return low, high


def shown(row: Mapping[str, Any]) -> str:
    """A group's interval as the tier tables show it (a `metrics.group_summary` row): "no pass"
    when it has no finite CoP, "≥ $low" when the upper end is open, "-" when the resamples do
    not vary."""
    if row.get("n") and not row.get("passes"):
        return "no pass"
    low, high = row.get("cop_low"), row.get("cop_high")
    if low is None:
        return "-"
    return f"≥ ${low:.4f}" if high is None else f"[${low:.4f}, ${high:.4f}]"


def delta(found: Draws, with_: Sequence[Cell], without: Sequence[Cell]) -> Delta:
    """Cost-of-Pass with the cells `with_` minus without them (`without`), with its interval."""
    sides = [[c for c in side if c in found.cost] for side in (with_, without)]
    if not all(sides):
        return Delta(None, None, None)
    rates = [sum(found.rate[c] for c in side) / len(side) for side in sides]
    if not all(rates):
        which = " and ".join(
            w for w, r in zip(("with it", "without it"), rates, strict=True) if not r
        )
        return Delta(None, None, None, f"Δ CoP: no pass {which}, so no finite Cost-of-Pass")
    costs = [sum(found.cost[c] for c in side) / len(side) for side in sides]
    cops = [cop(c, r) for c, r in zip(costs, rates, strict=True)]
    resampled = [_side(found, side) for side in sides]
    with numpy.errstate(invalid="ignore"):
        diff = resampled[0] - resampled[1]  # both sides passing nowhere: no difference (nan)
    return Delta(cops[0] - cops[1], *_percentiles(diff))


def _percentiles(values: numpy.ndarray) -> tuple[float | None, float | None]:
    """The 2.5 and 97.5 percentiles of the resamples' values (nan left out); an end that is
    infinite, or no value at all, is None."""
    kept = numpy.sort(values[~numpy.isnan(values)])
    if not kept.size:
        return None, None
    low, high = (float(kept[int(q * (kept.size - 1))]) for q in (0.025, 0.975))
    return (low if math.isfinite(low) else None, high if math.isfinite(high) else None)


def _side(found: Draws, side: Sequence[Cell], weighted: bool = False) -> numpy.ndarray:
    """Each resample's Cost-of-Pass of the cells `side` (inf where they pass nowhere): the
    cells' mean cost over their mean pass rate, weighted by their runs when `weighted`."""
    weight = {c: found.runs[c] if weighted else 1 for c in side}
    total = sum(weight.values())
    cost = sum(found.cost_draws[c] * weight[c] for c in side) / total
    rate = sum(found.rate_draws[c] * weight[c] for c in side) / total
    return numpy.asarray(cop_draws(cost, rate))
