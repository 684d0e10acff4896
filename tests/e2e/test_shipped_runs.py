"""The shipped case test-001 end to end through the real CLI, for every shipped subtest, with the
oracle: the reference solution passes everywhere and the ablation holds; noop and wrong fail."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_scylla.formats.tiers import TierSet

from ..conftest import shipped_session

ROOT = Path(__file__).resolve().parents[2]
SUBTESTS = [s.ref for t in TierSet(ROOT / "tiers").tiers.values() for s in t.subtests]


def _run(pytester: pytest.Pytester, out: Path, cache: str, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        str(ROOT / "cases" / "test-001"),
        f"--rootdir={ROOT}",
        "-p",
        "no:cacheprovider",
        f"--scylla-tiers-dir={ROOT / 'tiers'}",
        f"--scylla-rubrics-dir={ROOT / 'rubrics'}",
        f"--scylla-out={out}",
        cache,
        *args,
    )


@pytest.mark.slow
def test_test_001_passes_under_every_shipped_subtest(
    tmp_path_factory: pytest.TempPathFactory, oracle: list[str]
) -> None:
    """Read from the slow tier's shipped session under Claude Code (shared with
    tests/e2e/test_other_clis.py, which checks its totals)."""
    out, _, _ = shipped_session("claude-code", tmp_path_factory.getbasetemp(), oracle[1])
    recs = [
        r
        for r in (json.loads(p.read_text()) for p in out.glob("runs/*/run.json"))
        if r["case"] == "test-001"
    ]
    assert sorted(r["subtest"] for r in recs) == sorted(SUBTESTS)
    for rec in recs:
        assert rec["outcome"] == "pass", rec["run_key"]
        assert rec["ablation"]["problems"] == [], rec["run_key"]
        assert rec["tokens"]["total_tokens"] > 0
        assert set(rec["ablation"]["observed"]["mcp_servers"]) == set(
            rec["declared"]["mcp_servers"]
        )
        assert set(rec["declared"]["skills"]) <= set(rec["ablation"]["observed"]["skills"])
        assert set(rec["declared"]["agents"]) <= set(rec["ablation"]["observed"]["agents"])
        # the oracle hands the work down (main -> [lead ->] writer): two calls per level
        delegates = rec["oracle_script"]["delegates"]
        assert rec["api_calls"] >= 2 + 2 * len(delegates), rec["run_key"]
        if rec["tier"] == "T4":  # hierarchies: the lead delegates again (nested sub-agents)
            assert len(delegates) == 2, rec["run_key"]


@pytest.mark.slow  # the mini project's runs cover noop and wrong in the default suite
@pytest.mark.parametrize(("mode", "subtests"), [("noop", ["T0-01"]), ("wrong", ["T3-01", "T5-02"])])
def test_test_001_fails_with_the_noop_and_wrong_oracles(
    pytester: pytest.Pytester, oracle: list[str], mode: str, subtests: list[str]
) -> None:
    out = pytester.path / "out"
    result = _run(
        pytester,
        out,
        oracle[1],
        f"--scylla-oracle={mode}",
        "-p",
        "no:xdist",
        "-k",
        " or ".join(subtests),
    )
    result.assert_outcomes(failed=len(subtests))
    result.stdout.fnmatch_lines(
        [
            "fail: *required items not met: *F2*",
            "  judge * functional * score",
            "  claude-opus-4-8 *",
            "  consensus * grade *",
            "  weak * oracle judge: * checks passed",
            "  FAIL check prints-greeting *",
        ]
    )
    recs = [json.loads(p.read_text()) for p in out.glob("runs/*/run.json")]
    assert {r["outcome"] for r in recs} == {"fail"}
    for rec in recs:
        unmet = {i["id"] for i in rec["check_items"] if not i["met"]}
        assert {"F1", "F2", "F3"} & unmet  # a required check item fails
