"""Decisions of `--scylla-stop=decided` beyond one session's folder: shards merged by
`scylla report` decide again from all their runs, the tier tables carry each tier's
decisions, and `scylla compare` shows both sides' decisions per case × tier."""

from __future__ import annotations

from typing import Any

import numpy

from pytest_scylla.results.compare import decisions as compare_decisions
from pytest_scylla.results.decision_tables import tier_decisions
from pytest_scylla.results.decisions import merged_stop, recomputed
from pytest_scylla.results.sequential import decide_all

STOP = {"alpha": 0.05, "margin": 0.1, "reference": None, "max_runs": 30}


def _runs(rates: dict[str, float], made: dict[str, int], seed: int = 3) -> list[dict[str, Any]]:
    """runs.csv rows of case `c-1`: subtest (`T0-00`) -> pass rate, and the runs made."""
    rng = numpy.random.default_rng(seed)
    rows = []
    for subtest, rate in rates.items():
        tier, number = subtest.split("-")
        for run in range(1, made[subtest] + 1):
            passed = bool(rng.random() < rate)
            rows.append(
                {
                    "case_id": "c-1",
                    "tier": tier,
                    "subtest": number,
                    "run_number": run,
                    "outcome": "pass" if passed else "fail",
                    "passed": passed,
                    "cost_usd": 0.5,
                }
            )
    return rows


def test_merged_shards_decide_as_the_whole_and_missing_runs_pair_with_nothing() -> None:
    rates = {"T0-00": 0.1, "T1-01": 0.95, "T2-01": 0.1}
    rows = _runs(rates, dict.fromkeys(rates, 30))
    whole = {f"c-1-{r['tier']}-{r['subtest']}": {} for r in rows}  # the rule run on every outcome
    for r in rows:
        whole[f"c-1-{r['tier']}-{r['subtest']}"][int(r["run_number"])] = r["passed"]
    refs = {"c-1-T1-01": "c-1-T0-00", "c-1-T2-01": "c-1-T0-00"}
    expected = decide_all(whole, refs, 30)  # type: ignore[arg-type]
    shards = [[r for r in rows if r["run_number"] % 2 == i] for i in (0, 1)]
    stop, why = merged_stop([STOP, STOP], [*shards[1], *shards[0]])
    assert why == ""
    assert stop is not None
    assert stop["merged"] == 2
    found = {d["cell"]: (d["decision"], d["decided_at"]) for d in stop["decisions"]}
    assert found == {c: (d.status, d.at if d.closed else None) for c, d in expected.items()}
    assert found["c-1-T1-01"][0] == "better"  # the positive control
    # a run never made (its shard had decided, or a budget stopped it) holds nothing up
    gap = [
        r for r in rows if not (r["subtest"] == "01" and r["tier"] == "T2" and r["run_number"] == 2)
    ]
    again = {d["cell"]: d for d in recomputed(gap, STOP)}
    assert again["c-1-T1-01"]["decision"] == "better"
    assert again["c-1-T2-01"]["runs"] == 29
    # the runs after a cell's last are not made yet, as in the session: a reference that
    # stopped at run 9 does not tell the rule that its comparisons end there
    rates = {"T0-00": 0.0, "T0-01": 0.0, "T1-01": 1.0, "T1-02": 1.0, "T1-03": 1.0}
    won = _runs(rates, {"T0-00": 9, "T0-01": 3, "T1-01": 10, "T1-02": 10, "T1-03": 9})
    found = {d["cell"]: d for d in recomputed(won, {**STOP, "max_runs": 12})}
    assert found["c-1-T1-01"]["decision"] == "better"
    assert found["c-1-T1-01"]["decided_at"] > 1


def test_merged_folders_with_different_rules_are_not_decided_again() -> None:
    rows = _runs({"T0-00": 0.5, "T1-01": 0.5}, {"T0-00": 5, "T1-01": 5})
    assert merged_stop([None, None], rows) == (None, "")
    for stops in ([STOP, None], [STOP, {**STOP, "alpha": 0.01}]):
        stop, why = merged_stop(stops, rows)
        assert stop is None
        assert "did not all stop by decision with the same settings" in why
    stop, why = merged_stop([{**STOP, "reference": "T3-01"}] * 2, rows)
    assert stop is None
    assert "runs no T3-01" in why


def test_each_tier_row_says_its_decisions() -> None:
    decided = [
        {"cell": "test-001-T5-02", "reference": "test-001-T0-00", "decision": "better"},
        {"cell": "test-001-T5-01", "reference": "test-001-T0-00", "decision": "better"},
        {"cell": "test-001-T0-01", "reference": "test-001-T0-00", "decision": "futile"},
        {"cell": "test-001-T1-01-opus", "reference": "test-001-T0-00-opus", "decision": "open"},
    ]
    assert tier_decisions(decided) == {
        "T0": "reference; 1 futile",
        "T1": "1 open",
        "T5": "2 better",
    }


def test_compare_shows_each_sides_decisions_per_case_and_tier() -> None:
    rows: list[dict[str, Any]] = [
        {"case_id": "test-001", "tier": "T5", "metric": "pass_rate"},
        {"case_id": "test-001", "tier": "T0", "metric": "pass_rate"},
        {"case_id": "test-002", "tier": "T5", "metric": "pass_rate"},
    ]
    base = [
        {"cell": "test-001-T5-02", "decision": "better", "decided_at": 9},
        {"cell": "test-001-T0-01", "decision": "futile", "decided_at": 4},
    ]
    cand = [{"cell": "test-001-T5-02", "decision": "open", "decided_at": None}]
    compare_decisions.with_decisions(rows, {"base": base, "candidate": cand})
    assert rows[0]["decision"] == "T5-02 better at run 9 → open"
    assert rows[1]["decision"] == "T0-01 futile at run 4 → -"
    assert rows[2]["decision"] == ""
