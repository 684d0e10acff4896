"""What each component of an ablated configuration is worth (`scylla ablate report`): its effect
on pass rate, score, cost, tokens and duration, with intervals, its change of Cost-of-Pass, and
a verdict in words.

Leave-one-out designs compare the `full` arm with the arm without the factor: the difference of
pass rates with Newcombe's interval and Fisher's exact test, the other measures by Welch's
interval. Plackett-Burman designs estimate every factor's main effect at once: a logistic
regression of pass on the factors (its average marginal effect, in pass-rate points), a linear
one for the measures. p-values are Holm-adjusted over the factors. A factor without a
detectable effect is told the runs per arm that would detect the observed difference (80 %
power, two-sided 5 % shared among the factors)."""

from __future__ import annotations

import json
import math
import statistics
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_scylla.results.component_html import HEAD, cell_text, interval_text, measure_text, page
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


@dataclass
class Effect:
    factor: str
    n_with: int
    n_without: int
    pass_with: float
    pass_without: float
    delta_pass: float  # with minus without, in pass-rate points (0..1)
    low: float
    high: float
    p_value: float
    deltas: dict[str, float] = field(default_factory=dict)  # MEASURES: with minus without
    delta_cop: float | None = None
    p_adjusted: float = 1.0
    verdict: str = ""
    needed_n: int | None = None
    note: str = ""


def load_design(path: Path) -> Design:
    """A plan's design; a ValueError names the file when it is not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        arms = {str(k)[:2]: frozenset(v) for k, v in data["arms"].items()}
        design = Design(data["design"], str(data["configuration"]), tuple(data["factors"]), arms)
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
    """Every factor's effect, from the experiment's run rows (`runs.csv`)."""
    from statsmodels.stats.multitest import multipletests

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
    found = (
        _leave_one_out(rows, design)
        if design.kind == "leave-one-out"
        else _regression(rows, design)
    )
    if found:
        adjusted = multipletests([e.p_value for e in found], method="holm")[1]
        for effect, p in zip(found, adjusted, strict=True):
            effect.p_adjusted = float(p)
            _verdict(effect, ALPHA / len(found))
    return found


def _kept(row: Mapping[str, Any], design: Design) -> frozenset[str]:
    return design.arms[str(row["subtest"])[:2]]


def _leave_one_out(rows: Sequence[Mapping[str, Any]], design: Design) -> list[Effect]:
    every = frozenset(design.factors)
    full = [r for r in rows if _kept(r, design) == every]
    found = []
    for factor in design.factors:
        without = [r for r in rows if _kept(r, design) == every - {factor}]
        if full and without:
            effect = _contrast(factor, full, without)
            _interaction(effect, rows, design)
            found.append(effect)
    return found


def _contrast(
    factor: str, with_: Sequence[Mapping[str, Any]], without: Sequence[Mapping[str, Any]]
) -> Effect:
    """Two groups of runs: the difference of pass rates and of each measure."""
    from scipy.stats import fisher_exact, ttest_ind
    from statsmodels.stats.proportion import confint_proportions_2indep

    a = sum(r["outcome"] == "pass" for r in with_)
    b = sum(r["outcome"] == "pass" for r in without)
    n1, n2 = len(with_), len(without)
    low, high = confint_proportions_2indep(a, n1, b, n2, method="newcomb")
    p = fisher_exact([[a, n1 - a], [b, n2 - b]])[1]
    effect = Effect(factor, n1, n2, a / n1, b / n2, a / n1 - b / n2, low, high, float(p))
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
    effect.delta_cop = _cop(with_) - _cop(without)
    return effect


def _interaction(effect: Effect, rows: Sequence[Mapping[str, Any]], design: Design) -> None:
    """With add-one arms: the factor alone against nothing; a sign that differs from the
    leave-one-out contrast's means the factor interacts with the others."""
    alone = [r for r in rows if _kept(r, design) == {effect.factor}]
    none = [r for r in rows if not _kept(r, design)]
    if not alone or not none:
        return
    added = _contrast(effect.factor, alone, none)
    if added.delta_pass * effect.delta_pass < 0 and min(added.p_value, effect.p_value) < ALPHA:
        effect.note = (
            f"interacts with others: alone {added.delta_pass:+.0%} against nothing, "
            f"{effect.delta_pass:+.0%} left out of everything"
        )


def _regression(rows: Sequence[Mapping[str, Any]], design: Design) -> list[Effect]:
    """A two-level design's main effects: logistic for pass, linear for the measures."""
    import numpy
    import statsmodels.api as sm

    if len(rows) <= len(design.factors) + 1:
        return []
    x = numpy.array([[f in _kept(r, design) for f in design.factors] for r in rows], float)
    y = numpy.array([r["outcome"] == "pass" for r in rows], float)
    exog = sm.add_constant(x, has_constant="add")
    margins = _pass_margins(y, exog)
    fits = {  # the measures' main effects, with robust (HC3) intervals
        m: sm.OLS(numpy.array([_number(r.get(m)) or 0.0 for r in rows]), exog).fit(cov_type="HC3")
        for m in MEASURES
    }
    found = []
    for i, factor in enumerate(design.factors):
        with_ = [r for r, keep in zip(rows, x[:, i], strict=True) if keep]
        without = [r for r, keep in zip(rows, x[:, i], strict=True) if not keep]
        effect = _contrast(factor, with_, without)
        effect.delta_pass, effect.low, effect.high, effect.p_value = margins[i]
        for measure, fit in fits.items():
            effect.deltas[measure] = float(fit.params[i + 1])
            low, high = fit.conf_int()[i + 1]
            effect.deltas[f"{measure}_low"], effect.deltas[f"{measure}_high"] = low, high
        found.append(effect)
    return found


def _pass_margins(y: Any, exog: Any) -> list[tuple[float, float, float, float]]:
    """Each factor's average marginal effect on pass: (effect, low, high, p); a linear
    probability model (robust errors) where the logistic one does not converge."""
    import warnings

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
            return found
    except Exception:  # perfect separation, a singular matrix: the linear model still answers
        pass
    linear = sm.OLS(y, exog).fit(cov_type="HC3")
    ci = linear.conf_int()[1:]
    return [
        (float(e), float(lo), float(hi), float(p))
        for e, (lo, hi), p in zip(linear.params[1:], ci, linear.pvalues[1:], strict=True)
    ]


def _verdict(effect: Effect, alpha: float) -> None:
    """helps / hurts at the Holm-adjusted level; else no detectable effect, with the runs per
    arm that would detect the observed difference at `alpha` (Bonferroni's share of it)."""
    from statsmodels.stats.power import NormalIndPower
    from statsmodels.stats.proportion import proportion_effectsize

    if effect.p_adjusted < ALPHA:
        effect.verdict = "helps" if effect.delta_pass > 0 else "hurts"
        return
    effect.verdict = "no effect detectable at this n"
    p1 = min(max(effect.pass_with, 0.0), 1.0)
    p2 = min(max(effect.pass_with - effect.delta_pass, 0.0), 1.0)
    size = abs(float(proportion_effectsize(p1, p2)))
    if size > 0:
        with warnings.catch_warnings():  # a size too small to solve for: no number, no noise
            warnings.simplefilter("ignore")
            n = NormalIndPower().solve_power(effect_size=size, alpha=alpha, power=0.8, ratio=1.0)
        n = float(n[0] if isinstance(n, list | tuple) else n)  # an array of one at times
        effect.needed_n = math.ceil(n) if math.isfinite(n) else None


COLUMNS = (
    "factor",
    "verdict",
    "n_with",
    "n_without",
    "pass_with",
    "pass_without",
    "delta_pass",
    "low",
    "high",
    "p_adjusted",
    *(f"delta_{m}{end}" for m in MEASURES for end in ("", "_low", "_high")),
    "delta_cop",
    "needed_n",
    "note",
)


def rows_of(found: Sequence[Effect]) -> list[dict[str, Any]]:
    """One row per factor, largest effect on pass first (the CSV's and the tables' order)."""
    out = []
    for e in sorted(found, key=lambda e: -e.delta_pass):
        row: dict[str, Any] = {k: getattr(e, k) for k in COLUMNS if hasattr(e, k)}
        row.update({f"delta_{k}": v for k, v in e.deltas.items()})
        out.append({k: row.get(k) for k in COLUMNS})
    return out


def write_csv(path: Path, found: Sequence[Effect]) -> None:
    import csv

    with path.open("w", newline="", encoding="utf-8") as out:
        writer = csv.DictWriter(out, fieldnames=list(COLUMNS))
        writer.writeheader()
        writer.writerows(rows_of(found))


def write_outputs(folder: Path, found: Sequence[Effect], design: Design) -> list[Path]:
    """components.csv, components.md and components.html in `folder`; the paths written."""
    written = [folder / f"components.{ext}" for ext in ("csv", "md", "html")]
    write_csv(written[0], found)
    written[1].write_text(markdown(found, design), encoding="utf-8")
    written[2].write_text(page(rows_of(found), title(design)), encoding="utf-8")
    return written


def title(design: Design) -> str:
    """The tables' heading: the design and the configuration it ablated."""
    return f"Which components earn their cost ({design.kind}, configuration {design.configuration})"


def markdown(found: Sequence[Effect], design: Design) -> str:
    """The table for a pull-request comment."""
    lines = [f"### {title(design)}", "", "| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    for r in rows_of(found):
        cells = [
            f"`{r['factor']}`",
            r["verdict"] + (f" ({r['note']})" if r["note"] else ""),
            f"{cell_text('pass_with', r['pass_with'])} / "
            f"{cell_text('pass_without', r['pass_without'])}",
            interval_text(r),
            *(
                measure_text(r, key)
                for key in ("p_adjusted", "delta_cost_usd", "delta_cop", "delta_total_tokens")
            ),
            cell_text("needed_n", r["needed_n"]),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def terminal(found: Sequence[Effect]) -> list[str]:
    width = max([9, *(len(e.factor) for e in found)])
    lines = [
        f"{'component':<{width}}  {'Δ pass [95% CI]':<22}{'p':>7}  {'Δ cost/run':>11}"
        f"{'Δ CoP':>10}  verdict"
    ]
    for r in rows_of(found):
        needed = f" (about {r['needed_n']} runs per arm would)" if r["needed_n"] else ""
        cost, cop, p = (cell_text(k, r[k]) for k in ("delta_cost_usd", "delta_cop", "p_adjusted"))
        lines.append(
            f"{r['factor']:<{width}}  {interval_text(r):<22}{p:>7}"
            f"  {cost:>11}{cop:>10}  {r['verdict']}{needed}"
            + (f"; {r['note']}" if r["note"] else "")
        )
    return lines
