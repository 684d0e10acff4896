"""Sequential decisions (`results.sequential`) and the comparisons of a session read from run
records (`results.decisions`): valid however often they are looked at, the same whatever order
the runs finished in, and stated in words."""

from __future__ import annotations

import json
from pathlib import Path

import numpy
import pytest

from pytest_scylla.core.runspec import RunKey
from pytest_scylla.results import decisions as dec
from pytest_scylla.results import sequential
from pytest_scylla.results.sequential import decide_all, interval, log_e


def _family(
    cells: dict[str, list[bool | None]], limit: int, intervals: bool = True
) -> dict[str, object]:
    outcomes = {c: dict(enumerate(runs, 1)) for c, runs in cells.items()}
    refs = {c: "ref" for c in cells if c != "ref"}
    return decide_all(outcomes, refs, limit, intervals=intervals)  # type: ignore[return-value]


def test_a_cell_that_always_wins_is_better_and_one_that_always_loses_worse() -> None:
    found = _family({"ref": [False] * 20, "a": [True] * 20, "b": [False] * 20}, 20)
    assert found["a"].status == "better"  # type: ignore[attr-defined]
    assert found["a"].high > 0.9  # type: ignore[attr-defined]
    found = _family({"ref": [True] * 20, "a": [False] * 20}, 20)
    assert found["a"].status == "worse"  # type: ignore[attr-defined]


def test_ties_only_end_futile_not_decided() -> None:
    """No discordant pair: no evidence either way; once even all runs left could not reach the
    bar, the comparison is futile, and never better, worse or (at this n) equivalent."""
    found = _family({"ref": [True] * 30, "a": [True] * 30}, 30)
    assert found["a"].status == "futile"  # type: ignore[attr-defined]
    assert 1 < found["a"].at < 30  # type: ignore[attr-defined]


def test_equal_cells_are_almost_never_called_different() -> None:
    """The family-wise error under the null, by simulation: 8 cells equal to the reference,
    at most 30 runs, 200 replications: wrong decisions in at most 5 % of them."""
    rng = numpy.random.default_rng(11)
    wrong = 0
    for _ in range(200):
        cells = {"ref": list(rng.random(30) < 0.5)}
        cells |= {f"c{i}": list(rng.random(30) < 0.5) for i in range(8)}
        found = _family(cells, 30, intervals=False)  # type: ignore[arg-type]
        wrong += any(d.status in ("better", "worse") for d in found.values())  # type: ignore[attr-defined]
    assert wrong <= 10


def test_closed_testing_decides_sooner_once_others_are_decided() -> None:
    """e-Holm: with three clear winners, each is decided at a lower bar than Bonferroni's, so
    no later than alone among many undecided cells."""
    winners = {f"w{i}": [True] * 20 for i in range(3)}
    together = _family({"ref": [False] * 20, **winners}, 20)
    alone = _family(
        {"ref": [False] * 20, "w0": [True] * 20, **{f"t{i}": [False] * 20 for i in range(2)}}, 20
    )
    assert together["w0"].at <= alone["w0"].at  # type: ignore[attr-defined]


def test_a_run_not_yet_made_holds_every_decision_at_its_number() -> None:
    """The decisions never depend on which run finished first: with run 3 of one cell still
    missing, nothing is decided from runs 3 on, for any cell."""
    full = {"ref": [False] * 20, "a": [True] * 20, "b": [True] * 20}
    gap = {"ref": dict(enumerate(full["ref"], 1)), "a": dict(enumerate(full["a"], 1))}
    gap["b"] = {n: v for n, v in enumerate(full["b"], 1) if n != 3}
    held = decide_all(gap, {"a": "ref", "b": "ref"}, 20)  # type: ignore[arg-type]
    assert all(d.status == "open" and d.at == 2 for d in held.values())
    assert _family(full, 20)["a"].status == "better"  # type: ignore[index, attr-defined]


def test_a_run_made_but_not_counted_pairs_with_nothing() -> None:
    runs: list[bool | None] = [True] * 20
    runs[4] = None  # an infra_error
    found = _family({"ref": [False] * 20, "a": runs}, 20)
    clean = _family({"ref": [False] * 20, "a": [True] * 20}, 20)
    assert found["a"].at == clean["a"].at + 1  # type: ignore[attr-defined]


def test_the_interval_covers_the_true_difference() -> None:
    rng = numpy.random.default_rng(5)
    covered = 0
    for _ in range(200):
        diffs = (rng.random(25) < 0.7).astype(float) - (rng.random(25) < 0.4)
        low, high = interval(list(diffs), 0.05)
        covered += low <= 0.3 <= high
    assert covered >= 190


def test_the_sign_test_e_value_grows_with_wins_and_shrinks_with_losses() -> None:
    assert log_e(0, 0) == pytest.approx(0.0)
    assert log_e(10, 10) > log_e(9, 10) > log_e(5, 10)
    assert log_e(5, 10) < 0  # an even split is evidence against an effect


def _keys(case: str, subtests: list[str], runs: int) -> list[RunKey]:
    return [
        RunKey(case, s.split("-")[0], s.split("-")[1], n)
        for s in subtests
        for n in range(1, runs + 1)
    ]


def test_the_reference_defaults_to_the_first_subtest_of_the_lowest_tier() -> None:
    family = dec.plan(_keys("x", ["T5-01", "T0-01", "T0-00", "T1-02"], 3), None, 3, 0.05, 0.1)
    assert set(family.references.values()) == {"x-T0-00"}
    assert set(family.references) == {"x-T0-01", "x-T1-02", "x-T5-01"}
    with pytest.raises(ValueError, match=r"case x runs no T2-01 .*\(T0-00, T0-01, T1-02, T5-01\)"):
        dec.plan(_keys("x", ["T5-01", "T0-01", "T0-00", "T1-02"], 3), "T2-01", 3, 0.05, 0.1)


def _record(out: Path, key: RunKey, outcome: str, cost: float = 0.1) -> None:
    folder = out / "runs" / key.folder
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "run.json").write_text(json.dumps({"outcome": outcome, "cost_usd": cost}))


def test_decisions_are_read_from_the_records_and_said_in_words(tmp_path: Path) -> None:
    keys = _keys("x", ["T0-00", "T0-01", "T1-01"], 20)
    family = dec.plan(keys, None, 20, 0.05, 0.1)
    for key in keys:
        passed = key.subtest == "T0-01" or (key.subtest == "T1-01" and key.run % 2 == 1)
        if key.run <= 12:
            _record(tmp_path, key, "pass" if passed else "fail")
    found = family.decisions(tmp_path)
    assert found["x-T0-01"].status == "better"
    assert found["x-T1-01"].status == "open"  # 6 of 12 won so far; 8 runs left could still tell
    stop = dec.stop("x-T0-01", "x-T0-00", found["x-T0-01"])
    assert stop.kind == "decided"  # the aggregator tells these skips apart by it, not the words
    assert stop.reason.startswith("decided after 8 runs: ")
    assert "x-T0-01 better than x-T0-00 on pass rate" in stop.reason
    rows = {r["cell"]: r for r in dec.table(family, tmp_path)}
    assert rows["x-T0-01"]["runs"] == 12
    assert rows["x-T0-01"]["runs_saved"] == 8
    assert rows["x-T0-01"]["cost_saved_usd"] == pytest.approx(0.8)
    # a record still being judged (judge_error until the panel answers) is not an outcome:
    # run 13 of the reference holds the open comparison at 12 pairs until it is counted
    ref13, t13 = RunKey("x", "T0", "00", 13), RunKey("x", "T1", "01", 13)
    _record(tmp_path, t13, "fail")
    _record(tmp_path, ref13, "judge_error")
    assert family.decisions(tmp_path)["x-T1-01"].runs == 12
    _record(tmp_path, ref13, "fail")
    assert family.decisions(tmp_path)["x-T1-01"].runs == 13


def test_the_reports_show_the_decisions_as_text() -> None:
    from pytest_scylla.results import decision_tables

    row = {
        "cell": "x-T0-01<script>",
        "reference": "x-T0-00",
        "decision": "better",
        "decided_at": 9,
        "low": 0.21,
        "high": 1.0,
        "runs": 9,
        "runs_saved": 21,
        "cost_saved_usd": 2.1,
    }
    assert "| x-T0-01<script> | x-T0-00 | better | 9 | [+0.21, +1.00] | 9 | 21 | 2.1000 |" in (
        decision_tables.markdown([row])
    )
    page = decision_tables.html([row])
    assert "x-T0-01&lt;script&gt;" in page
    assert "<script>" not in page
    assert decision_tables.markdown([]) == decision_tables.html([]) == ""


def test_subtests_csv_rows_carry_their_cells_decision() -> None:
    from pytest_scylla.results.decision_tables import with_decisions

    rows = [{"case_id": "x", "tier": "T0", "subtest": s} for s in ("00", "01", "02")]
    decided = [
        {"cell": "x-T0-01", "reference": "x-T0-00", "decision": "better", "decided_at": 9},
        {"cell": "x-T0-02", "reference": "x-T0-00", "decision": "open", "decided_at": None},
    ]
    assert [r["decision"] for r in with_decisions(rows, decided)] == [
        "reference",
        "better at run 9",
        "open",
    ]


def test_equivalence_out_of_reach_leaves_the_whole_alpha_to_better_and_worse() -> None:
    """Within 30 runs not even 30 tied pairs could show equivalence at a tenth of alpha over 8
    comparisons, so none of alpha is kept for it; at 200 runs it could, and keeps its tenth."""
    assert not sequential.equivalence_reachable(30, 0.05 * 0.1 / 8, 0.10)
    assert sequential.shares(0.05, 8, 30, 0.10) == (0.05, 0.0)
    assert sequential.equivalence_reachable(200, 0.05 * 0.1 / 8, 0.10)
    assert sequential.shares(0.05, 8, 200, 0.10) == pytest.approx((0.045, 0.05 * 0.1 / 8))


def test_a_comparison_at_the_full_alphas_bar_is_decided_when_equivalence_is_out_of_reach(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One loss, then ten wins: the comparison's two hypotheses (better, worse) hold a mean
    e-value between 1/0.05 and 1/0.045, the bar of e-Holm for a family of two. With at most
    30 runs equivalence is out of reach, so the test has the whole alpha and decides
    `better` at run 11. Controls: the old split (a tenth of alpha kept for equivalence anyway)
    and a maximum at which equivalence is reachable both leave it open on the same outcomes."""
    cells: dict[str, list[bool | None]] = {"ref": [True] + [False] * 10, "a": [False] + [True] * 10}
    assert 1 / 0.05 <= (sequential._e(10, 11) + sequential._e(1, 11)) / 2 < 1 / 0.045
    found = _family(cells, 30)["a"]
    assert (found.status, found.at) == ("better", 11)  # type: ignore[attr-defined]
    assert _family(cells, 200)["a"].status == "open"  # type: ignore[attr-defined]
    monkeypatch.setattr(
        sequential,
        "shares",
        lambda alpha, m, limit, margin: (alpha * 0.9, alpha * 0.1 / m),
    )
    assert _family(cells, 30)["a"].status == "open"  # type: ignore[attr-defined]
