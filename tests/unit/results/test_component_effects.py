"""Per-component effects (`results.component_effects`) on runs whose truth is known: a helpful
factor is significantly positive, a harmful one negative, a neutral one not significant (with
the runs per arm that would detect it), for leave-one-out and Plackett-Burman designs."""

from __future__ import annotations

import random

import pytest

from pytest_scylla.results import component_effects as ce

HELP, HURT, NONE = "skill:a", "skill:b", "skill:c"
TRUTH = {HELP: 0.4, HURT: -0.4, NONE: 0.0}


def _runs(design: ce.Design, n: int, truth: dict[str, float], seed: int = 7) -> list[dict]:
    draw = random.Random(seed)
    rows = []
    for number, kept in design.arms.items():
        p = min(1.0, max(0.0, 0.5 + sum(truth.get(f, 0.0) for f in kept)))
        for i in range(n):
            passed = draw.random() < p
            cost = 0.10 + (0.05 if HURT in kept else 0.0) + draw.random() / 100
            rows.append(
                {
                    "tier": "T0",
                    "subtest": number,
                    "outcome": "pass" if passed else "fail",
                    "cost_usd": cost,
                    "score": float(passed),
                    "total_tokens": 1000 + i,
                    "duration_seconds": 10.0,
                }
            )
    return rows


def _loo(add_one: bool = False) -> ce.Design:
    every = frozenset(TRUTH)
    arms = {"01": every, "02": frozenset()}
    arms |= {f"{i:02d}": every - {f} for i, f in enumerate(TRUTH, 3)}
    if add_one:
        arms |= {f"{i:02d}": frozenset({f}) for i, f in enumerate(TRUTH, 6)}
    return ce.Design("leave-one-out", "abc", tuple(TRUTH), arms)


def test_leave_one_out_recovers_each_planted_effect() -> None:
    found = {e.factor: e for e in ce.effects(_runs(_loo(), 40, TRUTH), _loo())}
    assert found[HELP].verdict == "helps"
    assert found[HURT].verdict == "hurts"
    assert found[NONE].verdict == "no effect detectable at this n"
    assert found[HELP].low > 0 > found[HURT].high
    assert found[NONE].low < 0 < found[NONE].high
    assert found[HURT].deltas["cost_usd"] == pytest.approx(0.05, abs=0.01)  # it costs 5 cents
    assert found[HURT].delta_cop is not None


def test_swapped_effects_swap_the_verdicts() -> None:
    """The mutation control: the same runs with the truth swapped."""
    swapped = {HELP: -0.4, HURT: 0.4, NONE: 0.0}
    found = {e.factor: e.verdict for e in ce.effects(_runs(_loo(), 40, swapped), _loo())}
    assert (found[HELP], found[HURT]) == ("hurts", "helps")


def test_a_small_effect_is_told_how_many_runs_would_detect_it() -> None:
    small = {HELP: 0.15, HURT: 0.0, NONE: 0.0}
    effect = next(e for e in ce.effects(_runs(_loo(), 6, small), _loo()) if e.factor == HELP)
    assert effect.verdict == "no effect detectable at this n"
    assert effect.needed_n is not None
    assert effect.needed_n > 6


def test_add_one_arms_reveal_an_interaction() -> None:
    """A factor that helps alone but hurts beside the others (the truth depends on the rest)."""
    design = _loo(add_one=True)
    rows = [r for r in _runs(design, 40, {}) if r["subtest"] not in ("01", "03", "06", "02")]
    draw = random.Random(3)
    for number, p in (("01", 0.2), ("03", 0.8), ("06", 0.9), ("02", 0.2)):
        rows += [
            {
                "tier": "T0",
                "subtest": number,
                "outcome": "pass" if draw.random() < p else "fail",
                "cost_usd": 0.1,
            }
            for _ in range(40)
        ]
    found = {e.factor: e for e in ce.effects(rows, design)}
    assert found[HELP].verdict == "hurts"
    assert "interacts with others" in found[HELP].note


def test_a_plackett_burman_design_recovers_main_effects() -> None:
    from pytest_scylla.formats import ablation_plan
    from pytest_scylla.formats.agent_config import Component, Configuration

    comps = tuple(Component("skill", n, "x", n) for n in "abcdefghijkl")  # k = 12
    units = ablation_plan.factors(
        Configuration("claude-code", __import__("pathlib").Path("."), comps)
    )
    arms = ablation_plan.design(units)
    assert len(arms) <= 16
    design = ce.Design(
        "plackett-burman",
        "abc",
        tuple(f.name for f in units),
        {a.name[:2]: a.kept for a in arms},
    )
    found = {e.factor: e for e in ce.effects(_runs(design, 12, TRUTH), design)}
    assert found[HELP].verdict == "helps"
    assert found[HURT].verdict == "hurts"
    assert found[NONE].verdict.startswith("no effect")
    others = [e for f, e in found.items() if f not in TRUTH]
    assert sum(e.verdict != "no effect detectable at this n" for e in others) <= 1


def test_the_tables_say_it_in_words() -> None:
    found = ce.effects(_runs(_loo(), 40, TRUTH), _loo())
    lines = ce.terminal(found)
    assert lines[1].startswith(HELP)  # largest effect on pass first
    assert "helps" in lines[1]
    assert "| `skill:b` | hurts |" in ce.markdown(found, _loo())


def test_runs_of_other_tiers_and_uncounted_outcomes_stay_out() -> None:
    rows = _runs(_loo(), 40, TRUTH)
    before = {e.factor: e.n_with for e in ce.effects(rows, _loo())}
    noise = [{**r, "tier": "T1", "outcome": "fail"} for r in rows[:30]]
    noise += [{**r, "outcome": "infra_error"} for r in rows[:30]]
    after = {e.factor: e.n_with for e in ce.effects(rows + noise, _loo())}
    assert after == before
