"""opencode, headless: `opencode run --format json`, the prompt on stdin, its configuration in
`OPENCODE_CONFIG_CONTENT` (an OpenAI-compatible provider at the gateway: Chat Completions), and
the run's own HOME and XDG folders.

Measured with opencode 1.18.33 (docs/opencode.md): AGENTS.md and the skills list are part of
the system message; skills under `$XDG_CONFIG_HOME/opencode/skills/<name>/SKILL.md`; MCP tools
are named `<server>_<tool>` (servers are named `mcp<name>` here, letters and digits only, so that
they stand apart from built-in tools such as `apply_patch`); the `build` agent's `prompt`
replaces the system prompt; sub-agents are `agent.<name>` settings of mode `subagent` (listed in
the `task` tool's description; with `task` among their tools they call sub-agents too); tool
lists are `tools` switches in opencode's tool names (`TOOLS`). Offline only with the models
fetch off and its plugin folder pre-seeded (else it fetches from the vendor and npm at every
start). It has no append mode and no hard turn limit (the run's budget and timeout bound it).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_scylla.formats.resources import front_matter
from pytest_scylla.formats.tiers import (
    Subtest,
    TierSet,
    agent_tools,
    lead_agents,
)
from pytest_scylla.run import overlay
from pytest_scylla.run.agents import Result
from pytest_scylla.run.agents.base import (
    NpmCli,
    OpenAIUpstream,
    inexpressible,
    mapped,
)
from pytest_scylla.run.agents.claude_code import events

if TYPE_CHECKING:
    from pytest_scylla.formats.components import Configuration

NAME = "opencode"
PINNED_VERSION = "1.18.33"  # what .ci/run installs (npm: opencode-ai)
PROVIDER = "scylla"
DUMMY_KEY = "sk-scylla-dummy-key-the-gateway-holds-the-real-one"
INSTRUCTIONS_FILE = "AGENTS.md"
SERVER_NAME = re.compile(r"[^A-Za-z0-9]")  # tools are <server>_<tool>: no `_` in <server>
MCP_PREFIX = "mcp"  # a server's name on the wire starts so (built-ins such as apply_patch don't)
FIXED_ENV = {
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_CLAUDE_CODE": "1",
}
TOOLS = {
    "Read": "read",
    "Write": "write",
    "Edit": "edit",
    "Bash": "bash",  # Claude Code's
    "Glob": "glob",
    "Grep": "grep",
    "WebFetch": "webfetch",  # -> opencode's
    "WebSearch": "websearch",
    "Agent": "task",
    "Skill": "skill",
    "TodoWrite": "todowrite",
}
# with some models (OpenAI's) it offers `apply_patch` in place of its edit and write tools
ON_WIRE = {
    **{k: (v,) for k, v in TOOLS.items()},
    "Edit": ("edit", "apply_patch"),
    "Write": ("write", "apply_patch"),
}
CONFIG_ENV = "SCYLLA_OPENCODE_CONFIG"  # the overlay's part of the config, merged in environment


def unsupported(sub: Subtest, tiers: TierSet | None = None) -> str | None:
    """Why opencode cannot run this subtest as declared (None: it can)."""
    return inexpressible(sub, tiers, "opencode", ("none", "append"), TOOLS, nested=True)


def _switches(
    allow: tuple[str, ...] | None, deny: tuple[str, ...] = (), servers: tuple[str, ...] = ()
) -> dict[str, bool]:
    """opencode's `tools` switches for a tool list in Claude Code's names: an allow-list turns
    every tool off but those (and the MCP servers' `servers`, which Claude Code's allow-list
    keeps), a deny-list turns those off."""
    if allow is None:
        return dict.fromkeys(mapped(TOOLS, deny) or [], False)
    return {
        "*": False,
        **dict.fromkeys(mapped(TOOLS, allow) or [], True),
        **{f"{server}_*": True for server in servers},
    }


def _agents(sub: Subtest, tiers: TierSet) -> dict[str, Any]:
    """The tier's sub-agents as opencode's `agent` settings (mode subagent: called through the
    `task` tool), each with its prompt and its tools in opencode's names."""
    found: dict[str, Any] = {}
    for name in sub.agents:
        meta, _, body = front_matter(tiers.resource_path("agents", name))
        found[name] = {
            "description": str((meta or {}).get("description", "")),
            "mode": "subagent",
            "prompt": body.strip(),
        }
        listed = agent_tools(tiers, name)
        if listed is not None:
            found[name]["tools"] = _switches(listed)
    return found


def apply(
    sub: Subtest, tiers: TierSet, workspace: Path, run_dir: Path, mcp: dict[str, Any] | None = None
) -> overlay.Overlay:
    """The subtest as opencode expresses it: AGENTS.md, skills in its config folder, MCP servers
    and a replacement prompt in its configuration. ValueError for what it cannot."""
    reason = unsupported(sub, tiers)
    if reason is not None:
        raise ValueError(reason)
    written = overlay.write_instructions(sub, tiers, workspace, INSTRUCTIONS_FILE)
    home = run_dir / "home"
    xdg = {
        f"XDG_{kind}_HOME": str(home / folder)
        for kind, folder in (
            ("CONFIG", ".config"),
            ("DATA", ".local/share"),
            ("STATE", ".local/state"),
            ("CACHE", ".cache"),
        )
    }
    config_dir = home / ".config" / "opencode"
    config_dir.mkdir(parents=True, exist_ok=True)
    _seed_plugin(config_dir)
    for name in sub.skills:
        shutil.copytree(
            tiers.resource_path("skills", name).parent,
            config_dir / "skills" / name,
            symlinks=False,
            dirs_exist_ok=True,
        )
    servers = (mcp if mcp is not None else overlay.mcp_config(sub, tiers, workspace, run_dir))[
        "mcpServers"
    ]
    wire = {name: MCP_PREFIX + SERVER_NAME.sub("", name) for name in servers}
    config = _config(sub, tiers, servers, wire)
    env = {"HOME": str(home), **xdg, CONFIG_ENV: json.dumps(config)}
    return overlay.Overlay(
        args=(),
        env=env,
        written=tuple(written),
        model=sub.model,
        declared=overlay.declaration(sub, tiers),
        instructions_file=INSTRUCTIONS_FILE,
        mcp_on_wire=tuple(wire.values()),
        tool_names=ON_WIRE,
    )


def _seed_plugin(config_dir: Path) -> None:
    """opencode's plugin package, marked present in its config folder: nothing fetched from
    npm at its start."""
    plugin = {"@opencode-ai/plugin": PINNED_VERSION}
    (config_dir / "node_modules").mkdir(exist_ok=True)
    (config_dir / "package.json").write_text(json.dumps({"dependencies": plugin}), "utf-8")
    (config_dir / "package-lock.json").write_text(
        json.dumps({"packages": {"": {"dependencies": plugin}}}), "utf-8"
    )


def _config(
    sub: Subtest, tiers: TierSet, servers: dict[str, Any], wire: dict[str, str]
) -> dict[str, Any]:
    """The overlay's part of opencode's configuration: MCP servers by their wire names, the
    tool switches, the sub-agents and their depth, and a replacement system prompt."""
    config: dict[str, Any] = {
        "mcp": {
            wire[name]: {
                "type": "local",
                "command": [s["command"], *s.get("args", [])],
                "environment": s.get("env") or {},
                "enabled": True,
            }
            for name, s in servers.items()
        }
    }
    if sub.tools_allow is not None or sub.tools_deny:
        config["tools"] = _switches(sub.tools_allow, sub.tools_deny, tuple(wire.values()))
    config["agent"] = _agents(sub, tiers)
    leads = lead_agents(tiers, sub.agents)
    if leads:  # its sub-agents call sub-agents only this deep (default 1): each lead a level
        config["subagent_depth"] = 1 + len(leads)
    prompt = sub.system_prompt
    if prompt is not None and prompt.file is not None:  # replace: the only mode it has
        config["agent"]["build"] = {"prompt": prompt.file.read_text(encoding="utf-8")}
    return config


def command(
    cli: Path | str, model: str, max_turns: int, overlay_args: tuple[str, ...]
) -> list[str]:
    # a title given: no title-generating side call
    return [
        str(cli),
        "run",
        "--format",
        "json",
        "--model",
        f"{PROVIDER}/{model}",
        "--dangerously-skip-permissions",
        "--title",
        "scylla run",
        *overlay_args,
    ]


def environment(
    base: dict[str, str], overlay_env: dict[str, str], base_url: str, model: str
) -> dict[str, str]:
    """The environment; the whole configuration (the provider at the gateway, with the model the
    command names, and the overlay's part) in OPENCODE_CONFIG_CONTENT."""
    env = {**base, **overlay_env, **FIXED_ENV}
    config = json.loads(env.pop(CONFIG_ENV, "{}"))
    config.update(
        {
            "autoupdate": False,
            "share": "disabled",
            "provider": {
                PROVIDER: {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": "pytest-scylla gateway",
                    "options": {"baseURL": base_url, "apiKey": DUMMY_KEY},
                    "models": {model: {"name": model}},
                }
            },
        }
    )
    return {**env, "OPENCODE_CONFIG_CONTENT": json.dumps(config)}


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _tool(part: dict[str, Any], result: Result) -> None:
    name = str(part.get("tool") or "?")
    state = _obj(part.get("state"))
    given = _obj(state.get("input"))
    result.tool_calls.append(name)
    if state.get("status") == "error" or _obj(state.get("metadata")).get("exit") not in (None, 0):
        result.tool_errors += 1
    if name == "skill" and isinstance(given.get("name"), str):
        found, value = result.skills_used, given["name"]
    elif name == "task" and isinstance(given.get("subagent_type"), str):
        found, value = result.agents_used, given["subagent_type"]
    elif name.startswith(MCP_PREFIX) and "_" in name:
        found, value = result.mcp_used, name.split("_")[0][len(MCP_PREFIX) :]
    else:
        return
    if value not in found:
        found.append(value)


def parse(transcript: Path) -> Result:
    """Read `opencode run --format json` output: a step a model call, tokens per step."""
    result = Result()
    if not transcript.exists():
        return result
    usage = {
        "input_tokens": 0,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0,
        "output_tokens": 0,
    }
    said: list[str] = []
    steps = 0
    for event in events(transcript):
        result.events += 1
        kind, part = event.get("type"), _obj(event.get("part"))
        if kind == "step_start":
            said = []
        elif kind == "text":
            said.append(str(part.get("text") or ""))
        elif kind == "tool_use":
            _tool(part, result)
        elif kind == "step_finish":
            steps += 1
            result.found, result.stop_reason = True, str(part.get("reason") or "")
            tokens = _obj(part.get("tokens"))
            cache = _obj(tokens.get("cache"))
            read, write = int(cache.get("read") or 0), int(cache.get("write") or 0)
            usage["input_tokens"] += int(tokens.get("input") or 0) - read - write
            usage["cache_read_input_tokens"] += read
            usage["cache_creation_input_tokens"] += write
            usage["output_tokens"] += int(tokens.get("output") or 0)
        elif kind == "error":
            error = _obj(event.get("error"))
            data = _obj(error.get("data"))
            result.found, result.is_error, result.subtype = True, True, "error"
            said = [str(data.get("message") or error.get("name") or "error")]
    result.num_turns = steps or None
    result.usage = usage if steps else {}
    result.final_message = "".join(said)[:20000]
    if result.found and not result.is_error:
        result.subtype = "success"
    return result


class OpenCode(OpenAIUpstream, NpmCli):
    """The opencode adapter (`agents.Agent`)."""

    name, title, binary, package, pinned = (
        NAME,
        "opencode",
        "opencode",
        "opencode-ai",
        PINNED_VERSION,
    )
    version_env = FIXED_ENV
    default_model = "gpt-5"
    command = staticmethod(command)
    environment = staticmethod(environment)
    parse = staticmethod(parse)
    unsupported = staticmethod(unsupported)
    overlay = staticmethod(apply)
    configuration_files = ("AGENTS.md", "opencode.json", ".opencode")

    def read_configuration(self, root: Path) -> Configuration:
        """The project's opencode configuration, cut into components (`scylla ablate`)."""
        from pytest_scylla.formats.other_configs import read_opencode

        return read_opencode(root)


ADAPTER = OpenCode()
