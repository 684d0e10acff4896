"""A synthetic experiment — 7 tiers x 3 cases x N runs x 3 judges of the real CLI against the
oracle in `mixed` mode (each run solves, botches or skips the task as its key decides) — gives
the same exports at -n 0 and at -n 4: every CSV and JSON file equal apart from timings. The slow
tier runs 2 runs a cell (42 runs, twice); the campaign tier the size of a small study, 10 (210)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ..conftest import export_rows, without_timings, workers

TIERS = {  # one subtest a tier, built from the mini project's resources
    "T0": "  01-rules:\n    description: one block\n    claude_md: [rules]\n",
    "T1": "  01-review:\n    description: one skill\n    skills: [review]\n",
    "T2": "  01-core:\n    description: core tools\n"
    "    tools: {allow: [Read, Write, Edit, Bash]}\n",
    "T3": "  01-helper:\n    description: one agent\n    agents: [helper]\n",
    "T4": "  01-lead:\n    description: agent and block\n    agents: [helper]\n"
    "    claude_md: [rules]\n",
    "T5": "  01-hybrid:\n    description: skill and agent\n    skills: [review]\n"
    "    agents: [helper]\n",
    "T6": "  01-all:\n    description: everything\n    skills: [review]\n    agents: [helper]\n"
    "    claude_md: [rules]\n    mcp_servers: [notes]\n",
}


@pytest.fixture
def synthetic(mini: Path) -> Path:
    for tier in (mini / "tiers").glob("T*.yaml"):
        tier.unlink()
    for tier, body in TIERS.items():
        (mini / "tiers" / f"{tier}.yaml").write_text(
            f"tier: {tier}\nname: {tier} synthetic\nsubtests:\n{body}"
        )
    beta = mini / "cases" / "beta" / "test.yaml"
    beta.write_text(beta.read_text().replace("tiers: [T0, T1]\n", ""))
    shutil.copytree(mini / "cases" / "alpha", mini / "cases" / "gamma")
    gamma = mini / "cases" / "gamma" / "test.yaml"
    gamma.write_text(gamma.read_text().replace("id: alpha", "id: gamma"))
    return mini


@pytest.mark.parametrize(
    "runs", [pytest.param(2, marks=pytest.mark.slow), pytest.param(10, marks=pytest.mark.campaign)]
)
def test_a_synthetic_experiment_exports_the_same_at_0_and_4_workers(
    synthetic: Path, pytester: pytest.Pytester, oracle: list[str], runs: int
) -> None:
    total = 7 * 3 * runs
    outs = {}
    for n in (0, 4):
        out = synthetic / f"n{n}" / "synthetic"  # the same experiment name in both
        result = pytester.runpytest(
            "cases",
            *workers(n),
            oracle[1],
            "--scylla-oracle=mixed",
            f"--scylla-runs={runs}",
            f"--scylla-out={out}",
            "--scylla-report=md,json,csv",
        )
        counts = result.parseoutcomes()
        assert counts.get("passed", 0) + counts.get("failed", 0) == total, counts
        assert counts.get("failed", 0) >= total // 10  # mixed: some runs botch or skip the task
        assert counts.get("errors", 0) == 0  # pytester's keys are plural
        outs[n] = out
    rows = export_rows(outs[0] / "runs.csv")
    assert len(rows) == total
    assert len(export_rows(outs[0] / "judges.csv")) == 3 * total
    assert {r["tier"] for r in rows} == set(TIERS)
    hashes: dict[tuple[str, str], set[str]] = {}
    for r in rows:  # the same conditions hash the same, whichever run and worker
        hashes.setdefault((r["case_id"], r["tier"]), set()).add(r["config_hash"])
    assert all(len(h) == 1 for h in hashes.values())
    assert len({h for hs in hashes.values() for h in hs}) == 21
    for name in ("runs.csv", "judges.csv", "criteria.csv", "subtests.csv"):
        assert export_rows(outs[0] / name) == export_rows(outs[4] / name), name
    for name in ("summary.json", "statistical_results.json"):
        first, second = (without_timings(json.loads((o / name).read_text())) for o in outs.values())
        assert first == second, name
    md = [(o / "tables.md").read_text().splitlines() for o in outs.values()]
    latency = next(i for i, line in enumerate(md[0]) if line.startswith("## Latency"))
    assert md[0][:latency] == md[1][:latency]  # every table before the timings one
    stats = json.loads((outs[0] / "statistical_results.json").read_text())
    assert stats["n_runs"] == total
    assert {p["group1"] for p in stats["pairwise"]} >= {"T0", "T5"}
    passed = {
        r["tier"]: sum(x["passed"] == "True" for x in rows if x["tier"] == r["tier"]) for r in rows
    }
    assert 0 < sum(passed.values()) < total
