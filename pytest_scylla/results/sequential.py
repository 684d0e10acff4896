"""Decisions that stay valid however often they are looked at (`--scylla-stop=decided`).

Each cell is compared with its reference cell run by run: run i of the cell paired with run i
of the reference. Only discordant pairs (one passed, the other not) carry evidence about which
passes more often; under "the cell passes no more often than the reference" a discordant pair
favours the cell with probability at most 1/2, so the likelihood ratio against a mixture of
alternatives (the cell wins a discordant pair with probability q, q in `Q`, equally weighted)
is an e-process: a nonnegative supermartingale under that null, looked at after every run (a
sequential sign test, as McNemar's test is a fixed-n one). Each comparison has two such
hypotheses, `better` and `worse`.

The family's error (any wrong decision, over every comparison of the session) is held at
alpha by closed testing with the mean of e-values ("e-Holm"): a hypothesis is rejected when,
for every set S of hypotheses holding it, the mean of their e-values reaches 1/alpha. That is
never weaker than Bonferroni (every e-value against |family|/alpha) and much stronger once
other comparisons are decided. By Ville's inequality the true nulls' mean stays below 1/alpha
at every run with probability 1 - alpha, so the guarantee holds whenever the decisions are
read, and stopping a decided cell changes nothing.

`equivalent` (the difference of pass rates within +-margin) is decided from the betting
confidence sequence of Waudby-Smith & Ramdas (JRSS-B 2024; hedged capital, predictable plug-in
bets) for the mean paired difference, with its own share of alpha (`EQUIVALENCE_SHARE`,
Bonferroni over the comparisons). When that share could not show equivalence within the
maximum runs even were every pair tied (`shares`: a function of the maximum, alpha, the margin
and the number of comparisons, fixed before any run), no equivalence is decided and the whole
alpha goes to `better` and `worse`. The interval reported with a decision is the same kind of
sequence at 1 - alpha for that comparison alone: its size, not the decision's test (the sign
test, sharper at a few runs, may decide while it still holds zero).
A comparison is `futile` once no plausible future brings it to the bar it faces now: the pairs
left up to the maximum discordant, and won by the side ahead, at rates FUTILITY_Z standard
errors above those seen so far (a stochastic curtailment). Stopping for futility makes fewer
decisions, never a wrong one: a stopped e-process is still an e-value (optional stopping), so
the family's guarantee is untouched; the price is power, measured by `bench/sequential.py`
(about 3 points of the differences found, for a sixth to a third fewer runs).

Everything here is a function of the outcomes in run order: the same outcomes give the same
decisions, whichever worker or session ran them."""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy

Q = (0.65, 0.8, 0.9, 0.97)  # alternatives: the cell wins a discordant pair with q
GRID = numpy.linspace(-1.0, 1.0, 801)[1:-1]  # candidate mean differences (the open interval)
CAP = 0.75  # the largest share of capital bet (c in Waudby-Smith & Ramdas)
EQUIVALENCE_SHARE = 0.1  # of alpha, for the equivalence decisions
FUTILITY_Z = 2.0  # how far above the rates seen so far a plausible future reaches


# a comparison's state: decided (better, worse or equivalent), futile, or still open
DecisionStatus = Literal["better", "worse", "equivalent", "futile", "open"]
SIDES: tuple[DecisionStatus, DecisionStatus] = ("better", "worse")  # the sign test's two nulls


@dataclass(frozen=True)
class Decision:
    status: DecisionStatus
    at: int  # the pairs it was taken at (the pairs so far while open)
    low: float  # the confidence sequence of the difference of pass rates at that point
    high: float
    runs: int = 0  # the pairs with both outcomes known so far

    @property
    def closed(self) -> bool:
        return self.status != "open"


@functools.cache
def log_e(wins: float, pairs: float) -> float:
    """The log e-value of `wins` discordant pairs won out of `pairs`, against q <= 1/2 (real
    numbers too: a plausible future's expected wins)."""
    terms = [wins * math.log(2 * q) + (pairs - wins) * math.log(2 * (1 - q)) for q in Q]
    top = max(terms)
    return top + math.log(sum(math.exp(t - top) for t in terms) / len(terms))


def _e(wins: int, pairs: int) -> float:
    return math.exp(min(log_e(wins, pairs), 700.0))


def _bets(z: numpy.ndarray, alpha: float) -> numpy.ndarray:
    """The predictable plug-in bets: each from the observations before it (the variance
    estimate of Waudby-Smith & Ramdas, started at 1/4)."""
    t = numpy.arange(1, len(z) + 1)
    means = (0.5 + numpy.cumsum(z)) / (t + 1)  # after each observation
    spread = numpy.concatenate([[0.0], numpy.cumsum((z - means) ** 2)[:-1]])
    var = (0.25 + spread) / t  # before each observation
    return numpy.sqrt(2 * math.log(2 / alpha) / (var * t * numpy.log(t + 1)))


def interval(diffs: Sequence[float], alpha: float) -> tuple[float, float]:
    """The betting confidence sequence of the mean of `diffs` (each in [-1, 1]) after the
    last one (the running intersection over all of them)."""
    if not diffs:
        return (-1.0, 1.0)
    z = (numpy.asarray(diffs, float) + 1) / 2
    mu = (GRID + 1) / 2
    bets = _bets(z, alpha)[:, None]
    step = z[:, None] - mu[None, :]
    log_up = numpy.cumsum(numpy.log1p(numpy.minimum(bets, CAP / mu) * step), axis=0)
    log_down = numpy.cumsum(numpy.log1p(-numpy.minimum(bets, CAP / (1 - mu)) * step), axis=0)
    hedged = numpy.logaddexp(log_up, log_down) + math.log(0.5)
    kept = GRID[(hedged < math.log(1 / alpha)).all(axis=0)]
    if not len(kept):  # every mean of the grid rejected: say nothing rather than (0, 0), which
        return (-1.0, 1.0)  # reads as equivalent
    return (float(kept[0]), float(kept[-1]))


def equivalence_reachable(limit: int, alpha: float, margin: float) -> bool:
    """Whether `limit` pairs could show equivalence at all (all of them tied, the best case)."""
    low, high = interval([0.0] * limit, alpha)
    return -margin < low and high < margin


def shares(alpha: float, comparisons: int, limit: int, margin: float) -> tuple[float, float]:
    """(the `better`/`worse` tests' alpha, each equivalence decision's). Equivalence gets
    `EQUIVALENCE_SHARE` of alpha, split over the comparisons, only when that much could show it
    within `limit` pairs; otherwise (a few dozen runs) it gets none and the tests the whole
    alpha. Known before any run, so the split is fixed and the guarantee holds as before."""
    eq_alpha = alpha * EQUIVALENCE_SHARE / max(1, comparisons)
    if not equivalence_reachable(limit, eq_alpha, margin):
        return alpha, 0.0
    return alpha * (1 - EQUIVALENCE_SHARE), eq_alpha


@dataclass
class _State:
    wins: int = 0  # discordant pairs the cell won
    losses: int = 0
    diffs: list[float] | None = None
    decision: Decision | None = None
    left: int = 0  # the pairs that may still come


def decide_all(
    outcomes: Mapping[str, Mapping[int, bool | None]],
    references: Mapping[str, str],
    limit: int,
    alpha: float = 0.05,
    margin: float = 0.10,
    intervals: bool = True,
) -> dict[str, Decision]:
    """Every comparison's decision. `outcomes[cell][run]`: passed or not, None for a run made
    but not counted (it pairs with nothing); a run not made yet is absent. `references[cell]`:
    the reference cell it is compared with. Runs are taken in order, one run number across
    all open comparisons at a time, and only while every open comparison's pair at that run is
    known: the decisions never depend on which run finished first. `intervals` False leaves
    the reported intervals out (-1, 1), for simulations."""
    states = {cell: _State(diffs=[]) for cell in references}
    test_alpha, eq_alpha = shares(alpha, len(states), limit, margin)
    equivalence = eq_alpha > 0
    run = 0
    while run < limit:
        run += 1
        open_ = [c for c, s in states.items() if s.decision is None]
        if not open_ or any(not _known(outcomes, c, references[c], run) for c in open_):
            run -= 1
            break
        for cell in open_:
            _add(states[cell], outcomes[cell].get(run), outcomes[references[cell]].get(run))
            states[cell].left = _left(outcomes, cell, references[cell], run, limit)
        _close(
            states,
            open_,
            run,
            limit,
            (test_alpha, eq_alpha, alpha if intervals else 0.0),
            margin,
            equivalence,
        )
    shown = alpha if intervals else 0.0
    return {cell: s.decision or _decision("open", s, run, shown) for cell, s in states.items()}


def _known(
    outcomes: Mapping[str, Mapping[int, bool | None]], cell: str, ref: str, run: int
) -> bool:
    return run in outcomes.get(cell, {}) and run in outcomes.get(ref, {})


def _left(
    outcomes: Mapping[str, Mapping[int, bool | None]], cell: str, ref: str, run: int, limit: int
) -> int:
    """The pairs that may still come after `run` (a run known to be none pairs nothing)."""
    mine, theirs = outcomes.get(cell, {}), outcomes.get(ref, {})
    return sum(
        mine.get(n, True) is not None and theirs.get(n, True) is not None
        for n in range(run + 1, limit + 1)
    )


def _add(state: _State, cell: bool | None, ref: bool | None) -> None:
    if cell is None or ref is None:
        return
    assert state.diffs is not None
    state.diffs.append(float(cell) - float(ref))
    state.wins += cell and not ref
    state.losses += ref and not cell


def _close(
    states: dict[str, _State],
    open_: list[str],
    run: int,
    limit: int,
    alphas: tuple[float, float, float],
    margin: float,
    equivalence: bool,
) -> None:
    """The decisions reached at `run`: rejections by closed testing over the family (again
    after each one, as Holm's procedure steps down), then equivalence, then futility.
    `alphas`: the tests', the equivalence's (each) and the reported intervals' levels."""
    alpha, eq_alpha, shown = alphas
    values = {}
    for cell, s in states.items():
        values[(cell, "better")] = _e(s.wins, s.wins + s.losses)
        values[(cell, "worse")] = _e(s.losses, s.wins + s.losses)
    rejected = {
        (c, s.decision.status)
        for c, s in states.items()
        if s.decision is not None and s.decision.status in SIDES
    }
    order = sorted((v, h) for h, v in values.items() if h not in rejected)
    changed = True
    while changed:
        changed = False
        for cell in (c for c in open_ if states[c].decision is None):
            side = next(
                (h for h in SIDES if _rejects((cell, h), values, order, alpha)),
                None,
            )
            if side is not None:
                states[cell].decision = _decision(side, states[cell], run, shown)
                rejected.add((cell, side))
                order = [(v, h) for v, h in order if h != (cell, side)]
                changed = True
    for cell in (c for c in open_ if states[c].decision is None):
        state = states[cell]
        if equivalence and state.diffs:
            low, high = interval(state.diffs, eq_alpha)
            if -margin < low and high < margin:
                state.decision = Decision("equivalent", run, low, high, len(state.diffs))
                continue
        # futile: no plausible future reaches today's bar, nor could tying every pair left
        # show equivalence
        if _plausible(state, _bar(order, alpha)):
            continue
        if equivalence and _can_be_equivalent(state, eq_alpha, margin):
            continue
        state.decision = _decision("futile", state, run, shown)


def _plausible(state: _State, bar: float) -> bool:
    """Whether the bar is within reach of a plausible future: the pairs left discordant at the
    rate seen so far, the leading side winning them at the upper end of what it has shown
    (FUTILITY_Z standard errors above its rate; shrunk towards one half at few pairs)."""
    assert state.diffs is not None
    lead, discordant = max(state.wins, state.losses), state.wins + state.losses
    rate = (discordant + 1) / (len(state.diffs) + 2)
    rate = min(1.0, rate + FUTILITY_Z * math.sqrt(rate * (1 - rate) / (len(state.diffs) + 2)))
    share = (lead + 1) / (discordant + 2)
    share = min(1.0, share + FUTILITY_Z * math.sqrt(share * (1 - share) / (discordant + 2)))
    more = state.left * rate
    return log_e(lead + more * share, discordant + more) >= math.log(bar)


def _can_be_equivalent(state: _State, alpha: float, margin: float) -> bool:
    assert state.diffs is not None
    low, high = interval([*state.diffs, *([0.0] * state.left)], alpha)
    return -margin < low and high < margin


def _rejects(
    hyp: tuple[str, str],
    values: Mapping[tuple[str, str], float],
    order: list[tuple[float, tuple[str, str]]],
    alpha: float,
) -> bool:
    """Closed testing with the mean of e-values: for each size m, the set holding `hyp` and the
    m - 1 smallest other e-values (`order`: the unrejected ones, smallest first; sets holding a
    rejected hypothesis are already covered) must reach m / alpha."""
    total, m = values[hyp], 1
    if total < 1 / alpha:
        return False
    for value, other in order:
        if other != hyp:
            total, m = total + value, m + 1
            if total < m / alpha:
                return False
    return True


def _bar(order: list[tuple[float, tuple[str, str]]], alpha: float) -> float:
    """The e-value one hypothesis needs now, were the others to stay as they are."""
    need, taken = 1 / alpha, 0.0
    for m, (value, _) in enumerate(order[:-1], start=2):
        taken += value
        need = max(need, m / alpha - taken)
    return need


def _decision(status: DecisionStatus, state: _State, run: int, alpha: float) -> Decision:
    """The decision with the interval at level 1 - `alpha` (none when `alpha` is 0)."""
    assert state.diffs is not None
    low, high = interval(state.diffs, alpha) if alpha else (-1.0, 1.0)
    return Decision(status, run, low, high, len(state.diffs))
