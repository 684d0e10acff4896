"""Each tier's Cost-of-Pass with its interval (`results.cop_interval.group`, through
`metrics.group_summary`): a bootstrap of the runs within each case that covers the true CoP, the
zero-pass rule (no finite CoP: no interval, said in words, never `inf` or `nan`), an open upper
end, and the interval in the terminal summary, `tables.md`, `summary.json`, `subtests.csv` and
`report.html`, beside the existing columns."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy
import pytest

from pytest_scylla.cli.main import main
from pytest_scylla.results import cop_interval, metrics


def _runs(
    passes: list[bool], cost: float | list[float] = 0.1, case: str = "a", tier: str = "T0"
) -> list[dict[str, object]]:
    costs = cost if isinstance(cost, list) else [cost] * len(passes)
    return [
        {
            "tier": tier,
            "case_id": case,
            "subtest": "01",
            "outcome": "pass" if p else "fail",
            "passed": p,
            "cost_usd": c,
            "score": 1.0 if p else 0.0,
            "grade": "A" if p else "F",
        }
        for p, c in zip(passes, costs, strict=True)
    ]


def test_the_interval_covers_the_true_cost_of_pass() -> None:
    """Three cases (pass rates 0.3 / 0.5 / 0.8, mean costs 0.05 / 0.10 / 0.20), 20 runs each,
    300 simulated tiers: the 95 % interval holds the true pooled CoP (mean cost over pass rate)
    in 90-99 % of them (93 % here). Control: the same intervals hold a CoP 60 % higher in
    fewer than 40 % (22 % here)."""
    rng = numpy.random.default_rng(5)
    rates, means = (0.3, 0.5, 0.8), (0.05, 0.10, 0.20)
    truth = numpy.mean(means) / numpy.mean(rates)
    held = held_wrong = 0
    for _ in range(300):
        rows = []
        for case, (p, mu) in enumerate(zip(rates, means, strict=True)):
            passes = list(rng.random(20) < p)
            rows += _runs(passes, list(rng.exponential(mu, 20)), case=str(case))
        low, high = cop_interval.group(rows)
        assert low is not None
        assert high is not None
        held += low <= truth <= high
        held_wrong += low <= 1.6 * truth <= high
    assert 0.90 <= held / 300 <= 0.99
    assert held_wrong / 300 < 0.4


def test_the_bootstrap_is_stratified_by_case() -> None:
    """One case always passes (costs 0.05 and 0.15 in turn), the other never (0.10): resampled
    within each case the pass rate stays 1/2 and only the cost varies, so the interval is
    narrow around the CoP of 0.20. Control: the same runs as one case, resampled together, let
    the pass rate vary too: an interval over three times as wide."""
    easy = _runs([True] * 10, cost=[0.05, 0.15] * 5, case="easy")
    both = easy + _runs([False] * 10, case="hard")
    (tier,) = metrics.group_summary(both)
    assert tier["cop"] == pytest.approx(0.2)
    assert tier["cop_low"] < 0.2 < tier["cop_high"]
    (pooled,) = metrics.group_summary([{**r, "case_id": "one"} for r in both])
    assert pooled["cop"] == pytest.approx(0.2)
    assert pooled["cop_high"] - pooled["cop_low"] > 3 * (tier["cop_high"] - tier["cop_low"])


def test_a_tier_that_never_passed_has_no_finite_cop_and_no_interval() -> None:
    """The zero-pass rule: no pass, no finite Cost-of-Pass; the interval is none and is shown as
    "no pass", never as inf or nan. Control: one pass gives a number."""
    (never,) = metrics.group_summary(_runs([False] * 8))
    assert (never["cop_low"], never["cop_high"]) == (None, None)
    assert cop_interval.shown(never) == "no pass"
    (once,) = metrics.group_summary(_runs([True] + [False] * 7))
    assert once["cop_low"] is not None
    assert once["cop_low"] < once["cop"] == pytest.approx(0.8)


def test_an_upper_end_that_a_passless_resample_reaches_is_left_open() -> None:
    """One pass in 20 runs: a third of the resamples pass nowhere, so no upper bound; the lower
    is a number. Control: 10 passes in 20 bound both ends."""
    (rare,) = metrics.group_summary(_runs([True] + [False] * 19))
    assert rare["cop_high"] is None
    assert rare["cop_low"] == pytest.approx(0.1 / (3 / 20))  # 3 passes: the 2.5th percentile
    assert cop_interval.shown(rare) == f"≥ ${rare['cop_low']:.4f}"
    (half,) = metrics.group_summary(_runs([True, False] * 10))
    assert half["cop_low"] < half["cop"] < half["cop_high"]
    assert cop_interval.shown(half) == f"[${half['cop_low']:.4f}, ${half['cop_high']:.4f}]"


def test_resamples_that_do_not_vary_give_no_interval() -> None:
    """A bootstrap of one run per case, or of runs alike in cost and outcome, cannot vary: no
    interval ("-") rather than one of zero width. Control: costs that differ give one."""
    for alike in (_runs([True], case="a") + _runs([False], case="b"), _runs([True] * 10)):
        (tier,) = metrics.group_summary(alike)
        assert (tier["cop_low"], tier["cop_high"]) == (None, None)
        assert cop_interval.shown(tier) == "-"
    (varied,) = metrics.group_summary(_runs([True] * 10, cost=[0.05, 0.15] * 5))
    assert varied["cop_low"] < 0.1 < varied["cop_high"]


def test_the_reports_show_the_interval_beside_the_existing_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`scylla report` of a T0 that never passed and a T1 that passed half its runs: the
    terminal adds one line of intervals under the unchanged tier table, `tables.md` and
    `subtests.csv` add `cop_low`/`cop_high` columns, `summary.json` holds them as numbers or
    null (never "inf" or NaN there), `report.html` a "CoP 95% CI" column."""
    rows = _runs([False] * 6, tier="T0") + _runs([True, False] * 3, tier="T1", cost=0.2)
    folder = tmp_path / "exp"
    folder.mkdir()
    with (folder / "runs.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=[*metrics.RUN_COLUMNS])
        writer.writeheader()
        for n, r in enumerate(rows, 1):
            writer.writerow({"experiment": "exp", "run_number": n, **r})
    assert main(["report", str(folder), "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    (t1,) = (
        t
        for t in json.loads((tmp_path / "out" / "summary.json").read_text())["tiers"]
        if t["tier"] == "T1"
    )
    assert t1["cop_low"] < 0.4 < t1["cop_high"]
    line = f"T1 [${t1['cop_low']:.4f}, ${t1['cop_high']:.4f}]"
    assert f"CoP 95% CI (bootstrap of the runs within each case): T0 no pass; {line}" in printed
    assert "T0        6            0% [0%, 46%]   0.00     F   $0.1000         ∞  n=6" in printed
    summary = (tmp_path / "out" / "summary.json").read_text()
    assert '"cop_low": null' in summary
    assert "NaN" not in summary
    assert "Infinity" not in summary
    tables = (tmp_path / "out" / "tables.md").read_text()
    assert "| mean_cost | cop | cop_low | cop_high | cop_per_case_mean |" in tables
    assert f"| 0.2000 | 0.4000 | {t1['cop_low']:.4f} | {t1['cop_high']:.4f} |" in tables
    assert "| 0.1000 | ∞ | - | - |" in tables
    with (tmp_path / "out" / "subtests.csv").open() as handle:
        subtests = {r["tier"]: r for r in csv.DictReader(handle)}
    assert (subtests["T0"]["cop"], subtests["T0"]["cop_low"]) == ("inf", "")
    assert float(subtests["T1"]["cop_low"]) == pytest.approx(t1["cop_low"])
    html = (tmp_path / "out" / "report.html").read_text()
    assert "<th>CoP 95% CI" in html
    assert "<td>no pass" in html
