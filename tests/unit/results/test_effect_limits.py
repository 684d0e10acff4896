"""What the runs of an ablation cannot support (`results.effect_limits`, through
`component_effects.effects`): degenerate runs get words instead of numbers (every counted run
passed or failed in both arms, one run on a side, runs the factors separate exactly, a
regression too small to fit); the runs per arm a power calculation asks for are omitted where no
difference was observed and capped where the number would be noise; no table shows `-0%`."""

from __future__ import annotations

import math

import pytest

from pytest_scylla.results import component_effects as ce
from pytest_scylla.results import component_html
from pytest_scylla.results import component_tables as ct
from pytest_scylla.results import effect_limits as limits

A, B = "skill:a", "skill:b"
LOO = ce.Design(
    "leave-one-out", "cfg", (A, B), {"01": frozenset({A, B}), "02": frozenset({B}), "03": {A}}
)


def _row(arm: str, outcome: str, cost: float = 0.1) -> dict[str, object]:
    return {"tier": "T0", "subtest": arm, "outcome": outcome, "cost_usd": cost, "score": 1.0}


def _arms(**outcomes: str) -> list[dict[str, object]]:
    """Runs per arm: `a01="ppf"` is three runs of arm 01, pass, pass, fail."""
    kinds = {"p": "pass", "f": "fail", "i": "infra_error"}
    return [
        _row(arm[1:], kinds[c], 0.1 + i / 100)
        for arm, s in outcomes.items()
        for i, c in enumerate(s)
    ]


@pytest.mark.parametrize(
    ("runs", "expected"),
    [
        ("ppp", "cannot estimate: every counted run passed in both arms"),
        ("fff", "cannot estimate: every counted run failed in both arms"),
    ],
)
def test_every_run_passing_or_failing_in_both_arms_is_said_not_estimated(
    runs: str, expected: str
) -> None:
    found = {e.factor: e for e in ce.effects(_arms(a01=runs, a02=runs, a03=runs), LOO)}
    for effect in found.values():
        assert effect.verdict == expected
        assert (effect.delta_pass, effect.low, effect.high, effect.p_adjusted) == (None,) * 4
        assert effect.needed_n is None
        assert effect.deltas["cost_usd"] == pytest.approx(0.0)  # the measures still compare
    line = ct.terminal(list(found.values()))[1]
    assert line.endswith(expected)
    assert "[" not in line  # no interval
    assert "runs per arm" not in line


def test_one_counted_run_on_a_side_is_not_estimable_at_this_n() -> None:
    found = {e.factor: e for e in ce.effects(_arms(a01="pf", a02="p", a03="fpf"), LOO)}
    assert (
        found[A].verdict
        == "not estimable at this n (2 counted runs with it, 1 counted run without)"
    )
    assert found[A].delta_pass is None
    assert found[B].delta_pass is not None  # the other factor's contrast is whole
    assert found[B].verdict == "no effect detectable at this n"


def test_no_difference_observed_asks_for_no_number_of_runs() -> None:
    found = {e.factor: e for e in ce.effects(_arms(a01="pf" * 4, a02="fp" * 4, a03="pp"), LOO)}
    assert found[A].delta_pass == 0
    assert found[A].verdict == "no effect detectable at this n"
    assert (found[A].needed_n, found[A].needed_note) == (None, limits.NO_DIFFERENCE)
    line = next(x for x in ct.terminal(list(found.values())) if x.startswith(A))
    assert "(no difference observed)" in line
    assert "-0%" not in line


def test_the_runs_a_power_calculation_asks_for_are_capped() -> None:
    """The same test's exact power: the 80 % point is reached, never below the current n + 1,
    and capped past 10,000 runs per arm."""
    from pytest_scylla.results import contrasts

    n, note = contrasts.needed_runs(0.7, 0.3, 1, 1, 0.05, 5)
    assert note == ""
    assert n is not None
    assert contrasts.power(0.7, 0.3, n, 0.05) >= 0.8 > contrasts.power(0.7, 0.3, n - 1, 0.05)
    assert contrasts.needed_runs(0.7, 0.3, 1, 1, 0.05, 60) == (61, "")  # never below n + 1
    assert contrasts.needed_runs(0.51, 0.5, 1, 1, 0.05, 5) == (
        None,
        "over 10,000 runs per arm would",
    )


def test_both_sides_never_passing_give_no_cop_difference() -> None:
    """inf - inf was printed as `+nan`."""
    effect = ce.effects(_arms(a01="ff", a02="ff", a03="ff"), LOO)[0]
    assert effect.delta_cop is None


def _plackett_burman(k: int = 7) -> ce.Design:
    rows = [[1]]
    while len(rows) < k + 1:
        rows = [r + r for r in rows] + [r + [-v for v in r] for r in rows]
    factors = tuple(f"skill:s{i}" for i in range(1, k + 1))
    arms = {
        f"{i:02d}": frozenset(f for f, v in zip(factors, row[1:], strict=True) if v > 0)
        for i, row in enumerate(rows, 1)
    }
    return ce.Design("plackett-burman", "cfg", factors, arms)


def test_runs_the_factors_separate_exactly_are_an_effect_not_a_problem() -> None:
    """Every run with s1 passes, every one without it fails. The logistic model separated here
    (it printed zero-width intervals, then no estimate); the permutation test of the arm means
    needs no model: s1 helps with a proper interval, the others have no effect."""
    design = _plackett_burman()
    runs = [
        _row(arm, "pass" if "skill:s1" in kept else "fail")
        for arm, kept in design.arms.items()
        for _ in range(2)
    ]
    found = {e.factor: e for e in ce.effects(runs, design)}
    assert found["skill:s1"].verdict == "helps"
    assert found["skill:s1"].delta_pass == pytest.approx(1.0)
    assert 0 < found["skill:s1"].low < 1.0
    others = [e for f, e in found.items() if f != "skill:s1"]
    assert {e.verdict for e in others} == {"no effect detectable at this n"}
    assert all(e.delta_pass == pytest.approx(0.0, abs=1e-12) for e in others)


def test_every_run_passing_in_a_regression_still_compares_the_measures() -> None:
    """No effect on pass when every run passed, but s3's cost of 5 cents still shows."""
    design = _plackett_burman()
    runs = [
        _row(arm, "pass", 0.1 + (0.05 if "skill:s3" in kept else 0.0) + i / 1000)
        for arm, kept in design.arms.items()
        for i in range(3)
    ]
    found = {e.factor: e for e in ce.effects(runs, design)}
    assert found["skill:s3"].verdict == "cannot estimate: every counted run passed in every arm"
    assert found["skill:s3"].delta_pass is None
    assert found["skill:s3"].deltas["cost_usd"] == pytest.approx(0.05)
    assert found["skill:s3"].deltas["cost_usd_low"] > 0.04


def test_a_regression_with_too_few_runs_says_so_and_what_would_do() -> None:
    design = _plackett_burman()
    runs = [_row(arm, "pass" if int(arm) % 2 else "fail") for arm in design.arms]
    found = ce.effects(runs, design)
    assert {e.verdict for e in found} == {"not estimable at this n: 8 counted runs for 7 factors"}
    assert all(e.pass_with is not None for e in found)  # each side's rate: what the runs say
    notes = limits.arm_notes(runs, design, {})
    assert notes == [
        "a regression on 7 factors and a constant needs at least 16 counted runs (twice its "
        "parameters), this experiment has 8: run each arm at least 2 times"
    ]


def test_a_saturated_design_that_lost_an_arm_cannot_tell_its_factors_apart() -> None:
    """Seven factors in eight arms, the full arm without a counted run: seven design points for
    eight parameters. With every run passing this printed `helps +19% [+19%, +19%]` for
    factors that did nothing; with any outcomes, more runs cannot help."""
    design = _plackett_burman()
    runs = [
        _row(arm, "pass" if i % 3 else "fail")
        for arm in design.arms
        if arm != "01"
        for i in range(6)
    ]
    for effect in ce.effects(runs, design):
        others = ", ".join(f for f in design.factors if f != effect.factor)
        assert effect.verdict == (
            f"not estimable: aliased with the constant, {others} in the arms with counted "
            "runs (more runs will not help; the arms without one will)"
        )
        assert effect.delta_pass is None
        assert effect.p_adjusted is None
    runs += [_row("01", "pass" if i % 3 else "fail") for i in range(6)]  # the control
    assert {e.verdict for e in ce.effects(runs, design)} == {"no effect detectable at this n"}


def test_a_regression_with_enough_runs_still_estimates() -> None:
    """The control: the same design with a planted effect and enough runs gives numbers."""
    design = _plackett_burman()
    runs = [
        _row(arm, "pass" if ("skill:s2" in kept) == (i % 4 != 0) else "fail")
        for arm, kept in design.arms.items()
        for i in range(8)
    ]
    found = {e.factor: e for e in ce.effects(runs, design)}
    assert found["skill:s2"].verdict == "helps"
    assert found["skill:s2"].low is not None
    assert found["skill:s2"].low > 0


@pytest.mark.parametrize(
    ("key", "value", "shown"),
    [
        ("delta_pass", -0.001, "0%"),
        ("low", -1e-17, "0%"),
        ("high", 0.004, "0%"),
        ("delta_pass", -0.3, "-30%"),
        ("delta_cost_usd", -0.00001, "0.0000"),
        ("delta_cop", -math.inf, "-inf"),
        ("delta_cop", math.nan, "-"),
        ("delta_total_tokens", -0.2, "0"),
        ("p_adjusted", None, "-"),
    ],
)
def test_a_zero_is_never_signed(key: str, value: float | None, shown: str) -> None:
    assert component_html.cell_text(key, value) == shown


def test_an_effect_without_an_estimate_is_drawn_without_a_dot() -> None:
    row = {"verdict": limits.NO_FULL, "delta_pass": None, "low": None, "high": None}
    assert component_html.interval_text(row) == "-"
    assert "<circle" not in component_html.bar(row)
    assert "<rect" not in component_html.bar(row)
