"""What each component of an ablated configuration is worth (`scylla ablate report`): its effect
on pass rate, score, cost, tokens and duration, with intervals, its change of Cost-of-Pass with
its interval (`cop_interval`), and a verdict in words.

The effect on pass is a contrast of arm means within each case, averaged over the cases
(`contrasts`): leave-one-out designs compare the full arm with the arm without the factor,
Plackett-Burman designs take each factor's least-squares main effect over the arms run (the mean
with the factor minus the mean without it when every arm ran). Its test permutes each case's
outcomes among the contrast's arms; Bonferroni over the factors tested gives both the verdict
and the interval (the interval excludes 0 exactly when the verdict is helps or hurts). A factor
the arms run cannot tell from others is reported with the factors it is aliased with, and no
verdict. A factor without a detectable effect is told the runs per arm at which the same test
would detect the observed difference (80 % power). The other measures: Welch's interval
(leave-one-out), a linear model with robust errors (Plackett-Burman). Where the runs support no
estimate (every run passed, one run on a side, too few runs for the design) a factor has none,
and its verdict says why (`effect_limits`); the tables are `component_tables`'."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy

from pytest_scylla.core.outcomes import COUNTED, Outcome
from pytest_scylla.results import contrasts, cop_interval, effect_measures
from pytest_scylla.results import effect_limits as limits
from pytest_scylla.results.plan_design import Design as Design  # and for its readers:
from pytest_scylla.results.plan_design import design_beside as design_beside
from pytest_scylla.results.plan_design import load_design as load_design
from pytest_scylla.results.plan_design import tier_source
from pytest_scylla.results.stats import ALPHA

MEASURES = effect_measures.MEASURES  # the tables' columns
Row = Mapping[str, Any]


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
    delta_cop: float | None = None  # None: a side without a pass (the note says which)
    delta_cop_low: float | None = None  # None: that end of the interval is open
    delta_cop_high: float | None = None
    by_case: dict[str, float] = field(default_factory=dict)  # case -> the effect in it
    p_adjusted: float | None = None
    verdict: str = ""
    needed_n: int | None = None
    needed_note: str = ""  # why needed_n is None: no difference observed, or over the cap
    note: str = ""


def for_experiment(
    folder: Path, runs: Sequence[Mapping[str, Any]]
) -> tuple[list[Effect], Design] | None:
    """The effects of the plan the experiment in `folder` ran (its T0 tier file written by
    `scylla ablate plan`, the design.json beside it), for the session's reports; None when it
    ran no plan, the design cannot be read or no arm has counted runs to compare."""
    from pytest_scylla.formats.ablation_plan import HEADER

    try:
        tier = tier_source(folder)
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


def _arm(row: Row) -> str:
    return str(row["subtest"])[:2]


def _case(row: Row) -> str:
    return str(row.get("case_id") or row.get("case") or "?")


def effects(runs: Sequence[Row], design: Design, needed: bool = True) -> list[Effect]:
    """Every factor's effect, from the experiment's run rows (`runs.csv`); a factor whose
    effect the runs cannot support has none, its verdict saying why (`effect_limits`). No
    factor at all when no arm has a counted run. `needed=False` leaves out the runs per arm
    that would detect an effect (a simulation's shortcut)."""
    rows = [
        r
        for r in runs  # the plan's tier only: an experiment may hold other tiers' runs too
        if r["outcome"] in COUNTED and r.get("tier") == "T0" and _arm(r) in design.arms
    ]
    conditions = sorted({f"{r.get('agent') or '?'}/{r.get('agent_model') or '?'}" for r in rows})
    if len(conditions) > 1:  # one component's worth differs by CLI and model: never pooled
        raise ValueError(
            f"the arms ran under {len(conditions)} agent/model conditions "
            f"({', '.join(conditions)}); choose one with --agent and --model"
        )
    if not rows:
        return []
    runs_of = _runs_of(rows)
    found = [_sides(f, runs_of, design) for f in design.factors]
    cells = _cells(runs_of)
    weights = _weights(cells, design)
    for effect in found:
        if effect.factor not in weights:
            why = _not_estimable(effect.factor, runs_of, design)
            effect.verdict = why if why == limits.NO_FULL else effect.verdict or why
    if design.kind != "leave-one-out":
        problem = limits.regression_problem(len(rows), len(design.factors))
        for effect in found:
            effect.verdict = problem or effect.verdict
        aliased = contrasts.aliases([design.arms[a] for a in runs_of], design.factors)
        fitted = [e for e in found if e.factor not in aliased]  # the others' measures still fit
        x = [[e.factor in design.arms[_arm(r)] for e in fitted] for r in rows]
        effect_measures.fits(fitted, rows, x)
    else:
        for effect in found:
            full, without = _loo_arms(design, effect.factor)
            effect_measures.welch(effect, runs_of.get(full, []), runs_of.get(without, []))
    _test(found, weights, cells, design, needed)
    _cop(found, runs_of, design)
    return found


def _runs_of(rows: Sequence[Row]) -> dict[str, list[Row]]:
    """Arm -> its counted runs."""
    out: dict[str, list[Row]] = {}
    for row in rows:
        out.setdefault(_arm(row), []).append(row)
    return out


def _cells(runs_of: Mapping[str, Sequence[Row]]) -> dict[str, contrasts.Cells]:
    """Case -> its runs and passes per arm."""
    runs: dict[str, dict[str, int]] = {}
    passes: dict[str, dict[str, int]] = {}
    for arm, rows in runs_of.items():
        for row in rows:
            case = _case(row)
            runs.setdefault(case, {}).setdefault(arm, 0)
            passes.setdefault(case, {}).setdefault(arm, 0)
            runs[case][arm] += 1
            passes[case][arm] += row["outcome"] == Outcome.PASS
    return {case: contrasts.Cells(runs[case], passes[case]) for case in sorted(runs)}


def _loo_arms(design: Design, factor: str) -> tuple[str, str]:
    """The full arm and the arm without `factor` ("" where the design has none)."""
    every = frozenset(design.factors)
    full = next((a for a, k in sorted(design.arms.items()) if k == every), "")
    without = next((a for a, k in sorted(design.arms.items()) if k == every - {factor}), "")
    return full, without


def _weights(
    cells: Mapping[str, contrasts.Cells], design: Design
) -> dict[str, dict[str, dict[str, float]]]:
    """Factor -> case -> arm -> the weight of the arm's mean in the factor's effect in that
    case, for the factors some case estimates (`contrasts`)."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for case, cell in cells.items():
        ran = {a: design.arms[a] for a in cell.runs}
        for factor in design.factors:
            if design.kind == "leave-one-out":
                full, without = _loo_arms(design, factor)
                found = {full: 1.0, without: -1.0} if {full, without} <= set(ran) else None
            else:
                found = contrasts.main_effect_weights(ran, design.factors, factor)
            if found:
                out.setdefault(factor, {})[case] = found
    return out


def _not_estimable(factor: str, runs_of: Mapping[str, Sequence[Row]], design: Design) -> str:
    """Why no case's arms estimate `factor`: the arms it needs were not run, or it is aliased
    (with which factors), in the arms run or in the design itself."""
    if design.kind == "leave-one-out":
        full, _ = _loo_arms(design, factor)
        return limits.NO_FULL if full not in runs_of else limits.NO_CASE
    planned = contrasts.aliases(list(design.arms.values()), design.factors)
    if factor in planned:
        return limits.aliased(planned[factor], in_design=True)
    ran = contrasts.aliases([design.arms[a] for a in runs_of], design.factors)
    return limits.aliased(ran.get(factor, ()), in_design=False)


def _side_cells(
    factor: str, runs_of: Mapping[str, Sequence[Row]], design: Design
) -> tuple[list[Row], list[Row]]:
    """The runs of the arms that compare `factor`: the full arm and the one without it
    (leave-one-out), or every arm with it and every arm without it."""
    if design.kind == "leave-one-out":
        full, without = _loo_arms(design, factor)
        return list(runs_of.get(full, [])), list(runs_of.get(without, []))
    with_ = [r for a, rows in runs_of.items() if factor in design.arms[a] for r in rows]
    without_ = [r for a, rows in runs_of.items() if factor not in design.arms[a] for r in rows]
    return with_, without_


def _sides(factor: str, runs_of: Mapping[str, Sequence[Row]], design: Design) -> Effect:
    """A factor's two sides: their sizes and pass rates, no effect yet; the verdict says why
    none can be estimated, or is ""."""
    with_, without = _side_cells(factor, runs_of, design)
    effect = Effect(factor, len(with_), len(without), _rate(with_), _rate(without), *(None,) * 4)
    where = "both arms" if design.kind == "leave-one-out" else "every arm"
    effect.verdict = limits.pass_problem(with_, without, where)
    return effect


def _rate(rows: Sequence[Row]) -> float | None:
    return sum(r["outcome"] == Outcome.PASS for r in rows) / len(rows) if rows else None


def _test(
    found: Sequence[Effect],
    weights: Mapping[str, Mapping[str, Mapping[str, float]]],
    cells: Mapping[str, contrasts.Cells],
    design: Design,
    needed: bool,
) -> None:
    """The stratified permutation test of each factor some case estimates, Bonferroni over
    the family (the factors with runs on both sides that the arms can estimate: one whose runs
    support no estimate stands in it as p = 1), its interval and verdict."""
    family = [e for e in found if e.n_with and e.n_without and e.factor in weights]
    level = ALPHA / max(1, len(family))
    rng = numpy.random.default_rng(contrasts.SEED)
    draws = contrasts.permutations_for(len(family), ALPHA)
    shared: contrasts.Drawn = {}
    for effect in family:
        if effect.verdict:
            continue
        test = contrasts.contrast(cells, weights[effect.factor], draws, rng, shared)
        width = contrasts.half_width(test, level)
        effect.delta_pass, effect.p_value = test.effect, test.p
        effect.low, effect.high = max(-1.0, test.effect - width), min(1.0, test.effect + width)
        if contrasts.size(test.effect) <= width:  # a tie with the critical value: the end is 0
            effect.low, effect.high = min(effect.low, 0.0), max(effect.high, 0.0)
        effect.p_adjusted = min(1.0, test.p * len(family))
        effect.by_case = dict(test.by_case)
        effect.pass_with, effect.pass_without = _stratified(test, cells)
        _verdict(effect, test, width, level, _per_side(design) if needed else 0, cells)
    if design.kind == "leave-one-out":
        for effect in family:
            _interaction(effect, cells, design, len(family), rng)


def _stratified(
    test: contrasts.Contrast, cells: Mapping[str, contrasts.Cells]
) -> tuple[float, float]:
    """Each side's pass rate as the effect sees it: per case the mean of its arms' rates (the
    arms weighted positive, then negative), then the mean over cases."""
    sides = []
    for sign in (1, -1):
        rates = [
            statistics.fmean(cells[case].rate(a) for a, w in arms.items() if w * sign > 0)
            for case, arms in test.weights.items()
        ]
        sides.append(statistics.fmean(rates))
    return sides[0], sides[1]


def _per_side(design: Design) -> int:
    """The arms on each side of a factor's comparison: one in leave-one-out, half the arms of
    a two-level design."""
    return 1 if design.kind == "leave-one-out" else max(1, len(design.arms) // 2)


def _verdict(
    effect: Effect,
    test: contrasts.Contrast,
    width: float,
    level: float,
    per_side: int,
    cells: Mapping[str, contrasts.Cells],
) -> None:
    """helps / hurts when the family interval excludes 0 (so Bonferroni's p < alpha); else no
    detectable effect, with the runs per arm at which the same test would detect the observed
    difference (80 % power), or the words when there is no such number."""
    if contrasts.size(test.effect) > width:
        effect.verdict = "helps" if test.effect > 0 else "hurts"
        return
    effect.verdict = "no effect detectable at this n"
    if abs(test.effect) < limits.ZERO:
        effect.needed_note = limits.NO_DIFFERENCE
        return
    if not per_side:
        return
    now = min(cells[case].runs[a] for case, arms in test.weights.items() for a in arms)
    rate_without = min(max(effect.pass_without or 0.0, 0.0), 1.0)
    rate_with = min(max(rate_without + test.effect, 0.0), 1.0)
    effect.needed_n, effect.needed_note = contrasts.needed_runs(
        rate_with, rate_without, per_side, len(test.weights), level, now
    )


def _interaction(
    effect: Effect,
    cells: Mapping[str, contrasts.Cells],
    design: Design,
    tests: int,
    rng: Any,
) -> None:
    """With add-one arms: the factor alone against nothing; a sign that differs from the
    leave-one-out contrast's, either of them significant after Bonferroni over the `tests`
    factors, means the factor interacts with the others."""
    alone = next((a for a, k in sorted(design.arms.items()) if k == {effect.factor}), "")
    none = next((a for a, k in sorted(design.arms.items()) if not k), "")
    weights = {
        case: {alone: 1.0, none: -1.0}
        for case, cell in cells.items()
        if alone and none and alone in cell.runs and none in cell.runs
    }
    if not weights or effect.delta_pass is None or effect.p_value is None:
        return
    added = contrasts.contrast(cells, weights, contrasts.permutations_for(tests, ALPHA), rng)
    if added.effect * effect.delta_pass < 0 and min(added.p, effect.p_value) * tests < ALPHA:
        effect.note = (
            f"interacts with others: alone {added.effect:+.0%} against nothing, "
            f"{effect.delta_pass:+.0%} left out of everything"
        )


def _cop(found: Sequence[Effect], runs_of: Mapping[str, Sequence[Row]], design: Design) -> None:
    """Each factor's change of Cost-of-Pass with its interval (`cop_interval`)."""
    cells: dict[cop_interval.Cell, tuple[list[float | None], list[bool]]] = {}
    for arm, rows in runs_of.items():
        for row in rows:
            costs, passes = cells.setdefault((_case(row), arm), ([], []))
            costs.append(effect_measures.number(row.get("cost_usd")))
            passes.append(row["outcome"] == Outcome.PASS)
    draws = cop_interval.draws(cells)
    aliased = _aliased(design)
    for effect in found:
        if design.kind == "leave-one-out":
            full, without = _loo_arms(design, effect.factor)
            sides = ([c for c in cells if c[1] == full], [c for c in cells if c[1] == without])
        else:
            sides = (
                [c for c in cells if effect.factor in design.arms[c[1]]],
                [c for c in cells if effect.factor not in design.arms[c[1]]],
            )
        if not effect.n_with or not effect.n_without or effect.factor in aliased:
            continue
        cop = cop_interval.delta(draws, *sides)
        effect.delta_cop, effect.delta_cop_low, effect.delta_cop_high = cop.value, cop.low, cop.high
        if cop.note and "every counted run failed" not in effect.verdict:
            effect.note = f"{effect.note}; {cop.note}" if effect.note else cop.note


def _aliased(design: Design) -> dict[str, tuple[str, ...]]:
    if design.kind == "leave-one-out":
        return {}
    return contrasts.aliases(list(design.arms.values()), design.factors)
