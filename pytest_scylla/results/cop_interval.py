"""The change of Cost-of-Pass a factor makes, with a bootstrap interval (`component_effects`).

A side's Cost-of-Pass (the arms with the factor, or those without it) is its mean cost per run
over its pass rate, each the mean over the side's cells (one case's runs of one arm), so runs
spread unequally over cases or arms weigh as the design meant. The interval is the 2.5 and
97.5 percentiles of the difference over bootstrap resamples of the runs within each cell (a
bootstrap stratified by case and arm, 2,000 resamples, fixed seed). Zero passes: a side without
a pass has no finite Cost-of-Pass, so no difference is given (its note says which side); a
resample in which a side passes nowhere counts as an infinite difference, and an interval end
that falls on one is left open (no number, never `inf` or `nan`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy

RESAMPLES = 2000
SEED = 20261129
Cell = tuple[str, str]  # (case, arm)


@dataclass(frozen=True)
class Draws:
    """Each cell's observed mean cost and pass rate, and their bootstrap resamples."""

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
    cost, rate, cost_draws, rate_draws = {}, {}, {}, {}
    for cell in sorted(cells):
        costs = numpy.array([math.nan if c is None else c for c in cells[cell][0]], float)
        passes = numpy.array(cells[cell][1], float)
        pick = rng.integers(0, len(passes), size=(RESAMPLES, len(passes)))
        rate[cell], rate_draws[cell] = float(passes.mean()), passes[pick].mean(axis=1)
        if numpy.isnan(costs).all():
            continue
        cost[cell] = float(numpy.nanmean(costs))
        with numpy.errstate(invalid="ignore"):
            sums, known = numpy.nansum(costs[pick], axis=1), (~numpy.isnan(costs[pick])).sum(1)
            cost_draws[cell] = numpy.where(known > 0, sums / numpy.maximum(known, 1), cost[cell])
    return Draws(cost, rate, cost_draws, rate_draws)


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
    cops = [sum(found.cost[c] for c in s) / len(s) / r for s, r in zip(sides, rates, strict=True)]
    resampled = [_side(found, side) for side in sides]
    with numpy.errstate(invalid="ignore"):
        diff = resampled[0] - resampled[1]
    diff = numpy.sort(diff[~numpy.isnan(diff)])  # both sides passing nowhere: no difference
    if not diff.size:
        return Delta(cops[0] - cops[1], None, None)
    low, high = (float(diff[int(q * (diff.size - 1))]) for q in (0.025, 0.975))
    return Delta(
        cops[0] - cops[1],
        low if math.isfinite(low) else None,
        high if math.isfinite(high) else None,
    )


def _side(found: Draws, side: Sequence[Cell]) -> numpy.ndarray:
    cost = sum(found.cost_draws[c] for c in side) / len(side)
    rate = sum(found.rate_draws[c] for c in side) / len(side)
    with numpy.errstate(divide="ignore", invalid="ignore"):
        return numpy.where(rate > 0, cost / numpy.where(rate > 0, rate, 1.0), numpy.inf)
