"""Google's Gemini CLI, headless: the prompt on stdin, `--output-format stream-json`, the run's own
HOME with a `.gemini/settings.json` (API-key auth, no usage statistics, the subtest's MCP servers)
and `GOOGLE_GEMINI_BASE_URL` at the gateway (Gemini's `streamGenerateContent`).

Measured with Gemini CLI 0.61.0 (docs/gemini-cli.md): the system prompt is `systemInstruction`
(with the skills list `<available_skills>` and the sub-agents list in it); GEMINI.md of the
workspace goes into the first user message (`--- Context from: <path> ---`); skills under
`~/.gemini/skills/<name>/SKILL.md`; MCP tools are named `mcp_<server>_<tool>`;
`GEMINI_SYSTEM_MD=<file>` replaces the system prompt; sub-agents are `~/.gemini/agents/<name>.md`
(listed in the system prompt, called through `invoke_agent`; they cannot call sub-agents);
tool lists are `tools.core` / `tools.exclude` in Gemini CLI's tool names (`TOOLS`). It has no
append mode and no max-turns flag (the run's budget and timeout bound it): subtests that need
what it lacks are not applicable.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from pytest_scylla.formats.resources import front_matter
from pytest_scylla.formats.tiers import Subtest, TierSet, agent_tools
from pytest_scylla.run import overlay
from pytest_scylla.run.agents import Result
from pytest_scylla.run.agents.base import (
    GeminiUpstream,
    NpmCli,
    inexpressible,
    mapped,
)
from pytest_scylla.run.agents.claude_code import events

if TYPE_CHECKING:
    from pytest_scylla.formats.components import Configuration

NAME = "gemini-cli"
PINNED_VERSION = "0.61.0"  # what .ci/run installs
DUMMY_KEY = "scylla-dummy-key-the-gateway-holds-the-real-one"
INSTRUCTIONS_FILE = "GEMINI.md"
SERVER_NAME = re.compile(r"[^A-Za-z0-9]")  # tools are mcp_<server>_<tool>: no `_` in <server>
SETTINGS = {  # API-key auth (else exit 41); nothing leaves the run but model calls
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False, "maxAttempts": 3},
}
FIXED_ENV = {"GEMINI_CLI_TRUST_WORKSPACE": "true", "GEMINI_CLI_NO_RELAUNCH": "1"}
TOOLS = {
    "Read": "read_file",
    "Write": "write_file",
    "Edit": "replace",  # Claude Code's -> its
    "Bash": "run_shell_command",
    "Glob": "glob",
    "Grep": "grep_search",
    "WebFetch": "web_fetch",
    "WebSearch": "google_web_search",
    "Agent": "invoke_agent",
    "Skill": "activate_skill",
    "TodoWrite": "write_todos",
}


def unsupported(sub: Subtest, tiers: TierSet | None = None) -> str | None:
    """Why Gemini CLI cannot run this subtest as declared (None: it can)."""
    if sub.tools_allow is not None and sub.mcp_servers:
        return (
            "Gemini CLI's tool allow-list (tools.core) would also take the MCP servers' tools away"
        )
    return inexpressible(sub, tiers, "Gemini CLI", ("none", "append"), TOOLS, nested=False)


def _agent_file(tiers: TierSet, name: str) -> str:
    """A tier's sub-agent as Gemini CLI reads one (`~/.gemini/agents/<name>.md`): its name,
    description and tools (in Gemini CLI's names) as front matter, its body the prompt."""
    meta, _, body = front_matter(tiers.resource_path("agents", name))
    head: dict[str, Any] = {"name": name, "description": str((meta or {}).get("description", ""))}
    tools = mapped(TOOLS, agent_tools(tiers, name))
    if tools is not None:
        head["tools"] = tools
    return "---\n" + yaml.safe_dump(head, sort_keys=False) + "---\n\n" + body.lstrip()


def apply(
    sub: Subtest, tiers: TierSet, workspace: Path, run_dir: Path, mcp: dict[str, Any] | None = None
) -> overlay.Overlay:
    """The subtest as Gemini CLI expresses it: GEMINI.md, skills, sub-agents and settings (MCP
    servers, tool lists) in the run's HOME, a replacement system prompt through
    GEMINI_SYSTEM_MD. ValueError for what it cannot."""
    reason = unsupported(sub, tiers)
    if reason is not None:
        raise ValueError(reason)
    written = overlay.write_instructions(sub, tiers, workspace, INSTRUCTIONS_FILE)
    home = run_dir / "home"
    dot = home / ".gemini"
    dot.mkdir(parents=True, exist_ok=True)
    _copy_skills_and_agents(sub, tiers, dot)
    servers = (mcp if mcp is not None else overlay.mcp_config(sub, tiers, workspace, run_dir))[
        "mcpServers"
    ]
    wire = {name: SERVER_NAME.sub("", name) for name in servers}
    settings = _settings(sub, servers, wire)
    (dot / "settings.json").write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
    env = {"HOME": str(home), **FIXED_ENV}
    prompt = sub.system_prompt
    source = prompt.file if prompt is not None else None  # replace: the only mode it has
    replaced = source is not None
    if source is not None:
        target = run_dir / "system.md"
        shutil.copyfile(source, target)
        env["GEMINI_SYSTEM_MD"] = str(target)
    return overlay.Overlay(
        args=(),
        env=env,
        written=tuple(written),
        model=sub.model,
        declared=overlay.declaration(sub, tiers),
        instructions_file=INSTRUCTIONS_FILE,
        mcp_on_wire=tuple(wire.values()),
        tool_names={k: (v,) for k, v in TOOLS.items()},
        # the sub-agents list lives in the default system prompt only
        without_builtins=("agents",) if replaced else (),
    )


def _copy_skills_and_agents(sub: Subtest, tiers: TierSet, dot: Path) -> None:
    """The subtest's skills and sub-agents into the run's `~/.gemini`."""
    for name in sub.skills:
        shutil.copytree(
            tiers.resource_path("skills", name).parent,
            dot / "skills" / name,
            symlinks=False,
            dirs_exist_ok=True,
        )
    for name in sub.agents:
        (dot / "agents").mkdir(exist_ok=True)
        (dot / "agents" / f"{name}.md").write_text(_agent_file(tiers, name), encoding="utf-8")


def _settings(sub: Subtest, servers: dict[str, Any], wire: dict[str, str]) -> dict[str, Any]:
    """Gemini CLI's `settings.json`: the fixed settings, the MCP servers by their wire names
    and the subtest's tool list."""
    settings: dict[str, Any] = {
        **SETTINGS,
        "mcpServers": {
            wire[name]: {k: s[k] for k in ("command", "args", "env") if s.get(k)}
            for name, s in servers.items()
        },
    }
    if sub.tools_allow is not None or sub.tools_deny:
        settings["tools"] = (
            {"core": mapped(TOOLS, sub.tools_allow)}
            if sub.tools_allow is not None
            else {"exclude": mapped(TOOLS, sub.tools_deny)}
        )
    return settings


def command(
    cli: Path | str, model: str, max_turns: int, overlay_args: tuple[str, ...]
) -> list[str]:
    return [str(cli), "--yolo", "--model", model, "--output-format", "stream-json", *overlay_args]


def environment(base: dict[str, str], overlay_env: dict[str, str], base_url: str) -> dict[str, str]:
    return {
        **base,
        **overlay_env,
        **FIXED_ENV,
        "GOOGLE_GEMINI_BASE_URL": base_url,
        "GEMINI_API_KEY": DUMMY_KEY,
    }


def _tool(event: dict[str, Any], result: Result) -> None:
    name = str(event.get("tool_name") or "?")
    raw = event.get("parameters")
    given: dict[str, Any] = raw if isinstance(raw, dict) else {}
    result.tool_calls.append(name)
    if name == "activate_skill" and isinstance(given.get("name"), str):
        found, value = result.skills_used, given["name"]
    elif name == "invoke_agent" and isinstance(given.get("agent_name"), str):
        found, value = result.agents_used, given["agent_name"]
    elif name.startswith("mcp_") and name.count("_") >= 2:
        found, value = result.mcp_used, name.split("_")[1]
    else:
        return
    if value not in found:
        found.append(value)


def parse(transcript: Path) -> Result:
    """Read the stream-json transcript (JSON lines; a cut-off last line is skipped)."""
    result = Result()
    if not transcript.exists():
        return result
    said: list[str] = []  # the assistant's text since the last tool call: its final message
    for event in events(transcript):
        if result.found:  # the first result ends the run: what follows was forged
            result.after_result += 1
            continue
        result.events += 1
        kind = event.get("type")
        if kind == "init":
            result.init = {"model": event.get("model"), "session_id": event.get("session_id")}
        elif kind == "message" and event.get("role") == "assistant":
            said.append(str(event.get("content") or ""))
        elif kind == "tool_use":
            _tool(event, result)
            said = []
        elif kind == "tool_result" and event.get("status") == "error":
            result.tool_errors += 1
        elif kind == "result":
            result.found, result.subtype = True, str(event.get("status") or "")
            error = event.get("error") if isinstance(event.get("error"), dict) else None
            result.is_error = result.subtype != "success"
            raw = event.get("stats")
            stats: dict[str, Any] = raw if isinstance(raw, dict) else {}
            cached = int(stats.get("cached") or 0)
            if isinstance(stats.get("input_tokens"), int):
                result.usage = {
                    "input_tokens": stats["input_tokens"] - cached,
                    "cache_read_input_tokens": cached,
                    "output_tokens": int(stats.get("output_tokens") or 0),
                }
            result.model_usage = stats.get("models") or {}
            result.duration_ms = stats.get("duration_ms")
            if error is not None:
                result.terminal_reason = str(error.get("type") or "")
                said = [str(error.get("message") or "")]
    result.final_message = "".join(said)[:20000]
    return result


class GeminiCli(GeminiUpstream, NpmCli):
    """The Gemini CLI adapter (`agents.Agent`): real runs go through the gateway's `gemini`
    upstream (Google's API with the harness's GEMINI_API_KEY; the CLI holds a dummy key)."""

    name, title, binary, package, pinned = (
        NAME,
        "Gemini CLI",
        "gemini",
        "@google/gemini-cli",
        PINNED_VERSION,
    )
    version_env = FIXED_ENV
    default_model = "gemini-2.5-pro"
    side_models = ("gemini-2.5-flash",)  # and -lite: its routing, checks and compression
    command = staticmethod(command)
    environment = staticmethod(environment)
    parse = staticmethod(parse)
    unsupported = staticmethod(unsupported)
    overlay = staticmethod(apply)
    configuration_files = ("GEMINI.md", ".gemini")

    def read_configuration(self, root: Path) -> Configuration:
        """The project's Gemini CLI configuration, cut into components (`scylla ablate`)."""
        from pytest_scylla.formats.other_configs import read_gemini

        return read_gemini(root)


ADAPTER = GeminiCli()
