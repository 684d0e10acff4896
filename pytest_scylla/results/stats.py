"""Statistics between tiers and between judges: pure functions over rows, using scipy,
statsmodels and krippendorff. Conventions: ../shared/reference/statistics.md.

Every result carries its n; tests that cannot run on the data (fewer than two groups, a group of
fewer than two runs, all values equal) say so in `note` instead of returning NaN surprises.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

ALPHA = 0.05
ALPHA_DECIMALS = 2


def cop(mean_cost: float, pass_rate: float) -> float:
    """Cost-of-Pass: expected dollars per correct solution (the mean cost of a run over the pass
    rate); infinite when nothing passed. Its one home: the tier tables (`metrics`), `scylla
    compare` and the bootstrap of `cop_interval` (`cop_draws`) all use it."""
    return math.inf if pass_rate <= 0 else mean_cost / pass_rate


def cop_draws(mean_costs: Any, pass_rates: Any) -> Any:
    """`cop` of each element of two numpy arrays (a bootstrap's resamples): inf where the pass
    rate is not above 0."""
    import numpy

    with numpy.errstate(divide="ignore", invalid="ignore"):
        safe = numpy.where(pass_rates > 0, pass_rates, 1.0)
        return numpy.where(pass_rates > 0, mean_costs / safe, numpy.inf)


def _finite(value: float) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None


def kruskal(groups: Mapping[str, Sequence[float]]) -> dict[str, Any]:
    """Kruskal-Wallis H over the groups (tie-corrected), or why it cannot be computed (scipy,
    a slow first import, only when it can)."""
    usable = {k: list(v) for k, v in groups.items() if len(v) > 0}
    result: dict[str, Any] = {
        "test": "kruskal-wallis",
        "groups": len(usable),
        "n": {k: len(v) for k, v in usable.items()},
        "h": None,
        "p": None,
        "significant": False,
        "note": "",
    }
    values = [x for v in usable.values() for x in v]
    if len(usable) < 2:
        result["note"] = "fewer than two groups"
    elif len(set(values)) < 2:
        result["note"] = "all values are equal: no differences to test"
    elif all(len(v) < 2 for v in usable.values()):
        result["note"] = "one run per group: too few to compare"
    else:
        from scipy.stats import kruskal as scipy_kruskal

        h, p = scipy_kruskal(*usable.values())
        result.update(h=_finite(h), p=_finite(p), significant=bool(p < ALPHA))
    return result


def cliffs_delta(a: Sequence[float], b: Sequence[float]) -> float:
    """P(a > b) - P(a < b) over all pairs."""
    import numpy as np

    return _delta(np.asarray(a, float), np.sort(np.asarray(b, float)))


def _delta(a: Any, sorted_b: Any) -> float:
    """Cliff's delta of the arrays `a` and `sorted_b`, each of `a` against all of `sorted_b` by
    binary search: O(n log n), not the n_a x n_b sign matrix (the same counts exactly; 12,000
    runs made the matrix 800 s in the bootstrap)."""
    import numpy as np

    greater = int(np.searchsorted(sorted_b, a, side="left").sum())  # pairs with x > y
    less = len(sorted_b) * len(a) - int(np.searchsorted(sorted_b, a, side="right").sum())
    return (greater - less) / (len(a) * len(sorted_b))


def cliffs_delta_ci(
    a: Sequence[float], b: Sequence[float], seed: int = 0, resamples: int = 2000
) -> tuple[float, float] | None:
    """Percentile bootstrap CI of Cliff's delta (resampling each group); None for tiny groups."""
    import numpy as np

    if len(a) < 2 or len(b) < 2:
        return None
    rng = np.random.default_rng(seed)
    xa, xb = np.sort(np.asarray(a, float)), np.sort(np.asarray(b, float))  # order-free result
    deltas = []
    for _ in range(resamples):
        ra = rng.choice(xa, size=len(xa), replace=True)
        deltas.append(_delta(ra, np.sort(rng.choice(xb, size=len(xb), replace=True))))
    low, high = np.percentile(deltas, [2.5, 97.5])
    return float(low), float(high)


def pairwise(groups: Mapping[str, Sequence[float]], order: Sequence[str]) -> list[dict[str, Any]]:
    """Each group against the previous one, and first against last: two-sided Mann-Whitney U,
    Holm-Bonferroni across the family, Cliff's delta with a bootstrap CI (scipy and
    statsmodels imported only when there is something to test)."""
    names = [g for g in order if g in groups and len(groups[g]) > 0]
    pairs = list(itertools.pairwise(names))
    if len(names) > 2:
        pairs.append((names[0], names[-1]))
    rows: list[dict[str, Any]] = []
    for first, second in pairs:
        a, b = list(groups[first]), list(groups[second])
        row: dict[str, Any] = {
            "group1": first,
            "group2": second,
            "n1": len(a),
            "n2": len(b),
            "u": None,
            "p_raw": None,
            "p_holm": None,
            "significant": False,
            "cliffs_delta": cliffs_delta(a, b),
            "cliffs_delta_ci": cliffs_delta_ci(a, b),
            "note": "",
        }
        if len(set(a) | set(b)) < 2:
            row["note"] = "all values are equal"
        else:
            from scipy.stats import mannwhitneyu

            u, p = mannwhitneyu(a, b, alternative="two-sided")
            row.update(u=_finite(u), p_raw=_finite(p))
        rows.append(row)
    tested = [r for r in rows if r["p_raw"] is not None]
    for row, (rej, p) in zip(tested, holm([r["p_raw"] for r in tested]), strict=True):
        row.update(p_holm=p, significant=rej)
    return rows


RESAMPLES = 999  # the percentile bootstrap's, for `percentile_bootstrap`
SEED = 0  # fixed: a report's intervals are the same on every rebuild


def percentile_bootstrap(
    data: tuple[Any, ...], statistic: Any, vectorized: bool = True
) -> tuple[float | None, float | None]:
    """A 95 % percentile bootstrap interval of `statistic` over `data` (scipy's `bootstrap`,
    each sample resampled on its own, RESAMPLES draws from a fixed SEED); an end that is not
    a number in the resamples is None. Every resample alike is fine (a zero-width interval is
    the caller's to refuse). The one home of that bootstrap here."""
    import warnings

    import numpy as np
    from scipy.stats import DegenerateDataWarning, bootstrap

    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateDataWarning)
        found = bootstrap(
            data,
            statistic,
            n_resamples=RESAMPLES,
            vectorized=vectorized,
            method="percentile",
            rng=np.random.default_rng(SEED),
        )
    low, high = float(found.confidence_interval.low), float(found.confidence_interval.high)
    return (None if math.isnan(low) else low), (None if math.isnan(high) else high)


def holm(pvalues: list[float], alpha: float = ALPHA) -> list[tuple[bool, float]]:
    """Holm's step-down adjustment of a family of p-values (statsmodels'): per p-value, whether
    it is rejected at family-wise `alpha` and its adjusted p. The one home of Holm here."""
    if not pvalues:
        return []
    from statsmodels.stats.multitest import multipletests

    reject, corrected, _, _ = multipletests(pvalues, alpha=alpha, method="holm")
    return [(bool(r), float(p)) for r, p in zip(reject, corrected, strict=True)]


def krippendorff_alpha(scores: Iterable[tuple[str, str, float]]) -> dict[str, Any]:
    """Interval alpha with rows = judges (coders) and columns = runs (units); a judge without a
    score for a run is missing (NaN). `scores` are (judge, run, score) triples."""
    import krippendorff
    import numpy as np

    # The package builds a coincidence matrix per unit over the value domain: with continuous
    # scores from a thousand runs that is tens of GiB. Scores are rounded to 0.01 (a judge's
    # score is a weighted sum of item points; two decimals keep every published value).
    triples = [(j, r, round(v, ALPHA_DECIMALS)) for j, r, v in scores]
    judges = sorted({j for j, _, _ in triples})
    runs = sorted({r for _, r, _ in triples})
    matrix = np.full((len(judges), len(runs)), np.nan)
    row, column = _positions(judges), _positions(runs)
    for judge, run, value in triples:
        matrix[row[judge], column[run]] = value
    result: dict[str, Any] = {
        "alpha": None,
        "judges": len(judges),
        "runs": len(runs),
        "level": "interval",
        "rounded_to": 10**-ALPHA_DECIMALS,
        "note": "",
    }
    if len(judges) < 2 or len(runs) < 2:
        result["note"] = "needs at least two judges and two runs"
    elif len({v for _, _, v in triples}) < 2:
        result["note"] = "every judge gave every run the same score: agreement is undefined"
    else:
        domain = np.unique(matrix[~np.isnan(matrix)])
        if len(runs) * len(domain) ** 2 <= LIBRARY_CELLS:
            value = krippendorff.alpha(
                reliability_data=matrix, value_domain=domain, level_of_measurement="interval"
            )
        else:
            value = interval_alpha(matrix)
        result["alpha"] = _finite(value)
    return result


# The package holds runs x values x values numbers three times over while it sums the coincidence
# matrix: 12,000 runs at 101 score values is 1 GB each. Past this many, the same alpha in closed
# form (tests/unit/results/test_stats.py checks the two agree).
LIBRARY_CELLS = 20_000_000


def interval_alpha(matrix: Any) -> float:
    """Krippendorff's interval alpha of a judges x runs matrix (NaN: missing) in O(judges x
    runs): with squared differences, a unit's coincidences reduce to its sums of values and of
    squares, Σ_(i≠j) (v_i - v_j)² = 2 (m Σv² - (Σv)²). Units with fewer than two values are not
    pairable and count for nothing, as in the package."""
    import numpy as np

    present = ~np.isnan(matrix)
    values = np.where(present, matrix, 0.0)
    m = present.sum(axis=0)
    keep = m >= 2
    m, s1, s2 = m[keep], values.sum(axis=0)[keep], (values**2).sum(axis=0)[keep]
    n = m.sum()
    observed = (2 * (m * s2 - s1**2) / (m - 1)).sum()  # n x D_o
    expected = 2 * (n * s2.sum() - s1.sum() ** 2) / (n - 1)  # n x D_e
    return float(1 - observed / expected) if expected else float("nan")


def _positions(names: Sequence[Any]) -> dict[Any, int]:
    """Each name's index (list.index is a scan: 12,000 runs made it minutes)."""
    return {name: i for i, name in enumerate(names)}


def gwet_ac2(scores: Iterable[tuple[str, str, float]]) -> dict[str, Any]:
    """Gwet's AC2 with quadratic weights over the score values (Gwet, Handbook of Inter-Rater
    Reliability, 4th ed., ch. 3), the judges as raters of the runs; a judge without a score for
    a run is missing. Unlike alpha it does not collapse when nearly every score is the same (a
    skewed panel that agrees). Scores are rounded as for alpha. The package that implements it
    (irrCAC) pins an old scipy: it is written here, and its values are checked against
    irrCAC's in tests/unit/results/test_stats.py."""
    import numpy as np

    triples = [(j, r, round(v, ALPHA_DECIMALS)) for j, r, v in scores]
    runs = sorted({r for _, r, _ in triples})
    values = sorted({v for _, _, v in triples})
    result: dict[str, Any] = {
        "ac2": None,
        "judges": len({j for j, _, _ in triples}),
        "runs": len(runs),
        "weights": "quadratic",
        "note": "",
    }
    if result["judges"] < 2 or len(runs) < 2:
        result["note"] = "needs at least two judges and two runs"
        return result
    if len(values) < 2:
        result["note"] = "every judge gave every run the same score: agreement is undefined"
        return result
    counts = np.zeros((len(runs), len(values)))  # r_ik: judges who gave run i the value k
    row, column = _positions(runs), _positions(values)
    for _, run, value in triples:
        counts[row[run], column[value]] += 1
    x = np.array(values)
    weights = 1 - (x[:, None] - x[None, :]) ** 2 / (x.max() - x.min()) ** 2
    raters = counts.sum(axis=1)  # r_i
    rated = raters >= 2  # agreement is observed on runs scored by two judges or more
    weighted = counts @ weights.T  # r*_ik
    per_run = (counts[rated] * (weighted[rated] - 1)).sum(axis=1) / (
        raters[rated] * (raters[rated] - 1)
    )
    if not per_run.size:
        result["note"] = "no run was scored by two judges"
        return result
    agreement = float(per_run.mean())
    shares = (counts[raters >= 1] / raters[raters >= 1, None]).mean(axis=0)  # pi_k
    chance = float(
        weights.sum() / (len(values) * (len(values) - 1)) * (shares * (1 - shares)).sum()
    )
    result["ac2"] = _finite((agreement - chance) / (1 - chance))
    return result


def judge_pairs(scores: Iterable[tuple[str, str, float]]) -> list[dict[str, Any]]:
    """Spearman rho, Pearson r and mean |difference| for every pair of judges, over the runs
    both scored (scipy imported only for a pair it can correlate)."""
    by_judge: dict[str, dict[str, float]] = {}
    for judge, run, value in scores:
        by_judge.setdefault(judge, {})[run] = value
    rows = []
    for first, second in itertools.combinations(sorted(by_judge), 2):
        shared = sorted(set(by_judge[first]) & set(by_judge[second]))
        a = [by_judge[first][r] for r in shared]
        b = [by_judge[second][r] for r in shared]
        diffs = [abs(x - y) for x, y in zip(a, b, strict=True)]
        row: dict[str, Any] = {
            "judge1": first,
            "judge2": second,
            "n": len(shared),
            "spearman": None,
            "pearson": None,
            "mean_abs_diff": math.fsum(diffs) / len(diffs) if diffs else None,
            "note": "",
        }
        if len(shared) < 3 or len(set(a)) < 2 or len(set(b)) < 2:
            row["note"] = "too few runs or no variation"
        else:
            from scipy.stats import pearsonr, spearmanr

            row["spearman"] = _finite(spearmanr(a, b).statistic)
            row["pearson"] = _finite(pearsonr(a, b).statistic)
        rows.append(row)
    return rows


def pass_at_k(n: int, c: int, k: int) -> float:
    """1 - C(n-c, k) / C(n, k): chance that at least one of k runs passes."""
    if k > n:
        raise ValueError(f"k={k} exceeds n={n}")
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """C(c, k) / C(n, k): chance that all of k runs pass."""
    if k > n:
        raise ValueError(f"k={k} exceeds n={n}")
    return math.comb(c, k) / math.comb(n, k)
