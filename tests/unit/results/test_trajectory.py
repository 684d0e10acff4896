"""The trajectory read from a run's stream-json transcript: tool calls in order (a sub-agent's
prefixed with its name), failed tool results, and which declared skills, sub-agents and MCP
servers the agent invoked; per tier, the share of runs that used what they declared.

Here the in-process tests; the sessions are in `tests/e2e/test_trajectory.py`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pytest_scylla.results.ablation_score import utilisation
from pytest_scylla.run.agents.claude_code import parse


def _message(role: str, blocks: list[dict[str, Any]], parent: str | None = None) -> str:
    return json.dumps(
        {"type": role, "message": {"role": role, "content": blocks}, "parent_tool_use_id": parent}
    )


def test_the_transcript_gives_the_trajectory_and_what_was_used(tmp_path: Path) -> None:
    lines = [
        json.dumps({"type": "system", "subtype": "init", "tools": ["Read", "Skill"]}),
        _message(
            "assistant",
            [
                {"type": "text", "text": "looking"},
                {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "main.py"}},
            ],
        ),
        _message("user", [{"type": "tool_result", "tool_use_id": "t1", "is_error": True}]),
        _message(
            "assistant",
            [{"type": "tool_use", "id": "t2", "name": "Skill", "input": {"skill": "review"}}],
        ),
        _message(
            "assistant",
            [
                {
                    "type": "tool_use",
                    "id": "t3",
                    "name": "Agent",
                    "input": {"subagent_type": "helper", "prompt": "fix it"},
                }
            ],
        ),
        _message(
            "assistant",
            [
                {
                    "type": "tool_use",
                    "id": "t4",
                    "name": "mcp__notes__add",
                    "input": {"text": "done"},
                }
            ],
            parent="t3",
        ),
        _message(
            "assistant",
            [{"type": "tool_use", "id": "t5", "name": "Write", "input": "not an object"}],
            parent="t3",
        ),
        '{"type": "assistant", "message": ',  # a line cut by a kill
        json.dumps({"type": "result", "subtype": "success", "num_turns": 4, "result": "ok"}),
    ]
    transcript = tmp_path / "transcript.jsonl"
    transcript.write_text("\n".join(lines) + "\n")
    result = parse(transcript)
    assert result.tool_calls == ["Read", "Skill", "Agent", "helper/mcp__notes__add", "helper/Write"]
    assert (result.tool_errors, result.skills_used, result.agents_used, result.mcp_used) == (
        1,
        ["review"],
        ["helper"],
        ["notes"],
    )
    assert "tool_calls" not in result.to_json()  # the CLI's own figures stay apart
    declared = {
        "skills": ["review", "style"],
        "agents": ["helper"],
        "mcp_servers": ["notes"],
        "claude_md": ["rules"],
    }
    trajectory = result.trajectory(declared)
    assert trajectory["used"] == {
        "skills": {"review": True, "style": False},
        "agents": {"helper": True},
        "mcp_servers": {"notes": True},
    }
    assert (trajectory["tool_calls"], trajectory["sub_agent_calls"], trajectory["turns"]) == (
        5,
        1,
        4,
    )
    assert trajectory["per_tool"]["helper/Write"] == 1


def test_utilisation_per_tier_says_when_a_tier_never_used_what_it_adds() -> None:
    def rec(tier: str, outcome: str, **used: dict[str, bool]) -> dict[str, Any]:
        return {
            "tier": tier,
            "outcome": outcome,
            "trajectory": {"used": {"skills": {}, "agents": {}, "mcp_servers": {}, **used}},
        }

    rows = utilisation(
        [
            rec("T1", "pass", skills={"review": True}),
            rec("T1", "fail", skills={"review": False, "style": True}),
            rec("T1", "pass", skills={"review": False}),
            rec("T1", "infra_error", skills={"review": True}),  # not counted
            rec("T3", "pass", agents={"helper": False}),
            rec("T0", "pass"),
        ]
    )  # declares nothing: no row
    assert rows == [
        {"tier": "T1", "kind": "skill", "runs": 3, "used": 2, "share": 2 / 3, "note": ""},
        {
            "tier": "T3",
            "kind": "sub-agent",
            "runs": 1,
            "used": 0,
            "share": 0.0,
            "note": "never used: not an ablation of it",
        },
    ]
