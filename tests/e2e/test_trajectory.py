"""The trajectory read from a run's stream-json transcript: tool calls in order (a sub-agent's
prefixed with its name), failed tool results, and which declared skills, sub-agents and MCP
servers the agent invoked; per tier, the share of runs that used what they declared.

Here the sessions; the in-process tests are in `tests/unit/results/test_trajectory.py`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..conftest import workers


@pytest.mark.each_sandbox
def test_the_oracle_asked_to_use_skills_and_mcp_tools_shows_full_utilisation(
    mini: Path, pytester: pytest.Pytester, oracle: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`SCYLLA_ORACLE_USE=skills,mcp`: the oracle invokes the declared skill and MCP server
    through the real CLI before the work; the runs pass, and the trajectory and the report say
    they were used (the default oracle uses none: tests/e2e/test_runs.py)."""
    monkeypatch.setenv("SCYLLA_ORACLE_USE", "skills,mcp")
    out = mini / "out"
    done = pytester.runpytest(
        "cases", "-k", "alpha and (T1-01 or T5-02)", *workers(0), *oracle, f"--scylla-out={out}"
    )
    done.assert_outcomes(passed=2)
    recs = {p.parent.name: json.loads(p.read_text()) for p in out.glob("runs/*/run.json")}
    t5 = recs["alpha-T5-02-r1"]["trajectory"]
    assert t5["sequence"][:2] == ["Skill", "mcp__notes__note"]
    assert t5["used"] == {
        "skills": {"review": True},
        "agents": {"helper": False},
        "mcp_servers": {"notes": True},
    }
    assert recs["alpha-T1-01-r1"]["trajectory"]["used"]["skills"] == {"review": True}
    stats = json.loads((out / "statistical_results.json").read_text())
    shares = {(u["tier"], u["kind"]): u["share"] for u in stats["utilisation"]}
    assert shares == {
        ("T1", "skill"): 1.0,
        ("T5", "skill"): 1.0,
        ("T5", "MCP server"): 1.0,
        ("T5", "sub-agent"): 0.0,
    }
