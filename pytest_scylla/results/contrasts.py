"""A factor's main effect on pass rate as a contrast of arm means within each case, its test and
its interval (`component_effects`).

Per case, each arm's pass rate is the mean of its counted runs; a factor's effect in the case is
a contrast of those arm means: in a leave-one-out design the full arm minus the arm without the
factor, in a two-level design the least-squares main effect over the arms the case ran (with
every arm of an orthogonal design: the mean with the factor minus the mean without it). The
effect reported is the mean over the cases where it is estimable, so runs spread unequally over
cases or arms cannot make one. The test permutes the outcomes of each case's runs among the
arms of the contrast (a stratified permutation test: exact for leave-one-out; for a two-level
design exact when no factor acts, conservative when others do), drawn as multivariate
hypergeometric pass counts. With `m` factors tested, Bonferroni: p is `m` times the
permutation p, and the interval is the effect ± the permutation null's critical value at
`alpha / m`, so it excludes 0 exactly when the verdict is helps or hurts. Which factors the arms
run cannot tell apart is `aliases`; the runs per arm that would detect an effect, `needed_runs`,
is the power of the same test (exact, by the hypergeometric law)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy

SEED = 20261129  # the permutations are drawn from a fixed seed: a report is reproducible
POWER = 0.8
CAP = 10_000


@dataclass(frozen=True)
class Cells:
    """One case's counted runs per arm: their number and their passes."""

    runs: Mapping[str, int]
    passes: Mapping[str, int]

    def rate(self, arm: str) -> float:
        return self.passes[arm] / self.runs[arm]


@dataclass(frozen=True)
class Contrast:
    """A factor's effect (mean over the cases that estimate it) and each case's, the arms'
    weights per case, and its permutation test."""

    effect: float
    by_case: Mapping[str, float]
    weights: Mapping[str, Mapping[str, float]]  # case -> arm -> weight of its mean
    p: float
    null: numpy.ndarray  # |effect| under the permutations, for the interval


def aliases(arms: Sequence[frozenset[str]], factors: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """The factors the arms in `arms` cannot estimate, each with the others (and "the
    constant") it is aliased with: those sharing a direction of the design matrix's null
    space with it. Empty when the arms estimate every factor."""
    x = _matrix(arms, factors)
    _, s, vt = numpy.linalg.svd(x)
    rank = int((s > 1e-9 * max(1.0, s.max() if s.size else 1.0)).sum())
    null = vt[rank:]
    if not null.size:
        return {}
    names = ("the constant", *factors)
    share = null.T @ null  # the projection onto the null space
    found = {}
    for i, factor in enumerate(factors, 1):
        if share[i, i] > 1e-9:
            found[factor] = tuple(
                names[j] for j in range(len(names)) if j != i and abs(share[i, j]) > 1e-9
            )
    return found


def _matrix(arms: Sequence[frozenset[str]], factors: Sequence[str]) -> numpy.ndarray:
    return numpy.array([[1.0] + [float(f in kept) for f in factors] for kept in arms])


def main_effect_weights(
    arms: Mapping[str, frozenset[str]], factors: Sequence[str], factor: str
) -> dict[str, float] | None:
    """The weights of the arm means whose sum is `factor`'s least-squares main effect over
    `arms` (arm -> kept factors); None when those arms cannot estimate it."""
    names = sorted(arms)
    if factor in aliases([arms[a] for a in names], factors):
        return None
    rows = numpy.linalg.pinv(_matrix([arms[a] for a in names], factors))
    row = rows[1 + list(factors).index(factor)]
    return {a: float(w) for a, w in zip(names, row, strict=True)}  # zeros too: one permutation


Drawn = dict[tuple[str, tuple[str, ...]], numpy.ndarray]


def contrast(
    cases: Mapping[str, Cells],
    weights: Mapping[str, Mapping[str, float]],
    permutations: int,
    rng: numpy.random.Generator,
    shared: Drawn | None = None,
) -> Contrast:
    """The effect with `weights` (case -> arm -> weight) over the cases that have them, and its
    stratified permutation p (two-sided, Monte Carlo with `permutations` draws). Contrasts
    over the same arms of a case share their permutations through `shared` (a two-level
    design's factors: one joint permutation distribution)."""
    shared = {} if shared is None else shared
    by_case = {
        case: sum(w * cases[case].rate(arm) for arm, w in weights[case].items()) for case in weights
    }
    effect = sum(by_case.values()) / len(by_case)
    drawn = numpy.zeros(permutations)
    for case, arms in weights.items():
        names = sorted(arms)
        if (case, tuple(names)) not in shared:
            sizes = numpy.array([cases[case].runs[a] for a in names])
            passes = sum(cases[case].passes[a] for a in names)
            counts = rng.multivariate_hypergeometric(sizes, passes, size=permutations)
            shared[case, tuple(names)] = counts / sizes
        drawn += shared[case, tuple(names)] @ numpy.array([arms[a] for a in names])
    null = numpy.sort(numpy.round(numpy.abs(drawn / len(weights)), 12))[::-1]
    beyond = int((null >= size(effect)).sum())  # ties (to 12 digits) count as beyond
    return Contrast(effect, by_case, weights, (1 + beyond) / (1 + permutations), null)


def size(effect: float) -> float:
    """|effect| as the test compares it with the permutations' (to 12 digits)."""
    return round(abs(effect), 12)


def permutations_for(tests: int, alpha: float) -> int:
    """Enough permutations that the Bonferroni level `alpha / tests` is 40 of them."""
    return max(4000, math.ceil(40 * tests / alpha))


def half_width(found: Contrast, level: float) -> float:
    """The permutation null's critical value at `level`: the effect ± it excludes 0 exactly
    when the permutation p is below `level` (inf when the draws are too few for it)."""
    allowed = math.floor(level * (1 + len(found.null))) - 1  # the draws past it a rejection allows
    return float(found.null[allowed]) if 0 <= allowed < len(found.null) else math.inf


def needed_runs(
    rate_with: float, rate_without: float, arms_per_side: int, cases: int, level: float, now: int
) -> tuple[int | None, str]:
    """The runs per arm (in each case) at which the permutation test at `level` finds a true
    difference `rate_with - rate_without` with 80 % power (equal runs per arm; the test of the
    runs on each side, pooled over cases), never below `now + 1`; (None, words) past CAP."""
    side = arms_per_side * cases

    def enough(k: int) -> bool:
        return power(rate_with, rate_without, side * k, level) >= POWER

    if now >= CAP or not enough(CAP):
        return None, f"over {CAP:,} runs per arm would"
    low, high = now, max(now + 1, min(CAP, _normal_guess(rate_with, rate_without, level) // side))
    while not enough(high):
        low, high = high, min(CAP, high * 2)
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if enough(mid) else (mid, high)
    return high, ""


def _normal_guess(rate_with: float, rate_without: float, level: float) -> int:
    """The runs per side the normal limit of the test asks for: where to start looking."""
    from scipy.stats import norm

    mean = (rate_with + rate_without) / 2
    spread = abs(rate_with - rate_without)
    if spread == 0:
        return CAP
    z = norm.isf(level / 2) * math.sqrt(2 * mean * (1 - mean)) + norm.isf(1 - POWER) * math.sqrt(
        rate_with * (1 - rate_with) + rate_without * (1 - rate_without)
    )
    return max(1, int((z / spread) ** 2))


EXACT = 400  # runs per side up to which the power is summed exactly


def power(rate_with: float, rate_without: float, n: int, level: float) -> float:
    """The chance that the two-sided conditional (hypergeometric) test of `n` runs on each
    side, at `level`, rejects when they pass at these rates: summed exactly over the binomial
    outcomes up to EXACT runs per side, the normal limit of the same test beyond."""
    from scipy.special import gammaln
    from scipy.stats import binom, norm

    if n > EXACT:
        mean = (rate_with + rate_without) / 2
        null = math.sqrt(2 * mean * (1 - mean) / n)
        spread = math.sqrt((rate_with * (1 - rate_with) + rate_without * (1 - rate_without)) / n)
        if spread == 0:
            return float(rate_with != rate_without)
        edge = norm.isf(level / 2) * null
        gap = rate_with - rate_without
        return float(norm.sf((edge - gap) / spread) + norm.cdf((-edge - gap) / spread))
    a = numpy.arange(n + 1)[:, None]
    k = numpy.arange(2 * n + 1)[None, :]
    valid = (a <= k) & (k - a <= n)

    def choose(top: Any, pick: Any) -> Any:
        return gammaln(top + 1) - gammaln(pick + 1) - gammaln(top - pick + 1)

    with numpy.errstate(invalid="ignore"):
        log = choose(n, a) + choose(n, numpy.where(valid, k - a, 0)) - choose(2 * n, k)
    pmf = numpy.exp(numpy.where(valid, log, -numpy.inf))
    cdf = numpy.cumsum(pmf, axis=0)
    near, far = numpy.minimum(a, k - a), numpy.maximum(a, k - a)
    cols = numpy.broadcast_to(k, near.shape)
    lower = numpy.where(near >= 0, cdf[numpy.clip(near, 0, n), cols], 0.0)
    upper = numpy.where(far >= 1, 1 - cdf[numpy.clip(far - 1, 0, n), cols], 1.0)
    reject = valid & (lower + upper < level * (1 - 1e-9))
    b = numpy.arange(n + 1)
    hits = reject[a, a + b[None, :]]  # a passes with it, b without: reject?
    outcome = binom.pmf(a[:, 0], n, rate_with)[:, None] * binom.pmf(b, n, rate_without)[None, :]
    return float((outcome * hits).sum())
