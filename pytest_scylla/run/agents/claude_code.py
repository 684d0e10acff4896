"""Claude Code, headless: the prompt on stdin, stream-json out, the run's own HOME and gateway.

See docs/claude-code.md for the measured behaviour this relies on.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from pytest_scylla.run import agents, hooks
from pytest_scylla.run.agents import Result, base

if TYPE_CHECKING:
    from pytest_scylla.formats.components import Configuration

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


SetupError = agents.SetupError  # the CLI is missing or unusable


def find_cli(explicit: str | None = None) -> Path:
    name = explicit or "claude"
    found = shutil.which(name)
    if found is None:
        raise SetupError(
            f"Claude Code CLI '{name}' not found on PATH; install it with "
            f"`npm install -g @anthropic-ai/claude-code@{PINNED_VERSION}` or point "
            "--scylla-cli at it"
        )
    return Path(found)


def version(cli: Path) -> str:
    """`claude --version`, e.g. '2.1.197 (Claude Code)'."""
    return base.version(cli, tuple(sorted(FIXED_ENV.items())))


def command(
    cli: Path | str, model: str, max_turns: int, overlay_args: tuple[str, ...]
) -> list[str]:
    return [
        str(cli),
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--include-hook-events",  # every hook's start and response (run.json `hooks`)
        "--dangerously-skip-permissions",
        "--model",
        model,
        "--max-turns",
        str(max_turns),
        *overlay_args,
    ]


def environment(base: dict[str, str], overlay_env: dict[str, str], base_url: str) -> dict[str, str]:
    return {
        **base,
        **overlay_env,
        **FIXED_ENV,
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": DUMMY_KEY,
    }


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
        call_id = str(block.get("id") or "")  # the model's (the gateway saw it: `said`)
        result.called(prefix + name, call_id, MAX_TOOL_CALLS)
        if name == "Skill" and isinstance(given.get("skill"), str):
            result.used("skills", given["skill"], call_id)
        elif name in ("Agent", "Task") and isinstance(given.get("subagent_type"), str):
            result.used("agents", given["subagent_type"], call_id)
            agents[call_id] = given["subagent_type"]
        elif name.startswith("mcp__") and name.count("__") >= 2:
            result.used("mcp_servers", name.split("__")[1], call_id)


def events(transcript: Path | IO[str]) -> Iterator[dict[str, Any]]:
    """The transcript's events (from its file, or its open text), each a JSON object; other
    lines (a cut-off last line of a killed run) are skipped."""
    with contextlib.ExitStack() as stack:
        stream = (
            stack.enter_context(transcript.open(encoding="utf-8", errors="replace"))
            if isinstance(transcript, Path)
            else transcript
        )
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
        if result.found:  # the first result ends the run: what follows was forged
            result.after_result += 1
            continue
        result.events += 1
        if hooks.keep(event, result.hook_events):
            continue
        if event.get("type") in ("assistant", "user"):
            _trajectory(event, result, agents)
        elif event.get("type") == "system" and event.get("subtype") == "init":
            result.init = {
                k: event.get(k)
                for k in (
                    "tools",
                    "mcp_servers",
                    "model",
                    "skills",
                    "agents",
                    "claude_code_version",
                )
            }
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
            result.usage = {
                k: usage[k]
                for k in (
                    "input_tokens",
                    "output_tokens",
                    "cache_creation_input_tokens",
                    "cache_read_input_tokens",
                )
                if isinstance(usage.get(k), int)
            }
            result.model_usage = event.get("modelUsage") or {}
            result.final_message = str(event.get("result") or "")
            result.duration_ms = event.get("duration_ms")
    return result


class ClaudeCode:
    """The built-in adapter (`agents.Agent`)."""

    name = NAME
    # the gateway lets these through besides the run's model: its small/fast model (side
    # tasks, and the built-in Explore sub-agent)
    side_models = ("claude-haiku-4-5",)
    configuration_files = ("CLAUDE.md", ".claude", ".mcp.json")

    def read_configuration(self, root: Path) -> Configuration:
        """The project's Claude Code configuration, cut into components (`scylla ablate`)."""
        from pytest_scylla.formats.agent_config import read_claude_code

        return read_claude_code(root)

    def find_cli(self, explicit: str | None) -> Path:
        return find_cli(explicit)

    def version(self, cli: Path) -> str:
        return version(cli)

    def command(
        self, cli: Path | str, model: str, max_turns: int, overlay_args: tuple[str, ...]
    ) -> list[str]:
        return command(cli, model, max_turns, overlay_args)

    def environment(
        self, base: dict[str, str], overlay_env: dict[str, str], base_url: str
    ) -> dict[str, str]:
        return environment(base, overlay_env, base_url)

    def parse(self, transcript: Path) -> Result:
        return parse(transcript)


ADAPTER = ClaudeCode()
