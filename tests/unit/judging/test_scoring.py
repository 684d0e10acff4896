"""Scoring in code: the paper's recorded judge answers re-scored, and the invariants."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_scylla.formats.rubric import Category, Rubric, RubricItem
from pytest_scylla.judging import scoring

DRYRUN = Path(__file__).parents[2] / "fixtures" / "dryrun"


def _criteria() -> dict[tuple[str, str, str, str, str], dict[str, str]]:
    with (DRYRUN / "criteria.csv").open() as handle:
        return {
            (r["tier"], r["subtest"], r["run_number"], r["judge_number"], r["criterion"]): r
            for r in csv.DictReader(handle)
        }


def test_rescoring_the_papers_judges_reproduces_criteria_and_flags_their_arithmetic() -> None:
    rows = _criteria()
    matched, wrong = 0, []
    for path in sorted(DRYRUN.glob("T*/*/run_*/judge/judge_*/judgment.json")):
        tier, subtest, run, _, judge = path.parts[-6:-1]
        verdict = json.loads(path.read_text())
        for category, reported in verdict["criteria_scores"].items():
            items = {i: (v["achieved"], v["max"]) for i, v in reported["items"].items()}
            achieved, maximum = scoring.category_totals(items)
            row = rows[(tier, subtest, str(int(run[4:])), str(int(judge[6:])), category)]
            if (achieved, maximum) == (
                float(row["criterion_achieved"]),
                float(row["criterion_max"]),
            ):
                matched += 1
            else:
                # the export carried the judge's own total, which is not the sum of its items
                assert float(row["criterion_achieved"]) == reported["achieved"]
                wrong.append((tier, subtest, judge, category, achieved, reported["achieved"]))
    assert matched == 99
    assert len(wrong) == 6
    assert {w[3] for w in wrong} == {"proportionality", "build_pipeline"}


def _rubric(spec: list[tuple[float, list[tuple[float, bool]]]], threshold: float = 0.6) -> Rubric:
    categories = []
    for c, (weight, items) in enumerate(spec):
        categories.append(
            Category(
                name=f"c{c}",
                weight=weight,
                items=tuple(
                    RubricItem(
                        id=f"c{c}i{i}",
                        category=f"c{c}",
                        description="d",
                        points=points,
                        required=required,
                    )
                    for i, (points, required) in enumerate(items)
                ),
            )
        )
    total = sum(c.weight for c in categories)
    categories = [Category(c.name, c.weight / total, c.items) for c in categories]
    return Rubric(
        path=Path("r.yaml"), name="r", categories=tuple(categories), pass_threshold=threshold
    )


def _rubrics(min_items: int = 1) -> st.SearchStrategy[Rubric]:
    """Rubrics of 1-4 weighted categories of 1-4 items, with at least `min_items` items."""
    spec = st.lists(
        st.tuples(
            st.floats(0.05, 1.0),
            st.lists(
                st.tuples(st.sampled_from([0.25, 0.5, 1.0, 2.0]), st.booleans()),
                min_size=1,
                max_size=4,
            ),
        ),
        min_size=1,
        max_size=4,
    )
    return spec.filter(lambda cats: sum(len(items) for _, items in cats) >= min_items).map(_rubric)


rubrics = _rubrics()


@st.composite
def rubric_and_verdict(draw: Any, min_items: int = 1) -> tuple[Rubric, dict[str, Any]]:
    rubric = draw(_rubrics(min_items))
    verdict: dict[str, Any] = {}
    for item in rubric.items:
        if draw(st.booleans()) and draw(st.booleans()):
            verdict[item.id] = scoring.NA
        else:
            verdict[item.id] = draw(st.floats(-1.0, item.points + 1.0))
    return rubric, verdict


@given(rubric_and_verdict())
def test_score_is_within_0_and_1_and_impl_rate_too(case: tuple[Rubric, dict[str, Any]]) -> None:
    rubric, verdict = case
    result = scoring.score(rubric, verdict)
    assert 0.0 <= result.score <= 1.0 + 1e-12
    assert result.impl_rate is None or 0.0 <= result.impl_rate <= 1.0 + 1e-12


@given(_rubrics(min_items=2), st.data())
def test_marking_one_item_na_keeps_a_full_score_rubric_full(
    rubric: Rubric, data: st.DataObject
) -> None:
    """With two items or more, something is left to score after one N/A: every category that
    remains is full (achieved = max), so their weighted mean is 1 whatever the weights."""
    full = {i.id: i.points for i in rubric.items}  # everything achieved
    item = data.draw(st.sampled_from(list(rubric.items)))
    assert scoring.score(rubric, full).score == pytest.approx(1.0)
    assert scoring.score(rubric, {**full, item.id: scoring.NA}).score == pytest.approx(1.0)


@given(st.sampled_from([0.25, 0.5, 1.0, 2.0]), st.booleans())
def test_a_verdict_with_every_item_na_scores_zero_with_no_impl_rate(
    points: float, required: bool
) -> None:
    """A one-item rubric whose item is N/A has nothing left to score: no category counts, the
    score is 0 (not 1, not a division by zero) and the implementation rate is undefined."""
    rubric = _rubric([(1.0, [(points, required)])])
    result = scoring.score(rubric, {"c0i0": scoring.NA})
    assert result.score == 0.0
    assert result.impl_rate is None
    assert [c.score for c in result.categories] == [None]


@given(rubric_and_verdict(), st.data())
def test_marking_an_item_that_scored_zero_na_never_lowers_the_score(
    case: tuple[Rubric, dict[str, Any]], data: st.DataObject
) -> None:
    """Within its category a zero item only adds to the max, so leaving it out raises or keeps
    the category's score; when it was the category's last scorable item, the category scored
    0 and leaves the weighted mean, which can only raise it (or keep it at 0 when nothing is
    left). Either way the judge's score does not go down."""
    rubric, verdict = case
    item = data.draw(st.sampled_from(list(rubric.items)))
    zeroed = {**verdict, item.id: 0.0}
    before = scoring.score(rubric, zeroed)
    after = scoring.score(rubric, {**zeroed, item.id: scoring.NA})
    assert after.score >= before.score - 1e-9
    category = next(c for c in rubric.categories if item.id in {i.id for i in c.items})
    left = [i for i in category.items if i.id != item.id and zeroed[i.id] != scoring.NA]
    was = next(c.score for c in before.categories if c.name == category.name)
    now = next(c.score for c in after.categories if c.name == category.name)
    assert was is not None  # the zeroed item was scorable
    if left:  # the category stays, its score at least what it was
        assert now is not None
        assert now >= was - 1e-12
    else:  # its last scorable item: the category drops out of the weighted mean
        assert now is None


@given(rubrics)
def test_weights_renormalise_over_categories_that_remain(rubric: Rubric) -> None:
    first = rubric.categories[0]
    verdict: dict[str, Any] = {i.id: i.points for i in first.items}
    for cat in rubric.categories[1:]:
        verdict.update({i.id: scoring.NA for i in cat.items})
    assert scoring.score(rubric, verdict).score == 1.0  # only the first category counts


@given(st.floats(0, 1), st.floats(0, 1))
def test_grade_is_monotone_in_score(a: float, b: float) -> None:
    rubric = _rubric([(1.0, [(1.0, False)])])
    order = [g for g, _ in rubric.grade_scale]  # best first
    low, high = sorted((a, b))
    assert order.index(rubric.grade(high)) <= order.index(rubric.grade(low))


def test_consensus_is_the_mean_and_required_items_decide_by_majority() -> None:
    rubric = _rubric([(0.5, [(1.0, True), (1.0, False)]), (0.5, [(2.0, False)])])
    judges = [
        scoring.score(rubric, v)
        for v in (
            {"c0i0": 1.0, "c0i1": 1.0, "c1i0": 2.0},  # 1.0
            {"c0i0": 1.0, "c0i1": 0.0, "c1i0": 1.0},  # 0.5
            {"c0i0": 0.0, "c0i1": 1.0, "c1i0": 2.0},
        )
    ]  # 0.75, required item unmet
    panel = scoring.consensus(rubric, judges)
    assert panel.score == (1.0 + 0.5 + 0.75) / 3
    assert panel.unmet_required == ()  # one judge of three is not a majority
    assert panel.passed is True
    assert panel.grade == "B"
    panel = scoring.consensus(rubric, judges[1:])
    assert panel.unmet_required == ()  # one of two: still not a majority
    failing = scoring.consensus(rubric, [judges[2], judges[2], judges[0]])
    assert failing.unmet_required == ("c0i0",)
    assert failing.passed is False
