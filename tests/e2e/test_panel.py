"""`--scylla-panel=adaptive`: the cheaper judges first, the most expensive one only when they
leave the verdict open. Measured against the full panel on the same runs, with an oracle judge
that disagrees on purpose (`SCYLLA_ORACLE_JUDGE_HARSH`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_scylla.cli.main import main

from ..conftest import workers

HARSH = "claude-haiku-4-5"  # the cheapest default judge awards nothing on half the runs
STRONGEST = "claude-opus-4-8"


def _records(out: Path) -> dict[str, dict[str, Any]]:
    return {p.parent.name: json.loads(p.read_text()) for p in out.glob("runs/*/run.json")}


@pytest.mark.slow  # (about 25 s: two sessions of the mini project's runs)
@pytest.mark.each_sandbox
def test_an_adaptive_panel_asks_the_strongest_judge_only_when_the_others_disagree(
    mini: Path, pytester: pytest.Pytester, oracle: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCYLLA_ORACLE_JUDGE_HARSH", f"{HARSH}:0.5")
    for mode in ("full", "adaptive"):
        done = pytester.runpytest(
            "cases",
            "-k",
            "alpha and T0",
            *workers(0),
            *oracle,
            "--scylla-runs=2",
            f"--scylla-panel={mode}",
            f"--scylla-out={mini / mode}",
        )
        done.assert_outcomes(passed=6)
    full, adaptive = _records(mini / "full"), _records(mini / "adaptive")
    assert sorted(full) == sorted(adaptive)
    escalated = 0
    for key, rec in adaptive.items():
        scores = {j["judge_model"]: j["score"] for j in rec["judges"]}
        harsh = scores[HARSH] < scores["claude-sonnet-5"]  # its judge items all zero
        assert rec["panel"]["escalated"] is harsh, key
        assert (STRONGEST in scores) is harsh
        assert rec["panel"]["reason"] == (
            f"scores {scores['claude-sonnet-5'] - scores[HARSH]:.2f} apart (> 0.15)"
            if harsh
            else ""
        )
        assert rec["panel"]["skipped"] == ([] if harsh else [STRONGEST])
        assert [j["judge_number"] for j in rec["judges"]] == ([1, 2, 3] if harsh else [2, 3])
        assert len(full[key]["judges"]) == 3
        assert "panel" not in full[key]
        escalated += harsh
    assert 0 < escalated < len(adaptive)  # both paths taken
    stats = json.loads((mini / "adaptive" / "statistical_results.json").read_text())
    assert stats["adaptive_panel"]["escalated"] == escalated
    assert (
        json.loads((mini / "full" / "statistical_results.json").read_text())["adaptive_panel"]
        is None
    )
    # against the full panel: the same verdict on every run, for less
    assert (
        main(["compare", str(mini / "full"), str(mini / "adaptive"), "--out", str(mini / "cmp")])
        == 0
    )
    verdicts = json.loads((mini / "cmp" / "compare.json").read_text())["verdicts"]
    assert (verdicts["common_runs"], verdicts["agreement"]) == (6, 1.0)
    cost = verdicts["judge_cost_per_run"]
    assert cost["candidate"] < cost["base"]
    conditions = json.loads((mini / "cmp" / "compare.json").read_text())["conditions"]
    assert {"what": "option panel", "base": "full", "candidate": "adaptive"} in conditions


def test_a_bad_panel_mode_is_a_usage_error(mini: Path, pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("cases", "--co", "--scylla-panel=cheap")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --scylla-panel='cheap': expected full or adaptive"])
