"""The controller's aggregation and exports: the same records at -n 0 and -n 2, written as they
arrive, with a tier table at the end.

Here the in-process tests; the sessions are in `tests/e2e/test_aggregate.py`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_scylla.results import metrics


def test_tier_summary_cop_and_intervals() -> None:
    rows = [
        {
            "tier": "T1",
            "outcome": "pass",
            "passed": True,
            "score": 0.9,
            "cost_usd": 0.2,
            "grade": "A",
        }
    ] * 3 + [
        {
            "tier": "T1",
            "outcome": "fail",
            "passed": False,
            "score": 0.3,
            "cost_usd": 0.2,
            "grade": "D",
        },
        {
            "tier": "T1",
            "outcome": "infra_error",
            "passed": False,
            "score": None,
            "cost_usd": 0.0,
            "grade": None,
        },
        {
            "tier": "T0",
            "outcome": "fail",
            "passed": False,
            "score": 0.1,
            "cost_usd": 0.1,
            "grade": "F",
        },
    ]
    t0, t1 = metrics.group_summary(rows)
    assert (t1["n"], t1["excluded"], t1["passes"]) == (4, 1, 3)
    assert t1["pass_rate"] == 0.75
    assert t1["cop"] == pytest.approx(0.2 / 0.75)
    assert t1["ci_method"] == "clopper-pearson"
    assert t1["ci_low"] < 0.75 < t1["ci_high"]
    assert t1["modal_grade"] == "A"
    assert "n=4 < 10" in t1["warning"]
    assert t0["cop"] == float("inf")
    assert metrics.fmt_cop(t0["cop"]) == "∞"
    assert metrics.frontier([t0, t1]) == ("T1", pytest.approx(0.2 / 0.75))
    many = [
        {
            "tier": "T2",
            "outcome": "pass",
            "passed": i % 3 != 0,
            "score": 0.5,
            "cost_usd": 0.1,
            "grade": "C",
        }
        for i in range(30)
    ]
    [t2] = metrics.group_summary(many)
    assert t2["ci_method"] == "bca"
    assert t2["ci_low"] < t2["pass_rate"] < t2["ci_high"]


def test_an_item_whose_worker_crashed_is_a_crashed_row_not_a_hole(tmp_path: Path) -> None:
    from pytest_scylla.config.settings import Settings
    from pytest_scylla.results.aggregate import Aggregator

    agg = Aggregator(tmp_path, Settings())
    crash = pytest.TestReport(
        "cases/test-001/test.yaml::test-001[T5-02-r3]",
        ("x", 0, "x"),
        {},
        "failed",
        "worker 'gw1' crashed",
        "???",
    )
    agg.pytest_runtest_logreport(crash)
    other = pytest.TestReport("tests/test_x.py::test_y", ("x", 0, "x"), {}, "failed", "", "call")
    agg.pytest_runtest_logreport(other)  # not a run: ignored
    [line] = (tmp_path / "runs.jsonl").read_text().splitlines()
    rec = json.loads(line)
    assert rec["outcome"] == "infra_error"
    assert rec["crashed"] is True
    assert (rec["case"], rec["tier"], rec["subtest"], rec["run"]) == ("test-001", "T5", "T5-02", 3)
    rows = [metrics.run_row(rec, "x")]
    [tier] = metrics.group_summary(rows)
    assert (tier["tier"], tier["n"], tier["excluded"]) == ("T5", 0, 1)


def _skipped(nodeid: str, reason: str, marks: list[tuple[str, object]]) -> pytest.TestReport:
    """The setup report of a run item pytest skipped, as the controller receives it."""
    where = ("x", 0, f"Skipped: {reason}")
    return pytest.TestReport(
        nodeid, ("x", 0, "x"), {}, "skipped", where, "setup", user_properties=marks
    )


@pytest.mark.parametrize(
    "reason",
    [
        "decided after 12 runs: x-T0-01 better than x-T0-00 on pass rate",
        "no longer needed: the comparison closed",  # reworded: still stopped, not a gap
    ],
)
def test_a_stopped_run_is_counted_by_its_marker_not_by_its_wording(
    tmp_path: Path, reason: str
) -> None:
    from pytest_scylla.config.settings import Settings
    from pytest_scylla.core.record import STOP_PROPERTY
    from pytest_scylla.results.aggregate import Aggregator

    agg = Aggregator(tmp_path, Settings())
    marked = [(STOP_PROPERTY, "decided")]
    agg.pytest_runtest_logreport(_skipped("c/test.yaml::c[T0-01-r3]", reason, marked))
    assert (agg.stopped, dict(agg.skips)) == (1, {})
    # control: the same words on a skip without the marker are a gap in the results
    agg.pytest_runtest_logreport(_skipped("c/test.yaml::c[T0-01-r4]", reason, []))
    assert agg.stopped == 1
    assert sum(agg.skips.values()) == 1
