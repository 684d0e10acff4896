"""The configurations of the other CLIs, cut into the same components as Claude Code's
(`agent_config`), so that `scylla ablate plan --agent <cli>` plans their ablation too (each
adapter of `run.agents` offers its reader as `read_configuration`).

- Codex: AGENTS.md by top-level section (Codex resolves no imports; AGENTS.override.md, where
  present, is read in its place, as Codex does), skills in .agents/skills/ (and the older
  .codex/skills/), MCP servers in .codex/config.toml (`[mcp_servers.<name>]`). Codex declares
  no sub-agents by file; the file's other keys are Codex settings, carried in every arm or
  dropped with the reason, and subfolders' AGENTS.md are listed, kept in place (`codex_config`).
- Gemini CLI: GEMINI.md (or the files `context.fileName` names in .gemini/settings.json) by
  section, imports resolved; skills in .gemini/skills/, sub-agents in .gemini/agents/, MCP
  servers in the settings' `mcpServers`. Extensions and custom commands are in no arm.
- opencode: AGENTS.md (CLAUDE.md when there is none, as opencode falls back) and the files of
  `instructions` in opencode.json, by section; skills in .opencode/skills/, sub-agents in
  .opencode/agent(s)/, local MCP servers in the configuration's `mcp`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pytest_scylla.formats import codex_config
from pytest_scylla.formats.agent_config import (
    Component,
    Configuration,
    agents_in,
    inside,
    load_json,
    mcp_in,
    sections_in,
    skills_in,
    slug,
    unused_in,
)
from pytest_scylla.formats.claude_parts import SKIP_DIRS
from pytest_scylla.formats.components import rel
from pytest_scylla.formats.yamlmarks import SpecError, read_text

SETTING = (
    "a setting of {cli}: a tier carries Claude Code's settings only, so it is in no arm (set it "
)
SETTING += "for every arm with the session's options if it matters)"
CODEX_KNOWN = {"config.toml", "skills"}
GEMINI_KNOWN = {"settings.json", "settings.local.json", "skills", "agents", "GEMINI.md"}
OPENCODE_KNOWN = {"skills", "skill", "agent", "agents"}
EXTENSIONS = "an extension is installed per user with `gemini extensions`; a tier has none"
NOT_CARRIED = {
    "commands": "custom commands are typed by a user; a task's prompt never runs one",
    "command": "custom commands are typed by a user; a task's prompt never runs one",
    "prompts": "custom prompts are typed by a user; a task's prompt never runs one",
    "extensions": EXTENSIONS + ": in no arm",
    "hooks.json": "Codex's hooks are not carried by a tier yet: in no arm (the full arm "
    "differs from the team's run by them)",
}


def _settings(cli: str, where: str, settings: Mapping[str, Any], skip: set[str]) -> list[Component]:
    reason = SETTING.format(cli=cli)
    return [
        Component("setting", slug(k), where, repr(v), False, reason, data={k: v})
        for k, v in sorted(settings.items())
        if k not in skip
    ]


def read_codex(root: Path) -> Configuration:
    """Codex's configuration of the project at `root`."""
    override = root / "AGENTS.override.md"
    found = [*sections_in(root, [override if override.is_file() else root / "AGENTS.md"], False)]
    found += [*skills_in(root, root / ".agents" / "skills")]
    found += [*skills_in(root, root / ".codex" / "skills")]
    path = inside(root, root / ".codex" / "config.toml")
    if path.is_file():
        config = codex_config.read(path)
        servers = config.get("mcp_servers") or {}
        if not isinstance(servers, dict):
            raise SpecError.one(path, None, "expected [mcp_servers.<name>] tables")
        found += mcp_in(root, path, servers)
        found += codex_config.settings_in(root, path, config)
    found += unused_in(root, root / ".codex", CODEX_KNOWN, NOT_CARRIED)
    found += codex_config.nested_in(root)
    return Configuration("codex", root, tuple(found))


def read_gemini(root: Path) -> Configuration:
    """Gemini CLI's configuration of the project at `root`."""
    path = inside(root, root / ".gemini" / "settings.json")
    settings = load_json(path) if path.is_file() else {}
    if not isinstance(settings, dict):
        raise SpecError.one(path, 1, "expected a JSON object of settings")
    names = (settings.get("context") or {}).get("fileName") or "GEMINI.md"
    names = [names] if isinstance(names, str) else names
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise SpecError.one(path, None, "context.fileName: expected a file name or a list")
    found = [*sections_in(root, [root / n for n in names] + [root / ".gemini" / "GEMINI.md"])]
    found += [*skills_in(root, root / ".gemini" / "skills")]
    found += [*agents_in(root, root / ".gemini" / "agents", "Gemini CLI")]
    servers = settings.get("mcpServers") or {}
    if not isinstance(servers, dict):
        raise SpecError.one(path, None, "mcpServers: expected {name: server}")
    found += mcp_in(root, path, servers)
    found += _settings("Gemini CLI", ".gemini/settings.json", settings, {"mcpServers"})
    found += unused_in(root, root / ".gemini", GEMINI_KNOWN, NOT_CARRIED)
    found += _nested(root, set(names))
    return Configuration("gemini-cli", root, tuple(found))


NESTED_KEPT = (
    "a subfolder's {name}, which Gemini CLI reads with the project's memory: left in the "
    "workspace of every arm (not varied)"
)


def _nested(root: Path, names: set[str]) -> Iterator[Component]:
    """Each subfolder's instruction file (`packages/core/GEMINI.md`): listed, kept in every arm
    (the overlay leaves it in place), never dropped silently."""
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        here = Path(folder)
        for name in sorted(names & set(files)) if here not in (root, root / ".gemini") else []:
            path = inside(root, here / name)
            where, why = rel(root, path), NESTED_KEPT.format(name=name)
            yield Component("file", slug(rel(root, path)), where, read_text(path), False, why)


def read_opencode(root: Path) -> Configuration:
    """opencode's configuration of the project at `root`."""
    path = inside(root, root / "opencode.json")
    config = load_json(path) if path.is_file() else {}
    if not isinstance(config, dict):
        raise SpecError.one(path, 1, "expected a JSON object (opencode's configuration)")
    files = [root / "AGENTS.md" if (root / "AGENTS.md").is_file() else root / "CLAUDE.md"]
    files += _instruction_files(root, path, config.get("instructions") or [])
    found = [*sections_in(root, files, False)]
    for folder in ("skills", "skill"):
        found += skills_in(root, root / ".opencode" / folder)
    for folder in ("agents", "agent"):
        found += agents_in(root, root / ".opencode" / folder, "opencode")
    found += _opencode_agents(path, config.get("agent") or {})
    servers = config.get("mcp") or {}
    if not isinstance(servers, dict):
        raise SpecError.one(path, None, "mcp: expected {name: server}")
    found += mcp_in(root, path, {k: _local(path, k, v) for k, v in servers.items()})
    found += _settings("opencode", "opencode.json", config, {"mcp", "agent", "instructions"})
    found += unused_in(root, root / ".opencode", OPENCODE_KNOWN, NOT_CARRIED)
    return Configuration("opencode", root, tuple(found))


def _instruction_files(root: Path, path: Path, patterns: Any) -> list[Path]:
    """The files opencode's `instructions` names (paths or globs, relative to the project)."""
    if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
        raise SpecError.one(path, None, "instructions: expected a list of paths or globs")
    found: list[Path] = []
    for pattern in patterns:
        if pattern.startswith(("/", "~", "http://", "https://")) or ".." in Path(pattern).parts:
            raise SpecError.one(
                path, None, f"instructions: '{pattern}' is outside the project; copy it in"
            )
        found += sorted(p for p in root.glob(pattern) if p.is_file() and p not in found)
    return found


def _local(path: Path, name: str, server: Any) -> Any:
    """opencode's `{"type": "local", "command": [...], "environment": {...}}` in the shape of
    .mcp.json's servers; a remote one keeps its url."""
    if not isinstance(server, dict):
        raise SpecError.one(path, None, f"mcp.{name}: expected an object")
    if server.get("type") != "local":
        return server
    command = server.get("command")
    if not isinstance(command, list) or not command or not all(isinstance(c, str) for c in command):
        raise SpecError.one(path, None, f"mcp.{name}.command: expected a list of strings")
    shaped = {"command": command[0], "args": command[1:]}
    if server.get("environment"):
        shaped["env"] = server["environment"]
    if server.get("enabled") is False:
        shaped["enabled"] = False
    return shaped


def _opencode_agents(path: Path, agents: Any) -> Iterator[Component]:
    """The agents opencode.json declares: listed, in no arm (a tier's sub-agents are files)."""
    if not isinstance(agents, dict):
        raise SpecError.one(path, None, "agent: expected {name: agent}")
    reason = "declared in opencode.json: a tier's sub-agents are files (move it to "
    reason += ".opencode/agents/<name>.md to ablate it); in no arm"
    for name, agent in sorted(agents.items()):
        yield Component("agent", slug(name), "opencode.json", repr(agent), False, reason)
