"""The oracle's tool calls in each CLI's own tool names and arguments (Claude Code, Codex, Gemini
CLI, opencode): a shell command, a hand-down to a sub-agent, an attack's calls, and the uses of
the declared skills and MCP servers."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from pytest_scylla.run.gateway import turns

DELEGATE_MARK = re.compile(r"\[scylla-oracle level (\d+)\]")


def level_of(request: dict[str, Any]) -> int:
    """0 for the main agent; N for a sub-agent the oracle delegated to N levels down."""
    levels = [int(m.group(1)) for m in DELEGATE_MARK.finditer(turns.first_user_text(request))]
    return max(levels, default=0)


def delegate(
    tools: set[str], agent: str, level: int, where: Path
) -> tuple[str, dict[str, Any]] | None:
    """A call handing the change to sub-agent `agent`, with the tool this CLI offers for it."""
    prompt = (
        f"[scylla-oracle level {level + 1}] Make the change the task asks for in "
        f"{where} and report back."
    )
    if "Agent" in tools:  # Claude Code
        return "Agent", {
            "description": f"Hand the change to {agent}",
            "subagent_type": agent,
            "prompt": prompt,
        }
    if "invoke_agent" in tools:  # Gemini CLI
        return "invoke_agent", {"agent_name": agent, "prompt": prompt}
    if "task" in tools:  # opencode
        return "task", {
            "description": f"Hand the change to {agent}",
            "prompt": prompt,
            "subagent_type": agent,
        }
    return None


def uses(
    skills: tuple[str, ...], mcp_servers: tuple[str, ...], request: dict[str, Any]
) -> list[list[tuple[str, dict[str, Any]]]]:
    """With `SCYLLA_ORACLE_USE=skills,mcp`: a turn invoking each declared skill (the Skill
    tool) and each declared MCP server's first offered tool whose required inputs are all
    strings, before the work."""
    wanted = {w.strip() for w in os.environ.get("SCYLLA_ORACLE_USE", "").split(",")}
    offered = turns.tools(request)
    calls: list[tuple[str, dict[str, Any]]] = []
    if "skills" in wanted and "Skill" in offered:
        calls += [("Skill", {"skill": name}) for name in skills]
    for server in mcp_servers if "mcp" in wanted and "messages" in request else ():
        for name, schema in offered.items():
            props = schema.get("properties") or {}
            required = schema.get("required") or []
            if name.startswith(f"mcp__{server}__") and all(
                (props.get(r) or {}).get("type") == "string" for r in required
            ):
                calls.append((name, {r: "scylla oracle" for r in required}))
                break
    return [calls] if calls else []


def portable(
    calls: tuple[tuple[str, dict[str, Any]], ...], tools: set[str]
) -> list[tuple[str, dict[str, Any]]]:
    """An attack's calls for this CLI: its `Bash` calls through the shell tool it offers."""
    found = [
        shell_call(tools, str(args.get("command", "")), "attack")
        if name == "Bash" and "Bash" not in tools
        else (name, args)
        for name, args in calls
    ]
    return [call for call in found if call is not None]


def shell_call(tools: set[str], command: str, why: str) -> tuple[str, dict[str, Any]] | None:
    """A call of the offered shell tool running `command`, in that CLI's argument names."""
    if "Bash" in tools:  # Claude Code
        return "Bash", {"command": command, "description": why}
    if "exec_command" in tools:  # Codex
        return "exec_command", {"cmd": command}
    if "run_shell_command" in tools:  # Gemini CLI
        return "run_shell_command", {"command": command, "description": why}
    if "bash" in tools:  # opencode
        return "bash", {"command": command, "description": why}
    if "shell" in tools:  # Codex with the older shell tool
        return "shell", {"command": ["bash", "-lc", command]}
    return None
