"""Codex, Gemini CLI and opencode through the same tiers, end to end with the real binaries and
the oracle speaking each one's wire format (OpenAI Responses, Gemini streamGenerateContent, Chat
Completions): the
subtests a CLI can express pass with the ablation check holding (its instructions file, skills
in its own home, appended instructions where it has them), the ones it cannot are collected as
skipped with the reason, and the check fails on a real request that lost a declared part.

Here the in-process tests; the sessions are in `tests/e2e/test_other_clis.py`."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest

from pytest_scylla.run.agents import codex, gemini_cli, opencode
from pytest_scylla.run.gateway import reached as ablation
from pytest_scylla.run.gateway import responses_wire, turns
from pytest_scylla.run.gateway.sse import UsageReader


def test_a_tool_result_is_read_for_failure() -> None:
    """The oracle stops when a command failed or the CLI refused the call: Codex states a
    command's exit code (none when it refused), Gemini CLI gives an error object or the shell's
    `Exit Code: N`."""

    def codex_request(output: str) -> dict[str, Any]:
        return {
            "input": [
                {
                    "type": "function_call",
                    "call_id": "toolu_oracle_00_00",
                    "name": "exec_command",
                    "arguments": "{}",
                },
                {"type": "function_call_output", "call_id": "toolu_oracle_00_00", "output": output},
            ]
        }

    def gemini_request(response: dict[str, Any]) -> dict[str, Any]:
        call = {"id": "toolu_oracle_00_00", "name": "run_shell_command", "args": {}}
        return {
            "contents": [
                {"role": "user", "parts": [{"text": "task"}]},
                {"role": "model", "parts": [{"functionCall": call}]},
                {
                    "role": "user",
                    "parts": [
                        {
                            "functionResponse": {
                                "id": call["id"],
                                "name": call["name"],
                                "response": response,
                            }
                        }
                    ],
                },
            ]
        }

    ok = "Chunk ID: a\nProcess exited with code 0\nOutput:\nhello"
    assert turns.oracle_turns(codex_request(ok)) == (1, False)
    assert turns.oracle_turns(codex_request(ok.replace("code 0", "code 2"))) == (1, True)
    assert turns.oracle_turns(codex_request("`justification` requires `sandbox_permissions`"))[1]
    assert not turns.oracle_turns(gemini_request({"output": "Output: hi\nExit Code: 0"}))[1]
    assert turns.oracle_turns(gemini_request({"output": "Output: \nExit Code: 3"}))[1]
    assert turns.oracle_turns(gemini_request({"error": "Path not in workspace"}))[1]


def test_the_responses_relay_reads_usage_with_cached_input_apart() -> None:
    """A real Codex call's usage (as relayed from OpenAI) is priced on uncached input, cached
    input and output: the Responses API counts cached tokens inside input_tokens."""
    counts = {"input_tokens": 100, "cache_read_input_tokens": 900, "output_tokens": 50}
    reader = UsageReader()
    for piece in responses_wire.events(
        "resp_1", "gpt-5", [{"type": "text", "text": "hi"}], counts, False
    ):
        reader.feed(piece)
    assert (reader.model, reader.stop_reason) == ("gpt-5", "completed")
    assert reader.usage == {
        "input_tokens": 100,
        "cache_read_input_tokens": 900,
        "output_tokens": 50,
    }
    whole = UsageReader()
    whole.read_json(
        json.dumps(
            responses_wire.response(
                "resp_1", "gpt-5", [{"type": "text", "text": "hi"}], counts, False
            )
        ).encode()
    )
    assert whole.usage == reader.usage


def test_a_failed_codex_turn_is_an_error_result(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(
        "\n".join(
            json.dumps(e)
            for e in [
                {"type": "thread.started", "thread_id": "t1"},
                {
                    "type": "item.completed",
                    "item": {
                        "type": "mcp_tool_call",
                        "server": "notes",
                        "tool": "add",
                        "status": "failed",
                    },
                },
                {
                    "type": "item.completed",
                    "item": {
                        "type": "command_execution",
                        "exit_code": 0,
                        "status": "completed",
                        "command": "cat /h/.codex/skills/review/SKILL.md",
                    },
                },
                {"type": "turn.failed", "error": {"message": "stream disconnected"}},
            ]
        )
        + "\n{cut"
    )
    result = codex.parse(transcript)
    assert (result.found, result.is_error, result.final_message) == (
        True,
        True,
        "stream disconnected",
    )
    assert result.tool_calls == ["mcp__notes__add", "exec_command"]
    assert (result.tool_errors, result.mcp_used, result.skills_used) == (1, ["notes"], ["review"])


def test_a_failed_gemini_run_is_an_error_result(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(
        "\n".join(
            json.dumps(e)
            for e in [
                {"type": "init", "session_id": "s", "model": "gemini-2.5-pro"},
                {"type": "message", "role": "assistant", "content": "Looking.", "delta": True},
                {
                    "type": "tool_use",
                    "tool_name": "activate_skill",
                    "parameters": {"name": "review"},
                },
                {"type": "tool_use", "tool_name": "mcp_notes_add", "parameters": {}},
                {"type": "tool_result", "status": "error", "error": {"message": "no"}},
                {
                    "type": "result",
                    "status": "error",
                    "error": {
                        "type": "FatalTurnLimitedError",
                        "message": "Reached max session turns",
                    },
                    "stats": {"input_tokens": 30, "cached": 10, "output_tokens": 6},
                },
            ]
        )
        + "\n{cut"
    )
    result = gemini_cli.parse(transcript)
    assert (result.found, result.is_error, result.final_message, result.terminal_reason) == (
        True,
        True,
        "Reached max session turns",
        "FatalTurnLimitedError",
    )
    assert result.tool_calls == ["activate_skill", "mcp_notes_add"]
    assert (result.tool_errors, result.mcp_used, result.skills_used) == (1, ["notes"], ["review"])
    assert result.usage == {"input_tokens": 20, "cache_read_input_tokens": 10, "output_tokens": 6}


ROOT = Path(__file__).resolve().parents[4]


def test_the_support_matrix_says_what_the_ablation_check_found(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A component is "yes" only when every run declaring it passed the check, "no" with the
    count otherwise, the adapter's reason when no run declared it; `scylla matrix` on a folder
    without runs is one error."""
    from pytest_scylla.cli.main import main
    from pytest_scylla.results.support import matrix

    def rec(agent: str, subtest: str, problems: list[str], **declared: Any) -> dict[str, Any]:
        return {
            "agent": agent,
            "tier": subtest[:2],
            "subtest": subtest,
            "declared": {"system_prompt": "default", **declared},
            "ablation": {"checked": True, "problems": problems},
        }

    table = matrix(
        [
            rec("codex", "T0-01", []),
            rec("codex", "T1-01", [], skills=["s"]),
            rec("toy", "T0-01", []),
            rec(
                "toy", "T1-01", ["declared skill 's' is missing from the request"], skills=["s"]
            ),  # the skill failed, the default prompt did not
            rec("toy", "T0-02", ["tool 'Z' is in the request but not declared"], claude_md=["b"]),
        ],  # a problem of no component: all of its run's
        {"codex": codex.ADAPTER},
    )
    rows = {
        line.split(" | ")[0][2:]: line.split(" | ")[1:]
        for line in table.splitlines()
        if line.startswith("| ")
    }
    assert rows["component"] == ["codex", "toy |"]
    assert rows["skills"] == ["yes (1 subtest)", "**no**: 1 of 1 runs failed the check |"]
    assert rows["system prompt: default"] == [
        "yes (2 subtests)",
        "**no**: 1 of 3 runs failed the check |",
    ]
    assert rows["instruction blocks (CLAUDE.md)"][1] == "**no**: 1 of 1 runs failed the check |"
    assert rows["sub-agents"][0].startswith("n/a: Codex has no sub-agents declared by file")
    assert rows["sub-agents"][1] == "not run |"  # no adapter to ask
    gemini = matrix(
        [rec("gemini-cli", "T3-01", [], agents=["a"], lead_agents=[])],
        {"gemini-cli": gemini_cli.ADAPTER},
    )
    assert (
        "| sub-agents | yes (1 subtest) |\n| sub-agents calling sub-agents | n/a: Gemini "
        "CLI's sub-agents cannot call sub-agents (agent 'orchestrator' has the Agent tool) |"
    ) in gemini
    assert rows["T1"] == ["1 of 1", "0 of 1 |"]
    assert rows["T0"] == ["1 of 2", "1 of 2 |"]
    (tmp_path / "empty").mkdir()
    assert main(["matrix", str(tmp_path / "empty")]) == 2
    assert "scylla matrix: no runs in" in capsys.readouterr().err


def _overlay(
    module: Any, ref: str, tmp_path: Path, mcp: dict[str, Any] | None = None, **changed: Any
) -> tuple[Any, Path, Any]:
    """The adapter's overlay of shipped subtest `ref` (with `changed` fields): the overlay,
    the run's HOME, the subtest."""
    from dataclasses import replace

    from pytest_scylla.formats.tiers import TierSet

    tiers = TierSet(ROOT / "tiers")
    sub = replace(tiers.resolve(ref), **changed)
    ws = tmp_path / module.NAME / ref / "work"
    ws.mkdir(parents=True)
    ov = module.apply(sub, tiers, ws, ws.parent, mcp or {"mcpServers": {}})
    return ov, ws.parent / "home", sub


def test_tool_lists_and_sub_agents_in_each_clis_own_names(tmp_path: Path) -> None:
    """The tiers name Claude Code's tools; Gemini CLI and opencode get the same tool lists and
    sub-agents in their own tool names (settings, agent files, agent settings), and what one
    cannot express is not applicable, with the reason."""
    from dataclasses import replace

    import yaml

    from pytest_scylla.formats.tiers import TierSet

    tiers = TierSet(ROOT / "tiers")
    _, home, _ = _overlay(gemini_cli, "T2-01", tmp_path)
    assert json.loads((home / ".gemini/settings.json").read_text())["tools"] == {
        "core": ["read_file", "write_file", "replace", "run_shell_command", "glob", "grep_search"]
    }
    _, home, _ = _overlay(gemini_cli, "T2-04", tmp_path)
    assert json.loads((home / ".gemini/settings.json").read_text())["tools"] == {
        "exclude": ["web_fetch", "google_web_search"]
    }
    _, home, _ = _overlay(gemini_cli, "T3-01", tmp_path)
    head, body = (home / ".gemini/agents/implementer.md").read_text().split("---\n")[1:]
    assert yaml.safe_load(head) == {
        "name": "implementer",
        "description": "Writes or changes production code to meet a "
        "precise brief. Use for implementing a feature, applying a fix whose cause is known, "
        "or making a described change to specific files.",
        "tools": ["read_file", "grep_search", "glob", "replace", "write_file", "run_shell_command"],
    }
    assert body.lstrip().startswith("You are the implementer on a small engineering team.")
    assert gemini_cli.unsupported(tiers.resolve("T4-01"), tiers) == (
        "Gemini CLI's sub-agents cannot call sub-agents (agent 'tech-lead' has the Agent tool)"
    )
    assert opencode.unsupported(tiers.resolve("T4-01"), tiers) is None
    assert gemini_cli.unsupported(tiers.resolve("T2-01"), tiers) is None

    ov, _, _ = _overlay(opencode, "T4-01", tmp_path)
    config = json.loads(ov.env[opencode.CONFIG_ENV])
    assert config["agent"]["tech-lead"]["mode"] == "subagent"
    assert config["agent"]["tech-lead"]["tools"] == {
        "*": False,
        "task": True,
        "read": True,
        "grep": True,
        "glob": True,
        "bash": True,
    }
    assert config["agent"]["tech-lead"]["prompt"].startswith("You are the technical lead")
    assert config["subagent_depth"] == 2  # the lead's specialists are one level further down
    ov, _, _ = _overlay(opencode, "T2-03", tmp_path)
    assert json.loads(ov.env[opencode.CONFIG_ENV])["tools"] == {"bash": False}
    ov, _, _ = _overlay(
        opencode,
        "T2-02",
        tmp_path,
        {"mcpServers": {"memory": {"command": "python3", "args": []}}},
        mcp_servers=("memory",),
    )
    assert json.loads(ov.env[opencode.CONFIG_ENV])["tools"] == {  # MCP kept, as Claude Code
        "*": False,
        "read": True,
        "write": True,
        "edit": True,
        "bash": True,  # keeps it
        "mcpmemory_*": True,
    }
    made_up = replace(tiers.resolve("T2-03"), tools_deny=("NotebookEdit",))
    assert opencode.unsupported(made_up, tiers) == (
        "opencode has no equivalent of Claude Code's tool 'NotebookEdit' (the subtest's tools)"
    )


def test_the_ablation_check_reads_tool_lists_in_the_clis_names(tmp_path: Path) -> None:
    """A tool list is checked as the CLI names the tools: a denied shell that Gemini CLI still
    offers fails the check, and opencode's `apply_patch` (its edit and write tool for OpenAI
    models) is inside an allow-list that has Edit and Write, anything else outside it."""
    from pytest_scylla.formats.tiers import TierSet
    from pytest_scylla.run.baseline import expectation

    tiers = TierSet(ROOT / "tiers")
    base = {"tools": [], "skills": [], "agents": [], "system_chars": 100}

    def check(module: Any, ref: str, offered: set[str]) -> list[str]:
        ov, home, sub = _overlay(module, ref, Path(tempfile.mkdtemp(dir=tmp_path)))
        expected = expectation(
            ov, sub, tiers, home.parent / "work", {**base, "tools": sorted(offered)}
        )
        return ablation.compare(expected, ablation.Observed(tools=offered, system="x" * 100))

    assert check(gemini_cli, "T2-03", {"read_file", "write_file"}) == []
    assert check(gemini_cli, "T2-03", {"read_file", "run_shell_command"}) == [
        "denied tool 'run_shell_command' is in the request"
    ]
    assert check(opencode, "T2-01", {"read", "apply_patch", "bash", "glob", "grep"}) == []
    assert check(opencode, "T2-01", {"read", "apply_patch", "bash", "todowrite"}) == [
        "tool 'todowrite' is outside the declared allow-list"
    ]


def test_the_chat_completions_relay_reads_usage_from_the_last_chunk() -> None:
    """opencode's real calls stream Chat Completions with `include_usage`: the usage in the
    last chunk is read, cached prompt tokens apart."""
    from pytest_scylla.run.gateway import openai_wire

    counts = {"input_tokens": 100, "cache_read_input_tokens": 900, "output_tokens": 50}
    reader = UsageReader()
    for piece in openai_wire.chunks(
        "c1", "gpt-5", [{"type": "text", "text": "hi"}], "end_turn", counts, False
    ):
        reader.feed(piece)
    assert (reader.model, reader.stop_reason) == ("gpt-5", "stop")
    assert reader.usage == counts
