"""OpenAI's Codex CLI, headless: `codex exec --json`, the prompt on stdin, a per-run CODEX_HOME
whose config.toml points a custom provider (Responses API) at the gateway.

Measured with Codex 0.169.0 (docs/codex.md): the base instructions are the first developer
message; `model_instructions_file` replaces them (an empty file is refused), and
`developer_instructions` adds a developer message; AGENTS.md of the workspace becomes a user
message ("# AGENTS.md instructions for <dir>"); skills under the workspace's
`.agents/skills/<name>/SKILL.md` (where teams keep theirs) are listed in a developer message;
the project's .codex/config.toml settings that are configuration ride as `-c` (`codex_config`);
MCP servers from `mcp_servers.<name>` appear as a tool namespace `mcp__<name>` (characters
other than letters, digits and `_` become `_`). It has no
max-turns flag (the run's budget and timeout bound it) and no per-tool allow or deny list, and
its sub-agents are not declared by file: subtests that need those are not applicable.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_scylla.formats import codex_config
from pytest_scylla.formats.tiers import Subtest, TierSet
from pytest_scylla.formats.yamlmarks import SpecError
from pytest_scylla.run import overlay
from pytest_scylla.run.agents import Result, SetupError
from pytest_scylla.run.agents.base import NpmCli, OpenAIUpstream
from pytest_scylla.run.agents.claude_code import events

if TYPE_CHECKING:
    from pytest_scylla.formats.components import Configuration

NAME = "codex"
PINNED_VERSION = "0.169.0"  # what .ci/run installs
PROVIDER = "scylla-gateway"
KEY_VARIABLE = "SCYLLA_GATEWAY_KEY"
DUMMY_KEY = "sk-scylla-dummy-key-the-gateway-holds-the-real-one"
FIXED_CONFIG = {  # nothing leaves the run but model calls through the gateway
    "analytics.enabled": "false",
    "web_search": '"disabled"',
    "check_for_update_on_startup": "false",
    "model_provider": f'"{PROVIDER}"',
}
INSTRUCTIONS_FILE = "AGENTS.md"
SKILLS = ".agents/skills"  # where a team keeps its skills, and the overlay puts a subtest's
TOOL_NAME = re.compile(r"[^A-Za-z0-9_]")  # Codex names MCP tools with these characters only


def _toml(value: Any) -> str:
    """A TOML value for `-c key=value` (JSON's strings, arrays and numbers are TOML too)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def unsupported(sub: Subtest) -> str | None:
    """Why Codex cannot run this subtest as declared (None: it can)."""
    if sub.agents:
        return "Codex has no sub-agents declared by file (the subtest declares agents)"
    if sub.tools_allow is not None or sub.tools_deny:
        return "Codex has no per-tool allow or deny list (the subtest restricts tools)"
    if sub.settings:
        return "the subtest's settings are Claude Code settings"
    if sub.system_prompt is not None and sub.system_prompt.mode == "none":
        return "Codex refuses an empty system prompt (model_instructions_file)"
    return None


def apply(
    sub: Subtest, tiers: TierSet, workspace: Path, run_dir: Path, mcp: dict[str, Any] | None = None
) -> overlay.Overlay:
    """The subtest as Codex expresses it: AGENTS.md, skills where a team keeps them (the
    workspace's .agents/skills), the project's Codex settings, MCP servers and the system prompt
    as `-c` settings. Raises ValueError for what Codex cannot express."""
    reason = unsupported(sub)
    if reason is not None:
        raise ValueError(reason)
    try:  # read before the project's .codex/ goes
        settings = codex_config.carried(workspace)
    except SpecError as exc:  # the run ends infra_error with the file's line, not a traceback
        raise SetupError(f"the project's Codex settings: {exc}") from None
    written = overlay.write_instructions(sub, tiers, workspace, INSTRUCTIONS_FILE)
    written += _skills(sub, tiers, workspace)
    home = run_dir / "home" / ".codex"
    home.mkdir(parents=True, exist_ok=True)
    servers = (mcp if mcp is not None else overlay.mcp_config(sub, tiers, workspace, run_dir))[
        "mcpServers"
    ]
    args = [a for key, value in settings for a in ("-c", f"{key}={_toml(value)}")]
    args += _servers(servers) + _system_prompt(sub, run_dir, dict(settings))
    env = {"HOME": str(run_dir / "home"), "CODEX_HOME": str(home)}
    return overlay.Overlay(
        args=tuple(args),
        env=env,
        written=tuple(dict.fromkeys(written)),
        model=sub.model,
        declared=overlay.declaration(sub, tiers),
        instructions_file=INSTRUCTIONS_FILE,
        mcp_on_wire=tuple(TOOL_NAME.sub("_", n) for n in servers),
    )


def _skills(sub: Subtest, tiers: TierSet, workspace: Path) -> list[str]:
    """The subtest's skills copied where a team keeps them, the workspace's .agents/skills/
    (Codex lists them from there, under the same root as the team's own); the paths written."""
    written = []
    for name in sub.skills:
        target = workspace / SKILLS / name
        if target.is_symlink() or (target.exists() and not target.is_dir()):
            target.unlink()
        shutil.copytree(
            tiers.resource_path("skills", name).parent,
            target,
            symlinks=False,
            dirs_exist_ok=True,
        )
        written.append(f"{SKILLS}/{name}")
    return written


def _servers(servers: dict[str, Any]) -> list[str]:
    """Each MCP server as `-c mcp_servers.<name>={...}`."""
    args: list[str] = []
    for name, server in servers.items():
        entry = {k: server[k] for k in ("command", "args", "env") if server.get(k)}
        # required: Codex otherwise gives a server one second to start, then leaves its tools
        # out of the turn without a word (a loaded machine voided T2-09 that way)
        args += [
            "-c",
            f"mcp_servers.{name}={_toml({**entry, 'startup_timeout_sec': 60, 'required': True})}",
        ]
    return args


def _system_prompt(sub: Subtest, run_dir: Path, settings: dict[str, Any]) -> list[str]:
    """A replaced system prompt as `model_instructions_file`, an appended one as
    `developer_instructions` (after the project's own, which it would otherwise replace)."""
    prompt = sub.system_prompt
    if prompt is not None and prompt.file is not None and prompt.mode == "replace":
        target = run_dir / "instructions.md"
        shutil.copyfile(prompt.file, target)
        return ["-c", f"model_instructions_file={_toml(str(target))}"]
    if prompt is not None and prompt.file is not None:
        own = settings.get("developer_instructions")
        text = prompt.file.read_text("utf-8")
        text = f"{own.rstrip()}\n\n{text}" if isinstance(own, str) and own.strip() else text
        return ["-c", f"developer_instructions={_toml(text)}"]
    return []


def command(
    cli: Path | str, model: str, max_turns: int, overlay_args: tuple[str, ...]
) -> list[str]:
    fixed = [a for k, v in FIXED_CONFIG.items() for a in ("-c", f"{k}={v}")]
    return [
        str(cli),
        "exec",
        "--json",
        "--skip-git-repo-check",
        "--sandbox",
        "danger-full-access",
        "--model",
        model,
        *fixed,
        *overlay_args,
        "-",
    ]


def environment(base: dict[str, str], overlay_env: dict[str, str], base_url: str) -> dict[str, str]:
    """The environment; and the provider pointing at the gateway, in the run's config.toml
    (Codex reads a provider's address from its configuration only)."""
    env = {**base, **overlay_env, KEY_VARIABLE: DUMMY_KEY}
    home = Path(env.get("CODEX_HOME") or Path(env["HOME"]) / ".codex")
    home.mkdir(parents=True, exist_ok=True)
    provider = {
        "name": PROVIDER,
        "base_url": base_url,
        "env_key": KEY_VARIABLE,
        "wire_api": "responses",
        "request_max_retries": 2,
        "stream_max_retries": 2,
    }
    (home / "config.toml").write_text(
        f"[model_providers.{PROVIDER}]\n"
        + "".join(f"{k} = {_toml(v)}\n" for k, v in provider.items()),
        encoding="utf-8",
    )
    return {**env, "CODEX_HOME": str(home)}


def _item(item: dict[str, Any], result: Result) -> None:
    """One finished item of the run: a command, a patch, an MCP call, a message."""
    kind = item.get("type")
    if kind == "agent_message":
        result.final_message = str(item.get("text") or "")
        return
    name = {
        "command_execution": "exec_command",
        "file_change": "apply_patch",
        "web_search": "web_search",
    }.get(str(kind))
    if kind == "mcp_tool_call":
        server, tool = str(item.get("server") or "?"), str(item.get("tool") or "?")
        name = f"mcp__{server}__{tool}"
        if server not in result.mcp_used:
            result.mcp_used.append(server)
    if name is None:
        return
    result.tool_calls.append(name)
    if item.get("status") == "failed" or item.get("exit_code") not in (None, 0):
        result.tool_errors += 1
    command = str(item.get("command") or "")
    if "/skills/" in command and "SKILL.md" in command:  # reading a skill is using it
        skill = command.split("/skills/", 1)[1].split("/", 1)[0]
        if skill and skill not in result.skills_used:
            result.skills_used.append(skill)


def parse(transcript: Path) -> Result:
    """Read `codex exec --json` output (JSON lines; a cut-off last line is skipped)."""
    result = Result()
    if not transcript.exists():
        return result
    usage: dict[str, int] = {}
    for event in events(transcript):
        result.events += 1
        kind = event.get("type")
        if kind == "thread.started":
            result.init = {"thread_id": event.get("thread_id")}
        elif kind == "item.completed" and isinstance(event.get("item"), dict):
            _item(event["item"], result)
        elif kind == "turn.completed":
            result.found, result.subtype = True, "success"
            counts = event.get("usage")
            for key, value in counts.items() if isinstance(counts, dict) else ():
                if isinstance(value, int):
                    usage[key] = usage.get(key, 0) + value
        elif kind == "turn.failed":
            error = event.get("error")
            result.found, result.is_error, result.subtype = True, True, "error"
            result.final_message = str(
                (error.get("message") if isinstance(error, dict) else error) or ""
            )[:2000]
    cached = usage.get("cached_input_tokens", 0)
    if usage:
        result.usage = {
            "input_tokens": usage.get("input_tokens", 0) - cached,
            "cache_read_input_tokens": cached,
            "cache_creation_input_tokens": usage.get("cache_write_input_tokens", 0),
            "output_tokens": usage.get("output_tokens", 0),
        }
    return result


class Codex(OpenAIUpstream, NpmCli):
    """The Codex adapter (`agents.Agent`)."""

    name, title, binary, package, pinned = (
        NAME,
        "Codex CLI",
        "codex",
        "@openai/codex",
        PINNED_VERSION,
    )
    default_model = "gpt-5"
    command = staticmethod(command)
    environment = staticmethod(environment)
    parse = staticmethod(parse)
    unsupported = staticmethod(unsupported)
    overlay = staticmethod(apply)
    configuration_files = ("AGENTS.md", ".codex", ".agents/skills")

    def read_configuration(self, root: Path) -> Configuration:
        """The project's Codex configuration, cut into components (`scylla ablate`)."""
        from pytest_scylla.formats.other_configs import read_codex

        return read_codex(root)


ADAPTER = Codex()
