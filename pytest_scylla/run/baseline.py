"""The ablation expectation: what the CLI brings by itself (its *baseline*, measured once per
CLI version, sandbox and tool configuration) plus what a subtest declares is exactly what the
gateway must see in a run's first request. Also whom the oracle delegates to, so sub-agent
paths run for real."""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pytest_scylla.core import record
from pytest_scylla.core.tempdirs import claim_private, release_private
from pytest_scylla.formats import claude_parts, instructions
from pytest_scylla.formats.resources import front_matter
from pytest_scylla.formats.tiers import Subtest, TierSet, agent_tools, lead_agents
from pytest_scylla.run import agents, overlay, workspace
from pytest_scylla.run.agents import Agent, SetupError
from pytest_scylla.run.gateway import Gateway, Route
from pytest_scylla.run.gateway import reached as ablation
from pytest_scylla.run.gateway.oracle.model import Script
from pytest_scylla.run.sandbox import Sandbox, base_env

FORM = 2  # what a stored baseline holds: 2 = also the request with a server connecting


def measure(
    agent: Agent,
    gateway: Gateway,
    sandbox: Sandbox,
    cli: Path,
    cli_version: str,
    model: str,
    cache_dir: Path,
    allow: tuple[str, ...] | None = None,
    deny: tuple[str, ...] = (),
    image: str | None = None,
) -> dict[str, Any]:
    """What the CLI brings with nothing declared but a tool configuration: its built-in tools,
    skills and agents and the size of its default system prompt. (The tool configuration matters:
    this CLI offers Glob and Grep when Bash is denied, and lists skills only with the Skill tool.)
    Measured once per CLI version, sandbox, model (the CLI's default system prompt differs by
    model) and tool configuration, cached on disk; the gateway answers the single call itself,
    so it costs nothing."""
    cache = _cache_file(agent, sandbox, cli_version, model, cache_dir, allow, deny, image)
    with workspace.locked(cache_dir / "baseline.lock"):
        if cache.exists():
            return _baseline(json.loads(cache.read_text(encoding="utf-8")))
        probe = _Probe(agent, gateway, sandbox, cli, model, image)
        data = {
            "cli_version": cli_version,
            "sandbox": sandbox.name,
            "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "request": probe.first_request(lambda private: _bare(agent, private, allow, deny)),
        }
        if getattr(agent, "overlay", None) is None:  # Claude Code: a server connecting
            data["connecting_request"] = probe.first_request(
                lambda private: _connecting(private, *_bare(agent, private, allow, deny))
            )
        record.write_json(cache, data)
        return _baseline(data)


@dataclass(frozen=True)
class _Probe:
    """One CLI call of the baseline run, answered by the gateway itself (it costs nothing), in
    a run folder (and, under docker, a container) of its own."""

    agent: Agent
    gateway: Gateway
    sandbox: Sandbox
    cli: Path
    model: str
    image: str | None

    def first_request(
        self, setup: Callable[[Path], tuple[tuple[str, ...], dict[str, str]]]
    ) -> dict[str, Any]:
        """The CLI's first model request with the flags and environment `setup` makes in a
        fresh run folder."""
        private = claim_private()  # removed by the next session if this one is killed
        try:
            self.sandbox.assign(private, self.image)
            ws = _make_workspace(private)
            (private / "tmp").mkdir()
            return self._call(private, ws, *setup(private))
        finally:
            self.sandbox.close(private)
            release_private(private)

    def _call(
        self, private: Path, ws: Path, flags: tuple[str, ...], extra: dict[str, str]
    ) -> dict[str, Any]:
        agent, sandbox = self.agent, self.sandbox
        key = f"baseline-{secrets.token_hex(4)}"
        probe = replace(Script.for_case("noop", None, ws), faults=False)
        route = self.gateway.open(
            Route(key=key, log_path=private / "calls.jsonl", script=probe, capture_first=True)
        )
        env = agents.environment(agent, base_env(private), extra, sandbox.base_url(key), self.model)
        argv = agent.command(sandbox.cli(self.cli, self.image), self.model, 1, flags)
        # the CLI's output outside the run's folder (a copying sandbox replaces that folder
        # with the container's copy when the command ends)
        with tempfile.TemporaryDirectory(prefix="scylla-baseline-") as own:
            out_path, err_path = Path(own) / "out.jsonl", Path(own) / "err.txt"
            with open(out_path, "wb") as out, open(err_path, "wb") as err:
                finished = sandbox.run(
                    argv, ws, private, env, "Say OK.", 120, out, err, bridge=True
                )
            self.gateway.close(key)
            if not route.first_request:
                said = agent.parse(out_path).final_message
                raise SetupError(
                    f"could not measure the CLI's baseline request (exit {finished.exit_code}): "
                    + (said or err_path.read_text(errors="replace")[-500:])
                )
        return route.first_request


def _connecting(
    private: Path, flags: tuple[str, ...], extra: dict[str, str]
) -> tuple[tuple[str, ...], dict[str, str]]:
    """Claude Code's flags and environment with one MCP server that is still connecting at the
    first request (it never answers; the CLI waits 0.2 s for it): what the CLI adds to the
    request then (2.1.197: WaitForMcpServers) is measured, never listed by hand."""
    config = private / "mcp-connecting.json"
    server = {"command": "sh", "args": ["-c", "sleep 300"]}
    config.write_text(json.dumps({"mcpServers": {"connecting": server}}), encoding="utf-8")
    at = flags.index("--mcp-config")
    flags = (*flags[:at], "--mcp-config", str(config), *flags[at + 2 :])
    wait = {"MCP_CONNECTION_NONBLOCKING": "false", "MCP_CONNECT_TIMEOUT_MS": "200"}
    return flags, {**extra, **wait}


def _cache_file(
    agent: Agent,
    sandbox: Sandbox,
    cli_version: str,
    model: str,
    cache_dir: Path,
    allow: tuple[str, ...] | None,
    deny: tuple[str, ...],
    image: str | None,
) -> Path:
    """Where the baseline of this CLI version, sandbox, model, tool configuration and image
    is kept (`FORM`: baselines stored before it lack the connecting request)."""
    container = sandbox.describe(image)  # docker: the image's id (a baseline per image)
    named = json.dumps([model, allow, list(deny), container, FORM])
    key = hashlib.sha256(named.encode()).hexdigest()[:10]
    return cache_dir / (f"baseline-{agent.name}-{_safe(cli_version)}-{sandbox.name}-{key}.json")


def _make_workspace(private: Path) -> Path:
    """The baseline run's workspace: a git repository with one committed README."""
    ws = private / "work"
    ws.mkdir()
    (ws / "README.md").write_text("baseline\n", encoding="utf-8")
    workspace.git(["init", "-q"], ws)
    workspace.git(["add", "-A"], ws)
    workspace.git(["commit", "-q", "-m", "baseline"], ws)
    return ws


def _bare(
    agent: Agent, private: Path, allow: tuple[str, ...] | None, deny: tuple[str, ...]
) -> tuple[tuple[str, ...], dict[str, str]]:
    """The flags and environment of a run that declares nothing but a tool configuration:
    the adapter's own overlay of an empty subtest, or Claude Code's flags."""
    ws = private / "work"
    own = getattr(agent, "overlay", None)
    if own is not None:
        bare = Subtest(
            tier="T0",
            name="00-baseline",
            description="baseline",
            file=ws,
            line=0,
            tools_allow=allow,
            tools_deny=deny,
        )
        ov = own(bare, None, ws, private, {"mcpServers": {}})
        return ov.args, ov.env
    (private / "home" / ".claude").mkdir(parents=True)
    (private / "mcp.json").write_text('{"mcpServers": {}}\n', encoding="utf-8")
    flags: tuple[str, ...] = ("--mcp-config", str(private / "mcp.json"), "--strict-mcp-config")
    if allow is not None:
        flags += ("--tools", ",".join(allow))
    if deny:
        (ws / ".claude").mkdir()
        (ws / ".claude" / "settings.json").write_text(
            json.dumps({"permissions": {"deny": list(deny)}}), encoding="utf-8"
        )
    return flags, {
        "HOME": str(private / "home"),
        "CLAUDE_CONFIG_DIR": str(private / "home" / ".claude"),
    }


def _baseline(data: dict[str, Any]) -> dict[str, Any]:
    """The built-ins of a stored baseline request (parsed on load, so the parser can improve),
    and the tools the CLI adds while a declared MCP server is connecting."""
    seen = ablation.observe(data["request"])
    connecting = data.get("connecting_request")
    added = ablation.observe(connecting).tools - seen.tools if connecting else set()
    return {
        "cli_version": data["cli_version"],
        "tools": sorted(seen.tools),
        "skills": sorted(seen.skills),
        "agents": sorted(seen.agents),
        "system_chars": len(seen.system),
        "connecting_tools": sorted(added),
    }


def denied(sub: Subtest) -> tuple[str, ...]:
    """The rules a run's baseline is measured with: the subtest's deny list and the deny rules
    of its settings (a team's `.claude/settings.json`). Which rules drop a tool from the request
    is the CLI's to decide (2.1.197 drops `WebFetch` and `Edit(*)`, keeps Bash for
    `Bash(rm:*)`), so the baseline run of the same CLI with the same rules measures it."""
    permissions = sub.settings.get("permissions")
    rules = permissions.get("deny") if isinstance(permissions, dict) else None
    listed = [r for r in rules if isinstance(r, str)] if isinstance(rules, list) else []
    return tuple(sorted({*sub.tools_deny, *listed}))


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in ".-" else "_" for c in text)[:60]


def expectation(
    ov: overlay.Overlay, sub: Subtest, tiers: TierSet, ws: Path, baseline: dict[str, Any]
) -> ablation.Expected:
    declared = ov.declared
    tools = set(baseline["tools"])

    def builtin(kind: str) -> frozenset[str]:
        return frozenset() if kind in ov.without_builtins else frozenset(baseline[kind])

    def wire(names: list[str]) -> list[str]:  # the tool lists as the CLI names the tools
        return [w for n in names for w in ov.tool_names.get(n, (n,))] if ov.tool_names else names

    library = sorted({p.stem for d in tiers.dirs for p in (d / "blocks").glob("*.md")})
    prompt = sub.system_prompt
    files, skills = on_demand(ws) if sub.project_config == "remove" else (set(), set())
    kept = {str(ws / rel) for rel in sub.keep_files}  # the project's files the arm keeps
    blocks = [tiers.resource_path("claude_md", b).read_text("utf-8") for b in declared["claude_md"]]
    return ablation.Expected(
        kept_files=frozenset(kept),
        output_style=_output_style(sub, ov.instructions_file),
        required_files=frozenset(_loaded_first(sub, ws, ov.instructions_file, blocks)),
        watched_files=frozenset(files - kept - {str(ws / ov.instructions_file)}),
        watched_skills=frozenset(skills),
        known_files=frozenset(files),
        connecting_tools=frozenset(baseline.get("connecting_tools") or ()),
        tools=frozenset(tools),
        mcp_servers=frozenset(
            declared["mcp_servers"] if ov.mcp_on_wire is None else ov.mcp_on_wire
        ),
        skills=builtin("skills") | frozenset(declared["skills"]) | _workflows(sub, ws),
        agents=builtin("agents") | frozenset(declared["agents"]),
        tools_allow=(
            frozenset(wire(declared["tools_allow"]))
            if declared["tools_allow"] is not None
            else None
        ),
        tools_deny=frozenset(wire(declared["tools_deny"])),
        claude_md_path=str(ws / ov.instructions_file),
        claude_md_blocks=tuple(zip(declared["claude_md"], blocks, strict=True)),
        other_blocks=tuple(
            (b, tiers.resource_path("claude_md", b).read_text("utf-8"))
            for b in library
            if b not in declared["claude_md"]
        ),
        descriptions=tuple(
            _description(tiers, kind, name)
            for kind in ("skills", "agents")
            for name in declared[kind]
        ),
        system_mode=declared["system_prompt"],
        system_text=(
            prompt.file.read_text("utf-8")
            if prompt is not None and prompt.file is not None
            else None
        ),
        default_system_chars=int(baseline["system_chars"]),
    )


def _output_style(sub: Subtest, home: str) -> str | None:
    """The output style the subtest's settings name (Claude Code's `outputStyle`; `default`
    is none; another CLI, whose instructions file is its own, has none)."""
    if home not in ("CLAUDE.md", sub.claude_md_file):
        return None
    style = sub.settings.get("outputStyle")
    return style if isinstance(style, str) and style.lower() != "default" else None


def _workflows(sub: Subtest, ws: Path) -> frozenset[str]:
    """The skills the CLI lists for the workflows of .claude/workflows/ the arm keeps (read
    before the agent starts)."""
    if sub.project_config != "remove":
        return frozenset()
    kept = [ws / r for r in sub.keep_files if r.startswith(".claude/workflows/")]
    return frozenset(claude_parts.workflow_name(p) for p in kept if p.is_file())


def _loaded_first(sub: Subtest, ws: Path, home: str, blocks: list[str]) -> set[str]:
    """The kept files Claude Code loads in the first request (a Claude Code arm of a plan): the
    files its blocks import (beside the file they are written to) and the rules of
    .claude/rules/ it keeps that no `paths:` scopes, read before the agent starts."""
    if sub.project_config != "remove" or home not in ("CLAUDE.md", sub.claude_md_file):
        return set()
    kept = set(sub.keep_files)
    found = {
        os.path.normpath((ws / home).parent / target)
        for text in blocks
        for target in instructions.imports_in(text)
        if os.path.normpath(Path(home).parent / target) in kept
    }
    for rel in sorted(r for r in kept if r.startswith(".claude/rules/") and r.endswith(".md")):
        path = ws / rel
        if path.is_file() and not path.is_symlink():
            meta, _, _ = front_matter(path)
            if not (meta or {}).get("paths"):
                found.add(str(path))
    return found


MEMORY_FILES = frozenset({"CLAUDE.md", "CLAUDE.local.md"})
SKIPPED = frozenset({".git", "node_modules"})


def on_demand(ws: Path) -> tuple[set[str], set[str]]:
    """The configuration in the workspace, before the agent, that the CLI loads once the agent
    works in a subfolder: the CLAUDE.md files (paths, as the CLI names them) and `.claude/rules`
    files, and the skills (names) of `.claude/skills` folders below the root. Taken before the
    agent, so nothing the agent writes later counts as configuration."""
    files: set[str] = set()
    skills: set[str] = set()
    for folder, dirs, names in os.walk(ws):  # links are not followed
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED)
        here = Path(folder)
        files.update(str(here / n) for n in names if n in MEMORY_FILES)
        if here.parent.name == ".claude" and here.name == "rules":
            files.update(str(here / n) for n in names if n.endswith(".md"))
        if here.name == "skills" and here.parent.name == ".claude" and here.parent.parent != ws:
            skills.update(d for d in dirs if (here / d / "SKILL.md").is_file())
    return files, skills


def delegates(tiers: TierSet, sub: Subtest) -> tuple[str, ...]:
    """Whom the oracle hands the work to, so sub-agent paths run for real: an orchestrator
    (an agent with the Agent tool) if the subtest has one, then an agent that can write."""

    def writes(name: str) -> bool:  # an agent that lists no tools has them all
        listed = agent_tools(tiers, name)
        return listed is None or "Write" in listed

    lead = next(iter(lead_agents(tiers, sub.agents)), None)
    writer = next((a for a in sub.agents if writes(a)), None)
    return tuple(a for a in (lead, writer) if a)


def _description(tiers: TierSet, kind: str, name: str) -> tuple[str, str]:
    meta, _, _ = front_matter(tiers.resource_path(kind, name))  # type: ignore[arg-type]
    return name, str((meta or {}).get("description", ""))
