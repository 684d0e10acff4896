"""The typed rows of results/ (results/rows.py) and the judge entries of a record
(core/record.py) declare exactly the keys the code writes, in the order it writes them."""

from __future__ import annotations

import dataclasses

from pytest_scylla.core.record import CategoryEntry, JudgeEntry, RunRecord
from pytest_scylla.judging.judges import JudgeResult
from pytest_scylla.judging.scoring import CategoryScore
from pytest_scylla.results import metrics
from pytest_scylla.results.rows import CriterionRow, GroupKeys, GroupSummary, JudgeRow, RunRow

CATEGORY: CategoryEntry = {"name": "functional", "weight": 1.0, "achieved": 2, "max": 2, "score": 1}
RECORD: RunRecord = {
    "run_key": "case/T0-00-r1",
    "case": "case",
    "tier": "T0",
    "subtest": "T0-00",
    "run": 1,
    "model": "claude-sonnet-4-5",
    "outcome": "pass",
    "score": 0.9,
    "judges": [
        {"judge_model": "m", "judge_number": 1, "valid": True, "categories": [CATEGORY]},
    ],
}


def test_run_row_is_run_columns() -> None:
    assert list(RunRow.__annotations__) == metrics.RUN_COLUMNS
    assert set(metrics.run_row(RECORD, "exp")) == set(metrics.RUN_COLUMNS)


def test_judge_and_criterion_rows() -> None:
    (judge,) = metrics.judge_rows(RECORD, "exp")
    (criterion,) = metrics.criteria_rows(RECORD, "exp")
    assert list(judge) == list(JudgeRow.__annotations__)  # judges.csv's header
    assert list(criterion) == list(CriterionRow.__annotations__)


def test_group_summary_keys() -> None:
    for keys in (("tier",), ("experiment", "agent_model", "case_id", "tier", "subtest")):
        (row,) = metrics.group_summary([metrics.run_row(RECORD, "exp")], keys)
        stats = [k for k in GroupSummary.__annotations__ if k in GroupSummary.__required_keys__]
        assert list(row) == [*keys, *stats]
        assert set(keys) <= set(GroupKeys.__annotations__)


def test_judge_entry_holds_a_judge_result() -> None:
    fields = {f.name for f in dataclasses.fields(JudgeResult)}
    assert fields <= set(JudgeEntry.__annotations__)
    assert [f.name for f in dataclasses.fields(CategoryScore)] == list(
        CategoryEntry.__annotations__
    )
