"""What each component of an ablated configuration is worth (`scylla ablate report`): its effect
on pass rate, score, cost, tokens and duration, with intervals, its change of Cost-of-Pass, and
a verdict in words.

Leave-one-out designs compare the `full` arm with the arm without the factor: the difference of
pass rates with Newcombe's interval and Fisher's exact test, the other measures by Welch's
interval. Plackett-Burman designs estimate every factor's main effect at once: a logistic
regression of pass on the factors (its average marginal effect, in pass-rate points), a linear
one for the measures. p-values are Holm-adjusted over the factors tested. A factor without a
detectable effect is told the runs per arm that would detect the observed difference (80 %
power, two-sided 5 % shared among the factors). Where the runs support no estimate (every run
passed, one run on a side, separation, too few runs or arms for the regression) a factor has
none, and its verdict says why (`effect_limits`); the tables are `component_tables`'."""

from __future__ import annotations

import json
import math
import statistics
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_scylla.results import effect_limits as limits
from pytest_scylla.results.metrics import COUNTED

ALPHA = 0.05
MEASURES = ("score", "cost_usd", "total_tokens", "duration_seconds")


@dataclass(frozen=True)
class Design:
    """The arms of a plan (`design.json` beside its tier file), by subtest number."""

    kind: str  # leave-one-out | plackett-burman
    configuration: str
    factors: tuple[str, ...]
    arms: Mapping[str, frozenset[str]]  # "03" -> the factors the arm keeps
    labels: Mapping[str, str] = field(default_factory=dict, compare=False)  # "03" -> its name


@dataclass
class Effect:
    factor: str
    n_with: int
    n_without: int
    pass_with: float | None  # None: no counted run on that side
    pass_without: float | None
    delta_pass: float | None  # with minus without, in pass-rate points (0..1); None: the
    low: float | None  # runs support no estimate, the verdict says why
    high: float | None
    p_value: float | None
    deltas: dict[str, float] = field(default_factory=dict)  # MEASURES: with minus without
    delta_cop: float | None = None
    p_adjusted: float | None = None
    verdict: str = ""
    needed_n: int | None = None
    needed_note: str = ""  # why needed_n is None: no difference observed, or over the cap
    note: str = ""


def load_design(path: Path) -> Design:
    """A plan's design; a ValueError names the file when it is not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        arms = {str(k)[:2]: frozenset(v) for k, v in data["arms"].items()}
        labels = {str(k)[:2]: str(k) for k in data["arms"]}
        design = Design(
            data["design"], str(data["configuration"]), tuple(data["factors"]), arms, labels
        )
        problem = _problem(design)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        problem = str(exc)
    if problem:
        raise ValueError(f"{path}: not a design written by `scylla ablate plan` ({problem})")
    return design


def _problem(design: Design) -> str:
    """What makes a read design unusable, or ""."""
    if design.kind not in ("leave-one-out", "plackett-burman"):
        return f"design {design.kind!r}: expected leave-one-out or plackett-burman"
    if not all(isinstance(f, str) for f in design.factors):
        return "factors: expected names"
    unknown = sorted(str(f) for kept in design.arms.values() for f in kept - set(design.factors))
    return f"arms keep factors not in factors: {', '.join(unknown)}" if unknown else ""


def design_beside(folder: Path) -> Path:
    """The design.json beside the tier file the experiment in `folder` ran."""
    return _tier_source(folder).parent / "design.json"


def _tier_source(folder: Path) -> Path:
    """The T0 tier file the experiment in `folder` ran, when it is a project's own."""
    from pytest_scylla.core.record import read_dict

    if not (folder / "manifest.json").is_file():
        raise ValueError(f"{folder}: no manifest.json, so no experiment folder (--scylla-out)")
    sources = read_dict(folder / "manifest.json").get("tier_sources")
    source = sources.get("T0") if isinstance(sources, dict) else None
    if not isinstance(source, str) or not source or source.startswith("packaged"):
        raise ValueError("the experiment did not run a plan's tiers; name its design with --design")
    return Path(source)


def for_experiment(
    folder: Path, runs: Sequence[Mapping[str, Any]]
) -> tuple[list[Effect], Design] | None:
    """The effects of the plan the experiment in `folder` ran (its T0 tier file written by
    `scylla ablate plan`, the design.json beside it), for the session's reports; None when it
    ran no plan, the design cannot be read or no arm has counted runs to compare."""
    from pytest_scylla.formats.ablation_plan import HEADER

    try:
        tier = _tier_source(folder)
        with tier.open(encoding="utf-8", errors="replace") as text:
            if text.read(len(HEADER)) != HEADER:  # a project's own tiers, not a plan's
                return None
        design = load_design(tier.parent / "design.json")
    except (OSError, ValueError):
        return None
    try:
        found = effects(runs, design)
    except Exception:  # odd runs' statistics: the section is left out, the reports stay whole
        return None
    return (found, design) if found else None


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _cop(rows: Sequence[Mapping[str, Any]]) -> float:
    costs = [c for r in rows if (c := _number(r.get("cost_usd"))) is not None]
    passed = sum(r["outcome"] == "pass" for r in rows)
    return (statistics.fmean(costs) / (passed / len(rows))) if passed and costs else math.inf


def effects(runs: Sequence[Mapping[str, Any]], design: Design) -> list[Effect]:
    """Every factor's effect, from the experiment's run rows (`runs.csv`); a factor whose
    effect the runs cannot support has none, its verdict saying why (`effect_limits`). No
    factor at all when no arm has a counted run."""
    rows = [
        r
        for r in runs  # the plan's tier only: an experiment may hold other tiers' runs too
        if r["outcome"] in COUNTED
        and r.get("tier") == "T0"
        and str(r["subtest"])[:2] in design.arms
    ]
    conditions = sorted({f"{r.get('agent') or '?'}/{r.get('agent_model') or '?'}" for r in rows})
    if len(conditions) > 1:  # one component's worth differs by CLI and model: never pooled
        raise ValueError(
            f"the arms ran under {len(conditions)} agent/model conditions "
            f"({', '.join(conditions)}); choose one with --agent and --model"
        )
    if not rows:
        return []
    found = (
        _leave_one_out(rows, design)
        if design.kind == "leave-one-out"
        else _regression(rows, design)
    )
    _adjust(found)
    return found


def _adjust(found: Sequence[Effect]) -> None:
    """Holm over the factors tested: those with counted runs on both sides (one whose runs
    support no estimate stands in the family as p = 1; one with a side never run, as when only
    some arms were run, was not tested and is not in it), then each factor's verdict."""
    from statsmodels.stats.multitest import multipletests

    family = [e for e in found if e.n_with and e.n_without]
    if family:
        given = [1.0 if e.p_value is None else e.p_value for e in family]
        for effect, p in zip(family, multipletests(given, method="holm")[1], strict=True):
            if effect.p_value is not None:
                effect.p_adjusted = float(p)
    for effect in found:
        _verdict(effect, ALPHA / max(1, len(family)))


def _kept(row: Mapping[str, Any], design: Design) -> frozenset[str]:
    return design.arms[str(row["subtest"])[:2]]


def _leave_one_out(rows: Sequence[Mapping[str, Any]], design: Design) -> list[Effect]:
    every = frozenset(design.factors)
    full = [r for r in rows if _kept(r, design) == every]
    found = []
    for factor in design.factors:
        without = [r for r in rows if _kept(r, design) == every - {factor}]
        effect = _contrast(factor, full, without)
        if not full:
            effect.verdict = limits.NO_FULL
        _interaction(effect, rows, design)
        found.append(effect)
    return found


def _rate(rows: Sequence[Mapping[str, Any]]) -> float | None:
    return sum(r["outcome"] == "pass" for r in rows) / len(rows) if rows else None


def _sides(
    factor: str,
    with_: Sequence[Mapping[str, Any]],
    without: Sequence[Mapping[str, Any]],
    where: str = "both arms",
) -> Effect:
    """Two groups of runs: their sizes, pass rates and difference of Cost-of-Pass, no effect
    yet; the verdict says why none can be estimated, or is ""."""
    effect = Effect(factor, len(with_), len(without), _rate(with_), _rate(without), *(None,) * 4)
    effect.verdict = limits.pass_problem(with_, without, where)
    cop = _cop(with_) - _cop(without) if with_ and without else math.nan
    effect.delta_cop = cop if not math.isnan(cop) else None  # both infinite: no difference
    return effect


def _contrast(
    factor: str, with_: Sequence[Mapping[str, Any]], without: Sequence[Mapping[str, Any]]
) -> Effect:
    """Two groups of runs: the difference of pass rates (none when the runs cannot support
    one: the verdict says why) and of each measure."""
    from scipy.stats import fisher_exact
    from statsmodels.stats.proportion import confint_proportions_2indep

    effect = _sides(factor, with_, without)
    if not effect.verdict:
        n1, n2 = len(with_), len(without)
        a = sum(r["outcome"] == "pass" for r in with_)
        b = sum(r["outcome"] == "pass" for r in without)
        low, high = confint_proportions_2indep(a, n1, b, n2, method="newcomb")
        effect.delta_pass, effect.low, effect.high = a / n1 - b / n2, float(low), float(high)
        effect.p_value = float(fisher_exact([[a, n1 - a], [b, n2 - b]])[1])
    _measures(effect, with_, without)
    return effect


def _measures(
    effect: Effect, with_: Sequence[Mapping[str, Any]], without: Sequence[Mapping[str, Any]]
) -> None:
    """Each measure's difference of means, with Welch's interval where both groups vary."""
    from scipy.stats import ttest_ind

    for measure in MEASURES:
        x = [v for r in with_ if (v := _number(r.get(measure))) is not None]
        y = [v for r in without if (v := _number(r.get(measure))) is not None]
        if len(x) > 1 and len(y) > 1:
            effect.deltas[measure] = statistics.fmean(x) - statistics.fmean(y)
            if len(set(x + y)) > 1:
                with warnings.catch_warnings():  # an arm of equal values: scipy warns, yet the
                    warnings.simplefilter("ignore", RuntimeWarning)  # interval is the other's
                    ci = ttest_ind(x, y, equal_var=False).confidence_interval()
                if math.isfinite(ci.low) and math.isfinite(ci.high):
                    effect.deltas[f"{measure}_low"] = float(ci.low)
                    effect.deltas[f"{measure}_high"] = float(ci.high)


def _interaction(effect: Effect, rows: Sequence[Mapping[str, Any]], design: Design) -> None:
    """With add-one arms: the factor alone against nothing; a sign that differs from the
    leave-one-out contrast's means the factor interacts with the others."""
    alone = [r for r in rows if _kept(r, design) == {effect.factor}]
    none = [r for r in rows if not _kept(r, design)]
    if not alone or not none or effect.delta_pass is None or effect.p_value is None:
        return
    added = _contrast(effect.factor, alone, none)
    if added.delta_pass is None or added.p_value is None:
        return
    if added.delta_pass * effect.delta_pass < 0 and min(added.p_value, effect.p_value) < ALPHA:
        effect.note = (
            f"interacts with others: alone {added.delta_pass:+.0%} against nothing, "
            f"{effect.delta_pass:+.0%} left out of everything"
        )


def _regression(rows: Sequence[Mapping[str, Any]], design: Design) -> list[Effect]:
    """A two-level design's main effects: logistic for pass, linear for the measures; with
    too few runs for the model, each factor's runs with and without it, and no effect."""
    import numpy
    import statsmodels.api as sm

    x = numpy.array([[f in _kept(r, design) for f in design.factors] for r in rows], float)
    groups = [
        (
            [r for r, k in zip(rows, x[:, i], strict=True) if k],
            [r for r, k in zip(rows, x[:, i], strict=True) if not k],
        )
        for i in range(len(design.factors))
    ]
    found = [_sides(f, *g, where="every arm") for f, g in zip(design.factors, groups, strict=True)]
    exog = sm.add_constant(x, has_constant="add")
    problem = limits.rank_problem(
        exog, len({str(r["subtest"])[:2] for r in rows})
    ) or limits.regression_problem(len(rows), len(design.factors))
    if problem:
        for effect in found:
            effect.verdict, effect.delta_cop = problem, None
        return found
    _measure_fits(found, rows, x)
    if any(e.verdict for e in found):  # every run passed, or every one failed
        return found
    y = numpy.array([r["outcome"] == "pass" for r in rows], float)
    margins, how = _pass_margins(y, exog)
    for i, effect in enumerate(found):
        delta, low, high, p = margins[i]
        effect.verdict = how if how == limits.SEPARATED else limits.margin_problem(low, high, p)
        if not effect.verdict:
            effect.delta_pass, effect.low, effect.high, effect.p_value = delta, low, high, p
            effect.note = how
    return found


def _measure_fits(found: Sequence[Effect], rows: Sequence[Mapping[str, Any]], x: Any) -> None:
    """The measures' main effects, with robust (HC3) intervals, over the runs that have the
    measure (when they are enough for the model and it varies)."""
    import numpy
    import statsmodels.api as sm

    for measure in MEASURES:
        values = [_number(r.get(measure)) for r in rows]
        keep = [v is not None for v in values]
        y = numpy.array([v for v in values if v is not None])
        if len(y) < 2 * x.shape[1] + 2 or len(set(y)) < 2:
            continue
        exog = sm.add_constant(x[numpy.array(keep)], has_constant="add")
        if numpy.linalg.matrix_rank(exog) < exog.shape[1]:
            continue
        fit = sm.OLS(y, exog).fit(cov_type="HC3")
        for i, effect in enumerate(found):
            low, high = fit.conf_int()[i + 1]
            if math.isfinite(low) and math.isfinite(high):
                effect.deltas[measure] = float(fit.params[i + 1])
                effect.deltas[f"{measure}_low"], effect.deltas[f"{measure}_high"] = low, high


def _pass_margins(y: Any, exog: Any) -> tuple[list[tuple[float, float, float, float]], str]:
    """Each factor's average marginal effect on pass: (effect, low, high, p), and how it was
    found: "" by the logistic model; by a linear probability model (robust errors) where the
    logistic one does not converge (separation), said in the words returned; `SEPARATED` when
    the factors predict every outcome exactly (no interval then)."""
    import statsmodels.api as sm

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # non-convergence is checked below
            fit = sm.Logit(y, exog).fit(disp=False, maxiter=200)
        margeff = fit.get_margeff()
        found = [
            (float(e), float(lo), float(hi), float(p))
            for e, (lo, hi), p in zip(
                margeff.margeff, margeff.conf_int(), margeff.pvalues, strict=True
            )
        ]
        if fit.mle_retvals.get("converged") and all(abs(e) <= 1 for e, *_ in found):
            return found, ""
    except Exception:  # perfect separation, a singular matrix: the linear model still answers
        pass
    linear = sm.OLS(y, exog).fit(cov_type="HC3")
    if float(linear.ssr) < 1e-9:
        return [(0.0, 0.0, 0.0, 1.0)] * (exog.shape[1] - 1), limits.SEPARATED
    ci = linear.conf_int()[1:]
    margins = [
        (float(e), float(lo), float(hi), float(p))
        for e, (lo, hi), p in zip(linear.params[1:], ci, linear.pvalues[1:], strict=True)
    ]
    return margins, "linear model: the logistic one separates"


def _verdict(effect: Effect, alpha: float) -> None:
    """helps / hurts at the Holm-adjusted level; else no detectable effect, with the runs per
    arm that would detect the observed difference at `alpha` (Bonferroni's share of it), or
    the words when there is no such number. An effect the runs cannot support keeps the
    verdict that says why."""
    if effect.delta_pass is None or effect.pass_with is None:
        return
    if effect.p_adjusted is not None and effect.p_adjusted < ALPHA:
        effect.verdict = "helps" if effect.delta_pass > 0 else "hurts"
        return
    effect.verdict = "no effect detectable at this n"
    effect.needed_n, effect.needed_note = limits.needed_runs(
        effect.delta_pass, effect.pass_with, alpha
    )
