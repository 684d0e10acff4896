"""The tier overlay: write exactly what a subtest declares into the run, and nothing else.

CLAUDE.md blocks, skills and agents are copied into the workspace; the MCP config, settings and
system-prompt mode become CLI flags and files; the run gets its own HOME and CLAUDE_CONFIG_DIR so
the user's own Claude configuration never leaks in. Files are copied, never linked to host paths.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_scylla.formats import claude_parts
from pytest_scylla.formats.tiers import Subtest, TierSet, deep_merge, lead_agents

BLOCK_SEPARATOR = "\n\n"


@dataclass(frozen=True)
class Overlay:
    args: tuple[str, ...]  # CLI flags for the subtest (system prompt, tools, MCP)
    env: dict[str, str]  # HOME, CLAUDE_CONFIG_DIR and MCP start-up settings
    # workspace paths the overlay wrote or removed (folded into the commit the agent starts
    # from, `workspace.start`, so they never count as the agent's work)
    written: tuple[str, ...]
    model: str | None  # the subtest's model override, if any
    declared: dict[str, Any] = field(default_factory=dict)  # what the ablation check expects
    instructions_file: str = "CLAUDE.md"  # the workspace file the CLI reads instructions from
    mcp_on_wire: tuple[str, ...] | None = None  # the MCP servers as the CLI names their tools
    # kinds (skills, agents) whose built-ins this setup takes out of the request by design
    without_builtins: tuple[str, ...] = ()
    # Claude Code's tool names -> the tools this CLI offers for each (the tier's tool lists
    # are checked so)
    tool_names: dict[str, tuple[str, ...]] | None = None


def _substitute(value: str, values: dict[str, str]) -> str:
    for key, replacement in values.items():
        value = value.replace("${" + key + "}", replacement)
    return value


def mcp_config(sub: Subtest, tiers: TierSet, workspace: Path, run_dir: Path) -> dict[str, Any]:
    """`{"mcpServers": {...}}` for the subtest, with each server's files copied into the run."""
    servers: dict[str, Any] = {}
    for name in sub.mcp_servers:
        decl_file = tiers.resource_path("mcp_servers", name)
        decl = json.loads(decl_file.read_text(encoding="utf-8"))
        server_dir = run_dir / "mcp" / name
        server_dir.mkdir(parents=True, exist_ok=True)
        for rel in decl.get("files", []):
            target = server_dir / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(decl_file.parent / rel, target)  # beside the declaration
        values = {"WORKSPACE": str(workspace), "SERVER_DIR": str(server_dir)}
        servers[name] = {
            "type": "stdio",
            "command": decl["command"],
            "args": [_substitute(a, values) for a in decl.get("args", [])],
            "env": {k: _substitute(v, values) for k, v in decl.get("env", {}).items()},
        }
    return {"mcpServers": servers}


# where the CLIs read a project's own agent configuration from (what else .claude/ holds, such
# as the scripts its hooks run, stays; the memory loaded on demand goes unless the subtest
# keeps it: `_remove_on_demand`)
PROJECT_CONFIG = (
    "CLAUDE.md",
    "CLAUDE.local.md",
    "AGENTS.md",
    "AGENTS.override.md",
    "GEMINI.md",
    ".mcp.json",
    ".claude/CLAUDE.md",
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".claude/skills",
    ".claude/agents",
    ".claude/commands",
    ".agents/skills",
    ".codex",
    ".gemini",
    ".opencode",
    "opencode.json",
    "opencode.jsonc",
)


def remove_project_config(workspace: Path, keep: tuple[str, ...] = ()) -> list[str]:
    """Take the project's own agent configuration out of the workspace (before the agent runs),
    so that an arm carries only what its subtest declares, but for the files it keeps (`keep`:
    a CLAUDE.md that only imports the file its blocks go to, an imported AGENTS.md); the paths
    removed. A link, at the end of a path or on its way, is removed itself, never followed."""
    removed: list[str] = []
    for rel in (r for r in PROJECT_CONFIG if r not in keep):  # a kept one: CLAUDE.md's import
        path = workspace
        for part in Path(rel).parts:
            path = path / part
            if path.is_symlink():
                path.unlink()
                break
            if not path.exists():
                path = workspace
                break
        else:
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink()
        if path != workspace:
            removed.append(path.relative_to(workspace).as_posix())
    return list(dict.fromkeys(removed + _remove_on_demand(workspace, keep)))


def _remove_on_demand(workspace: Path, keep: tuple[str, ...]) -> list[str]:
    """The memory files the CLI loads on demand (the CLAUDE.md of subfolders, the rules of
    .claude/rules/) taken out, but those `keep` names (the plan's components an arm keeps); a
    link among them is taken out too, never followed, unless it is a relative link to a file
    of the workspace (`claude_parts.linked_within`: the CLI in the sandbox follows it there)."""
    removed = []
    for path in claude_parts.on_demand(workspace):
        rel = path.relative_to(workspace).as_posix()
        linked_out = path.is_symlink() and not claude_parts.linked_within(workspace, path)
        if rel not in keep or linked_out:
            path.unlink()
            removed.append(rel)
    return removed


def write_instructions(sub: Subtest, tiers: TierSet, workspace: Path, name: str) -> list[str]:
    """The subtest's instruction blocks appended to the workspace's instructions file `name`
    (CLAUDE.md, AGENTS.md, ...), after the project's own configuration is taken out where the
    subtest says so; the paths written or removed."""
    removed = []
    if sub.project_config == "remove":
        removed = remove_project_config(workspace, sub.keep_files)
    if not sub.claude_md:
        return removed
    blocks = [
        tiers.resource_path("claude_md", b).read_text(encoding="utf-8").strip()
        for b in sub.claude_md
    ]
    target = workspace / name
    existing = target.read_text(encoding="utf-8").rstrip() if target.exists() else ""
    target.write_text(
        BLOCK_SEPARATOR.join([t for t in (existing, *blocks) if t]) + "\n", encoding="utf-8"
    )
    return [*removed, name]


def declaration(sub: Subtest, tiers: TierSet | None = None) -> dict[str, Any]:
    """What the subtest declares, as the ablation check and the records name it (with `tiers`:
    also its orchestrators, the sub-agents that have the Agent tool)."""
    prompt = sub.system_prompt
    leads = lead_agents(tiers, sub.agents) if tiers else []
    return {
        "system_prompt": prompt.mode if prompt else "default",
        "claude_md": list(sub.claude_md),
        "skills": list(sub.skills),
        "agents": list(sub.agents),
        "lead_agents": leads,
        "mcp_servers": list(sub.mcp_servers),
        "tools_allow": list(sub.tools_allow) if sub.tools_allow is not None else None,
        "tools_deny": list(sub.tools_deny),
        "keep_files": list(sub.keep_files),
        **({"claude_md_file": sub.claude_md_file} if sub.claude_md_file else {}),
    }


def apply(
    sub: Subtest, tiers: TierSet, workspace: Path, run_dir: Path, mcp: dict[str, Any] | None = None
) -> Overlay:
    """Write the subtest's files into `workspace` and `run_dir`; return flags and environment.
    `mcp`: the MCP configuration to use (default: the subtest's, as declared)."""
    instructions_file = sub.claude_md_file or "CLAUDE.md"
    written = write_instructions(sub, tiers, workspace, instructions_file)
    claude = workspace / ".claude"
    for name in sub.skills:
        source = tiers.resource_path("skills", name).parent
        shutil.copytree(source, claude / "skills" / name, symlinks=False, dirs_exist_ok=True)
        written.append(f".claude/skills/{name}")
    for name in sub.agents:
        (claude / "agents").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(tiers.resource_path("agents", name), claude / "agents" / f"{name}.md")
        written.append(f".claude/agents/{name}.md")
    settings = dict(sub.settings)
    if sub.tools_deny:
        settings = deep_merge(settings, {"permissions": {"deny": list(sub.tools_deny)}})
    if settings:
        path = claude / "settings.json"
        present = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        claude.mkdir(exist_ok=True)
        merged = deep_merge(present, settings)
        path.write_text(json.dumps(merged, indent=2) + "\n", encoding="utf-8")
        written.append(".claude/settings.json")

    home = run_dir / "home"
    (home / ".claude").mkdir(parents=True, exist_ok=True)
    config_file = run_dir / "mcp.json"
    config = mcp if mcp is not None else mcp_config(sub, tiers, workspace, run_dir)
    config_file.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    # Always strict: a workspace .mcp.json must never add servers the subtest did not declare.
    args: list[str] = ["--mcp-config", str(config_file), "--strict-mcp-config"]
    prompt = sub.system_prompt
    if prompt is not None and prompt.mode == "none":
        args += ["--system-prompt", ""]
    elif prompt is not None and prompt.file is not None:
        text = prompt.file.read_text(encoding="utf-8")
        args += ["--system-prompt" if prompt.mode == "replace" else "--append-system-prompt", text]
    if sub.tools_allow is not None:
        args += ["--tools", ",".join(sub.tools_allow)]
    env = {
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "MCP_CONNECTION_NONBLOCKING": "false",
        "MCP_TIMEOUT": "60000",
        # how long the CLI waits for its servers before the first request (2.1.197: 5 s by
        # default; a server still starting then is left `pending` and WaitForMcpServers added)
        "MCP_CONNECT_TIMEOUT_MS": "60000",
    }
    return Overlay(
        args=tuple(args),
        env=env,
        written=tuple(written),
        model=sub.model,
        declared=declaration(sub, tiers),
        instructions_file=instructions_file,
    )
