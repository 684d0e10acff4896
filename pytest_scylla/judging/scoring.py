"""Scoring in code, never by a judge's own arithmetic.

Item points -> category scores (N/A items drop out of both achieved and max) -> a judge's score
(weighted sum, weights renormalised over categories that still have items) -> the panel's
consensus (mean of valid judges). Pass = consensus >= the rubric's threshold and every required
item met. Pure functions over plain data: no I/O.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from pytest_scylla.formats.rubric import Rubric

NA = "N/A"
EPSILON = 1e-9


@dataclass(frozen=True)
class CategoryScore:
    name: str
    weight: float
    achieved: float
    max: float
    score: float | None  # None: every item of the category was N/A


@dataclass(frozen=True)
class Scored:
    """One judge's verdict, scored."""

    score: float
    impl_rate: float | None
    categories: tuple[CategoryScore, ...]
    required_met: bool
    unmet_required: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def category_totals(items: Mapping[str, tuple[Any, float]]) -> tuple[float, float]:
    """(achieved, max) of a category's items {id: (achieved or 'N/A', max)}, N/A left out."""
    achieved = sum(float(a) for a, _ in items.values() if a != NA)
    maximum = sum(float(m) for a, m in items.values() if a != NA)
    return achieved, maximum


def clamp(value: float, points: float) -> float:
    return min(max(float(value), 0.0), float(points))


def score(rubric: Rubric, achieved: Mapping[str, Any]) -> Scored:
    """Score `achieved` ({item id: points or 'N/A'}) against the rubric. Missing items count 0;
    points are clamped to [0, item points]."""
    categories = []
    total_achieved = total_max = 0.0
    unmet = []
    for cat in rubric.categories:
        items = {}
        for item in cat.items:
            value = achieved.get(item.id, 0.0)
            if value != NA:
                value = clamp(value, item.points)
            items[item.id] = (value, item.points)
            if item.required and value != NA and value < item.points - EPSILON:
                unmet.append(item.id)
        a, m = category_totals(items)
        total_achieved += a
        total_max += m
        categories.append(CategoryScore(cat.name, cat.weight, a, m, a / m if m > 0 else None))
    weighted = [(c.weight, c.score) for c in categories if c.score is not None]
    weight_sum = sum(w for w, _ in weighted)
    final = sum(w * s for w, s in weighted) / weight_sum if weight_sum > 0 else 0.0
    return Scored(
        score=final,
        impl_rate=total_achieved / total_max if total_max > 0 else None,
        categories=tuple(categories),
        required_met=not unmet,
        unmet_required=tuple(unmet),
    )


@dataclass(frozen=True)
class Consensus:
    score: float
    impl_rate: float | None
    passed: bool
    grade: str
    unmet_required: tuple[str, ...]
    valid_judges: int


def consensus(rubric: Rubric, judges: Sequence[Scored]) -> Consensus:
    """The panel's verdict: mean score of the valid judges; a required item is unmet when a
    majority of them did not award it in full; impl rate is the judges' median (as in the
    paper's data)."""
    if not judges:
        raise ValueError("consensus needs at least one valid judge")
    mean = statistics.fmean(j.score for j in judges)
    rates = [j.impl_rate for j in judges if j.impl_rate is not None]
    votes: dict[str, int] = {}
    for judge in judges:
        for item in judge.unmet_required:
            votes[item] = votes.get(item, 0) + 1
    unmet = tuple(sorted(i for i, n in votes.items() if n * 2 > len(judges)))
    passed = mean >= rubric.pass_threshold - EPSILON and not unmet
    return Consensus(
        score=mean,
        impl_rate=statistics.median(rates) if rates else None,
        passed=passed,
        grade=rubric.grade(mean),
        unmet_required=unmet,
        valid_judges=len(judges),
    )


def check_items(rubric: Rubric, passed: Mapping[str, bool]) -> list[dict[str, Any]]:
    """The rubric's `check` items scored from the checks (`passed`: check name -> passed): full
    points when the item's check passed, none otherwise (a missing check is not met)."""
    rows = []
    for item in (i for i in rubric.items if i.kind == "check"):
        met = bool(passed.get(item.check or ""))
        rows.append(
            {
                "id": item.id,
                "category": item.category,
                "check": item.check,
                "points": item.points,
                "achieved": item.points if met else 0.0,
                "required": item.required,
                "met": met,
            }
        )
    return rows


def check_score(rows: Sequence[Mapping[str, Any]]) -> float | None:
    """The share of check-item points achieved (None without check items)."""
    total = sum(r["points"] for r in rows)
    return sum(r["achieved"] for r in rows) / total if total else None
