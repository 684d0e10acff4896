"""The authors' published Haiku experiment (1,080 runs, `fixtures/haiku`) replayed as a
sequence of its own runs under `--scylla-stop=decided`: what the rule decides on real data and
what it would have spent, with a planted effect as the positive control."""

from __future__ import annotations

import csv
from pathlib import Path

from pytest_scylla.results.decisions import replay

HAIKU = Path(__file__).parents[2] / "fixtures" / "haiku" / "runs.csv"


def _rows() -> list[dict[str, str]]:
    with HAIKU.open(encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_three_runs_per_subtest_can_decide_nothing() -> None:
    """357 comparisons of 3 runs each: no sequence can reach the family's bar, so each cell
    stops after its first run, and the experiment's first runs are all it would have bought."""
    rows = _rows()
    table, counts = replay(rows, "subtest")
    assert len(table) == 3 * 119
    assert {(r["decision"], r["decided_at"]) for r in table} == {("futile", 1)}
    first = [float(r["cost_usd"]) for r in rows if r["run_number"] == "1"]
    assert counts["runs"] == 1080
    assert counts["runs_used"] == len(first) == 360
    assert counts["cost_used_usd"] == round(sum(first), 4)


def test_tiers_pooled_find_no_difference_and_stop_early() -> None:
    """Each tier's runs pooled against T0's, case by case: no tier is told apart from T0 (the
    published pass rates are 92-100 % against T0's 90-96 %), and every comparison stops as
    futile before its runs run out."""
    table, counts = replay(_rows(), "tier")
    assert len(table) == 3 * 6
    assert {r["decision"] for r in table} == {"futile"}
    assert all(r["runs_used"] < r["runs"] for r in table if r["runs"] > 3)
    assert 0 < counts["runs_used"] < counts["runs"]
    assert 0 < counts["cost_used_usd"] < counts["cost_usd"]


def test_a_planted_effect_in_the_same_data_is_decided() -> None:
    """The positive control: test-001's T5 made to fail every run, and T2 made to pass every
    run against a T0 made to fail half its runs; the replay finds T5 worse and T2 better."""
    rows = _rows()
    for row in rows:
        if row["experiment"] == "test-001" and row["tier"] == "T5":
            row["passed"] = "False"
        if row["experiment"] == "test-001" and row["tier"] == "T0" and int(row["subtest"]) % 2:
            row["passed"] = "False"
    table, _ = replay(rows, "tier")
    found = {r["cell"]: r["decision"] for r in table}
    assert found["test-001-T5"] == "worse"
    assert found["test-001-T2"] == "better"
    assert found["test-002-T5"] == "futile"  # the other cases are as published
