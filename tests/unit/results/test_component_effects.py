"""Per-component effects (`results.component_effects`) on runs whose truth is known: a helpful
factor is significantly positive, a harmful one negative, a neutral one not significant (with
the runs per arm that would detect it), for leave-one-out and Plackett-Burman designs; how
they are shown (markdown, terminal, HTML drawn with their intervals, names escaped); and how a
session's reports find the plan an experiment ran (`for_experiment`), or find none quietly."""

from __future__ import annotations

import json
import random
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_scylla.results import component_effects as ce
from pytest_scylla.results import component_html, contrasts
from pytest_scylla.results import component_tables as ct

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
    assert found[HURT].deltas["cost_usd_low"] > 0.03  # and its interval says so
    assert found[NONE].deltas["cost_usd_low"] < 0 < found[NONE].deltas["cost_usd_high"]
    for measure in ("score", "total_tokens"):  # the measures that vary have their intervals
        assert found[HELP].deltas[f"{measure}_low"] < found[HELP].deltas[f"{measure}_high"]
    assert "duration_seconds_low" not in found[HELP].deltas  # all equal: no interval to draw
    assert found[HURT].delta_cop is not None


def test_factors_whose_arm_was_not_run_are_not_in_the_family() -> None:
    """Only the arms of two factors run (`-k` on their subtests): the third factor was not
    tested, so Bonferroni adjusts over two p-values, not three (it would over three were its
    arm run, even where its runs supported no estimate)."""
    design = _loo()
    run = [r for r in _runs(design, 16, TRUTH) if r["subtest"] in ("01", "03", "04")]
    found = {e.factor: e for e in ce.effects(run, design)}
    assert found[NONE].n_without == 0
    assert found[NONE].p_adjusted is None
    for factor in (HELP, HURT):  # Bonferroni over two
        assert found[factor].p_adjusted == pytest.approx(min(1.0, 2 * found[factor].p_value))
    every = ce.effects(_runs(design, 16, TRUTH), design)  # the control: all arms run
    assert {e.factor: e for e in every}[HELP].p_adjusted > found[HELP].p_adjusted


def test_swapped_effects_swap_the_verdicts() -> None:
    """The mutation control: the same runs with the truth swapped."""
    swapped = {HELP: -0.4, HURT: 0.4, NONE: 0.0}
    found = {e.factor: e.verdict for e in ce.effects(_runs(_loo(), 40, swapped), _loo())}
    assert (found[HELP], found[HURT]) == ("hurts", "helps")


def test_runs_of_two_agents_or_models_are_never_pooled() -> None:
    """A component's worth differs by CLI and model: mixed runs are refused, naming both; the
    runs of one condition (what `--agent`/`--model` select) are analysed."""
    runs = _runs(_loo(), 10, TRUTH)
    for i, row in enumerate(runs):
        row["agent"], row["agent_model"] = ("codex", "gpt-5") if i % 2 else ("claude-code", "x")
    with pytest.raises(ValueError, match=r"2 agent/model conditions \(claude-code/x, codex/gpt-5"):
        ce.effects(runs, _loo())
    assert ce.effects([r for r in runs if r["agent"] == "codex"], _loo())


def test_a_small_effect_is_told_how_many_runs_would_detect_it() -> None:
    small = {HELP: 0.15, HURT: 0.0, NONE: 0.0}
    effect = next(e for e in ce.effects(_runs(_loo(), 6, small), _loo()) if e.factor == HELP)
    assert effect.verdict == "no effect detectable at this n"
    assert effect.needed_n is not None
    assert effect.needed_n > 6


def test_a_difference_of_rounding_size_asks_for_no_number_of_runs() -> None:
    """Found by a 16-arm oracle session: a main effect of 1e-17 (a rounding remainder) made
    the power solver return NaN and the whole report fail; it is now no number, quietly."""
    effect = ce.Effect("x", 6, 6, 0.5, 0.5, 1e-17, -0.1, 0.1, 1.0, p_adjusted=1.0)
    cells = {"c": contrasts.Cells({"01": 6, "02": 6}, {"01": 3, "02": 3})}
    test = contrasts.Contrast(1e-17, {"c": 1e-17}, {"c": {"01": 1.0, "02": -1.0}}, 1.0, None)
    ce._verdict(effect, test, 0.5, 0.05, 1, cells)
    assert effect.verdict == "no effect detectable at this n"
    assert effect.needed_n is None
    assert effect.needed_note == "no difference observed"


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
    hurt = found[HURT].deltas  # the linear model's main effect on cost, with its interval
    assert hurt["cost_usd_low"] < hurt["cost_usd"] == pytest.approx(0.05, abs=0.01)
    assert 0.03 < hurt["cost_usd_low"] < hurt["cost_usd_high"] < 0.07


def test_the_tables_say_it_in_words() -> None:
    found = ce.effects(_runs(_loo(), 40, TRUTH), _loo())
    lines = ct.terminal(found)
    assert lines[1].startswith(HELP)  # largest effect on pass first
    assert "helps" in lines[1]
    assert "| `skill:b` | hurts |" in ct.markdown(found, _loo())


def test_runs_of_other_tiers_and_uncounted_outcomes_stay_out() -> None:
    rows = _runs(_loo(), 40, TRUTH)
    before = {e.factor: e.n_with for e in ce.effects(rows, _loo())}
    noise = [{**r, "tier": "T1", "outcome": "fail"} for r in rows[:30]]
    noise += [{**r, "outcome": "infra_error"} for r in rows[:30]]
    after = {e.factor: e.n_with for e in ce.effects(rows + noise, _loo())}
    assert after == before


def _cx(html: str, factor: str) -> float:
    """Where the dot of `factor`'s effect on pass lies on its axis."""
    row = re.search(rf'<tr data-component="{re.escape(factor)}">.*?</tr>', html)
    assert row is not None, factor
    found = re.search(r'<circle cx="([-\d.]+)"', row.group(0))
    assert found is not None
    return float(found.group(1))


def test_the_html_section_draws_each_effect_largest_first() -> None:
    found = ce.effects(_runs(_loo(), 40, TRUTH), _loo())
    html = component_html.section(ct.rows_of(found), ct.title(_loo()))
    assert html.startswith('<section id="components"><h2>Which components earn their cost')
    assert re.findall(r'<tr data-component="([^"]+)">', html) == [HELP, NONE, HURT]
    assert html.count("<svg") == html.count('<rect class="ci"') == 3  # one bar per component
    assert html.count("<circle") == 3
    assert _cx(html, HELP) > component_html.ZERO_X > _cx(html, HURT)
    assert 'fill="#1a7f37"' in html  # helps: green
    assert 'fill="#b42318"' in html  # hurts: red
    assert "<script" not in html  # nothing runs


def test_a_hostile_component_name_is_shown_as_text() -> None:
    hostile = '<script>alert(1)</script>"><img src=x onerror=alert(2)>'
    truth = {hostile: 0.4, HURT: -0.4}
    every = frozenset(truth)
    arms = {"01": every, "02": every - {hostile}, "03": every - {HURT}}
    design = ce.Design("leave-one-out", "<b>cfg</b>", tuple(truth), arms)
    found = ce.effects(_runs(design, 30, truth), design)
    for html in (
        component_html.section(ct.rows_of(found), ct.title(design)),
        component_html.page(ct.rows_of(found), ct.title(design)),
    ):
        assert "<script" not in html
        assert "<img" not in html
        assert "<b>" not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
        assert html.count('<rect class="ci"') == 2


def test_an_interval_past_the_axis_is_drawn_at_its_end() -> None:
    row = {"verdict": "helps", "delta_pass": 1.4, "low": 0.9, "high": 2.0}
    svg = component_html.bar(row)
    right = component_html.WIDTH - component_html.PAD
    assert f'<circle cx="{float(right)}"' in svg
    assert "<circle" not in component_html.bar({**row, "delta_pass": float("nan")})  # no dot


def test_write_outputs_writes_csv_markdown_and_html(tmp_path: Path) -> None:
    found = ce.effects(_runs(_loo(), 40, TRUTH), _loo())
    written = ct.write_outputs(tmp_path, found, _loo())
    assert [p.name for p in written] == ["components.csv", "components.md", "components.html"]
    assert all(p.is_file() for p in written)
    page = (tmp_path / "components.html").read_text(encoding="utf-8")
    assert page.startswith("<!doctype html>")
    assert '<section id="components">' in page
    assert "http" not in page  # nothing fetched: no script, stylesheet or font from elsewhere
    assert "| `skill:b` | hurts |" in (tmp_path / "components.md").read_text(encoding="utf-8")


def _planned_experiment(tmp_path: Path, design: dict[str, Any] | str) -> Path:
    """An experiment folder whose manifest names a T0 tier written by `scylla ablate plan`,
    with `design` (a plan's design.json, or any text) beside it."""
    from pytest_scylla.formats.ablation_plan import HEADER

    tiers = tmp_path / "ablation"
    tiers.mkdir(parents=True)
    (tiers / "T0.yaml").write_text(f"{HEADER} from x\ntier: T0\n", encoding="utf-8")
    text = design if isinstance(design, str) else json.dumps(design)
    (tiers / "design.json").write_text(text, encoding="utf-8")
    out = tmp_path / "exp"
    out.mkdir()
    manifest = {"tier_sources": {"T0": str(tiers / "T0.yaml"), "T1": "packaged (x)"}}
    (out / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return out


DESIGN = {
    "design": "leave-one-out",
    "configuration": "abc",
    "factors": list(TRUTH),
    "components": {f: [f] for f in TRUTH},
    "arms": {
        "01-full": list(TRUTH),
        "02-none": [],
        **{f"{i:02d}-no-{f}": sorted(set(TRUTH) - {f}) for i, f in enumerate(TRUTH, 3)},
    },
}


def test_for_experiment_finds_the_plan_and_its_effects(tmp_path: Path) -> None:
    out = _planned_experiment(tmp_path, DESIGN)
    planned = ce.for_experiment(out, _runs(_loo(), 40, TRUTH))
    assert planned is not None
    found, design = planned
    assert design == _loo()
    assert {e.factor: e.verdict for e in found}[HELP] == "helps"
    assert ce.design_beside(out) == tmp_path / "ablation" / "design.json"


@pytest.mark.parametrize(
    "design",
    [
        "{not json",
        "[]",
        json.dumps({**DESIGN, "arms": ["01-full"]}),
        json.dumps({**DESIGN, "arms": {"01-full": [["nested"]]}}),
        json.dumps({**DESIGN, "arms": {"01-full": ["unknown"]}}),
        json.dumps({**DESIGN, "factors": [["a"]]}),
        json.dumps({**DESIGN, "factors": 3}),
        json.dumps({**DESIGN, "design": "full-factorial"}),
        json.dumps({k: v for k, v in DESIGN.items() if k != "configuration"}),
    ],
)
def test_a_malformed_design_means_no_section(tmp_path: Path, design: str) -> None:
    out = _planned_experiment(tmp_path, design)
    assert ce.for_experiment(out, _runs(_loo(), 10, TRUTH)) is None
    with pytest.raises(ValueError, match="not a design written by `scylla ablate plan`"):
        ce.load_design(tmp_path / "ablation" / "design.json")


def test_an_experiment_without_a_plan_has_no_section(tmp_path: Path) -> None:
    runs = _runs(_loo(), 10, TRUTH)
    assert ce.for_experiment(tmp_path, runs) is None  # no manifest.json
    (tmp_path / "manifest.json").write_text("{broken", encoding="utf-8")
    assert ce.for_experiment(tmp_path, runs) is None
    packaged = {"tier_sources": {"T0": "packaged (pytest-scylla 1.0)"}}
    (tmp_path / "manifest.json").write_text(json.dumps(packaged), encoding="utf-8")
    assert ce.for_experiment(tmp_path, runs) is None
    out = _planned_experiment(tmp_path / "own", DESIGN)  # a design beside a project's own T0
    (tmp_path / "own" / "ablation" / "T0.yaml").write_text("tier: T0\n", encoding="utf-8")
    assert ce.for_experiment(out, runs) is None
    out = _planned_experiment(tmp_path / "gone", DESIGN)  # the tier folder since removed
    shutil.rmtree(tmp_path / "gone" / "ablation")
    assert ce.for_experiment(out, runs) is None


def test_a_plan_without_counted_runs_has_no_section(tmp_path: Path) -> None:
    out = _planned_experiment(tmp_path, DESIGN)
    runs = _runs(_loo(), 10, TRUTH)
    assert ce.for_experiment(out, [{**r, "outcome": "infra_error"} for r in runs]) is None
    assert ce.for_experiment(out, [{**r, "tier": "T1"} for r in runs]) is None
    assert ce.for_experiment(out, []) is None
