"""Claude Code, headless: the prompt on stdin, stream-json out, the run's own HOME and gateway.

See docs/claude-code.md for the measured behaviour this relies on.
"""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

NAME = "claude-code"
PINNED_VERSION = "2.1.197"  # what .ci/run installs and docs/claude-code.md measured
DUMMY_KEY = "sk-ant-scylla-dummy-key-the-gateway-holds-the-real-one"
FIXED_ENV = {
    "IS_SANDBOX": "1",  # root may bypass permissions only inside a sandbox
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_MAX_RETRIES": "2",  # the harness retries infra errors itself, visibly
}


class SetupError(RuntimeError):
    """The CLI is missing or unusable: a setup problem, not a result."""


def find_cli(explicit: str | None = None) -> Path:
    name = explicit or "claude"
    found = shutil.which(name)
    if found is None:
        raise SetupError(
            f"Claude Code CLI '{name}' not found on PATH; install it with "
            f"`npm install -g @anthropic-ai/claude-code@{PINNED_VERSION}` or point "
            "--scylla-cli at it")
    return Path(found)


@functools.lru_cache(maxsize=8)
def version(cli: Path) -> str:
    """`claude --version`, e.g. '2.1.197 (Claude Code)'."""
    try:
        done = subprocess.run([str(cli), "--version"], capture_output=True, text=True,
                              timeout=60, env={"PATH": str(cli.parent), "HOME": "/nonexistent",
                                               **FIXED_ENV})
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SetupError(f"{cli} --version failed: {exc}") from None
    if done.returncode != 0:
        raise SetupError(f"{cli} --version exited {done.returncode}: "
                         f"{(done.stderr or done.stdout).strip()[:300]}")
    return done.stdout.strip()


def command(cli: Path | str, model: str, max_turns: int, overlay_args: tuple[str, ...]
            ) -> list[str]:
    return [str(cli), "-p", "--output-format", "stream-json", "--verbose",
            "--dangerously-skip-permissions", "--model", model, "--max-turns", str(max_turns),
            *overlay_args]


def environment(base: dict[str, str], overlay_env: dict[str, str],
                base_url: str) -> dict[str, str]:
    return {**base, **overlay_env, **FIXED_ENV, "ANTHROPIC_BASE_URL": base_url,
            "ANTHROPIC_API_KEY": DUMMY_KEY}


@dataclass
class Result:
    """What the CLI said about its own run."""

    found: bool = False  # a final `result` event was seen
    subtype: str | None = None
    is_error: bool = False
    num_turns: int | None = None
    stop_reason: str | None = None
    terminal_reason: str | None = None
    api_error_status: int | None = None
    total_cost_usd: float | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    model_usage: dict[str, Any] = field(default_factory=dict)
    final_message: str = ""
    duration_ms: int | None = None
    init: dict[str, Any] = field(default_factory=dict)
    events: int = 0
    # the trajectory: every tool call in order (a sub-agent's prefixed `<agent>/`), failed
    # tool results, and what of the declared components the agent invoked
    tool_calls: list[str] = field(default_factory=list)
    tool_errors: int = 0
    skills_used: list[str] = field(default_factory=list)
    agents_used: list[str] = field(default_factory=list)
    mcp_used: list[str] = field(default_factory=list)

    def trajectory(self, declared: dict[str, Any]) -> dict[str, Any]:
        """The run's trajectory, and for each skill, sub-agent and MCP server its subtest
        declared whether the agent invoked it (CLAUDE.md blocks and tool lists are always in
        its context: nothing to invoke)."""
        per_tool: dict[str, int] = {}
        for name in self.tool_calls:
            per_tool[name] = per_tool.get(name, 0) + 1
        used = {"skills": self.skills_used, "agents": self.agents_used,
                "mcp_servers": self.mcp_used}
        return {"tool_calls": len(self.tool_calls), "per_tool": per_tool,
                "sequence": self.tool_calls, "tool_errors": self.tool_errors,
                "sub_agent_calls": sum(n.split("/")[-1] in ("Agent", "Task")
                                       for n in self.tool_calls),
                "turns": self.num_turns,
                "used": {kind: {str(name): name in used[kind]
                                for name in declared.get(kind) or ()} for kind in used}}

    def to_json(self) -> dict[str, Any]:
        """Every field but the final message, the init event and the trajectory; `found` as
        `result_seen`."""
        data = {k: v for k, v in asdict(self).items() if k not in (
            "final_message", "init", *TRAJECTORY)}
        return {"result_seen": data.pop("found"), **data}


TRAJECTORY = ("tool_calls", "tool_errors", "skills_used", "agents_used", "mcp_used")
MAX_TOOL_CALLS = 2000  # kept in order; a longer trajectory is cut (the counts stay whole)


def _trajectory(event: dict[str, Any], result: Result, agents: dict[str, str]) -> None:
    """Tool calls and failed tool results of one message event (the CLI's own output about the
    agent's work: read as data only)."""
    content = (event.get("message") or {}).get("content")
    if not isinstance(content, list):
        return
    parent = event.get("parent_tool_use_id")
    prefix = f"{agents.get(str(parent), 'agent')}/" if parent else ""
    for block in content:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "tool_result" and block.get("is_error"):
            result.tool_errors += 1
        if block.get("type") != "tool_use":
            continue
        name, given = str(block.get("name") or "?"), block.get("input")
        given = given if isinstance(given, dict) else {}
        if len(result.tool_calls) < MAX_TOOL_CALLS:
            result.tool_calls.append(prefix + name)
        if name == "Skill" and isinstance(given.get("skill"), str):
            _once(result.skills_used, given["skill"])
        elif name in ("Agent", "Task") and isinstance(given.get("subagent_type"), str):
            _once(result.agents_used, given["subagent_type"])
            agents[str(block.get("id"))] = given["subagent_type"]
        elif name.startswith("mcp__") and name.count("__") >= 2:
            _once(result.mcp_used, name.split("__")[1])


def _once(found: list[str], name: str) -> None:
    if name not in found:
        found.append(name)


def events(transcript: Path) -> Iterator[dict[str, Any]]:
    """The transcript's events, each a JSON object; other lines (a cut-off last line of a
    killed run) are skipped."""
    with transcript.open(encoding="utf-8", errors="replace") as stream:
        for line in stream:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict):
                yield event


def parse(transcript: Path) -> Result:
    """Read the stream-json transcript; tolerant of a cut-off last line (killed runs)."""
    result = Result()
    agents: dict[str, str] = {}  # an Agent call's id -> the sub-agent it started
    if not transcript.exists():
        return result
    for event in events(transcript):
        result.events += 1
        if event.get("type") in ("assistant", "user"):
            _trajectory(event, result, agents)
        elif event.get("type") == "system" and event.get("subtype") == "init":
            result.init = {k: event.get(k) for k in ("tools", "mcp_servers", "model",
                                                     "skills", "agents",
                                                     "claude_code_version")}
        elif event.get("type") == "result":
            result.found = True
            result.subtype = event.get("subtype")
            result.is_error = bool(event.get("is_error"))
            result.num_turns = event.get("num_turns")
            result.stop_reason = event.get("stop_reason")
            result.terminal_reason = event.get("terminal_reason")
            result.api_error_status = event.get("api_error_status")
            result.total_cost_usd = event.get("total_cost_usd")
            usage = event.get("usage") or {}
            result.usage = {k: usage[k] for k in (
                "input_tokens", "output_tokens", "cache_creation_input_tokens",
                "cache_read_input_tokens") if isinstance(usage.get(k), int)}
            result.model_usage = event.get("modelUsage") or {}
            result.final_message = str(event.get("result") or "")
            result.duration_ms = event.get("duration_ms")
    return result
