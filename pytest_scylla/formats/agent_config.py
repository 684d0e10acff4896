"""A team's own agent configuration, read as the CLI would load it and cut into components that
can be ablated one by one (`scylla ablate plan`).

For Claude Code: CLAUDE.md and .claude/CLAUDE.md (imports resolved) by top-level section, each
skill of .claude/skills/, each sub-agent of .claude/agents/, each MCP server of .mcp.json, each
hook event of .claude/settings.json. What the tier format cannot carry or must keep is still
listed, with the reason, so nothing is dropped silently: the other keys of settings.json are
kept in every arm; slash commands, output styles and unknown files are in no arm.

Everything read is read from inside the project: a link that leads out of it (a linked CLAUDE.md,
skill folder or agent, a link among a skill's files, which its copy would follow) is a SpecError
naming the link, so no host file is carried into the tiers folder and from there into every arm's
requests. Links that stay inside the project are followed, as the CLI follows them."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_scylla.core import links
from pytest_scylla.formats import instructions
from pytest_scylla.formats.resources import front_matter
from pytest_scylla.formats.yamlmarks import SpecError, read_text

NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
MAX_SLUG = 36  # an arm is named `NN-no-<kind>-<slug>`, at most 50 characters
KNOWN = {"CLAUDE.md", "settings.json", "settings.local.json", "skills", "agents"}
MCP_CARRIED = {"command", "args", "env", "type", "enabled", "description", "trust", "timeout"}
MCP_CARRIED |= {"startup_timeout_sec", "tool_timeout_sec"}  # how long the CLI waits, not what
KINDS = {"commands": "command", "command": "command", "prompts": "command"}
KINDS |= {"output-styles": "output-style"}
READER = "scylla ablate plan reads a configuration"
NOT_CARRIED = {
    "commands": "slash commands are typed by a user; a task's prompt never runs one",
    "output-styles": "output styles are chosen per session by a user",
}


@dataclass(frozen=True)
class Component:
    """One part of the configuration. `ablated` False: the same in every arm, for `reason`."""

    kind: str  # section | skill | agent | mcp | hook | setting | command | output-style | file
    name: str  # unique within its kind; the tier resource's name
    where: str  # file[:line], relative to the project
    text: str  # what the arm carries (the section's text, the skill's files, the server's JSON)
    ablated: bool = True
    reason: str = ""
    source: Path | None = None  # the skill folder or agent file to copy
    data: Mapping[str, Any] = field(default_factory=dict)  # an MCP server's or a hook's JSON

    @property
    def id(self) -> str:
        return f"{self.kind}:{self.name}"

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()[:12]


@dataclass(frozen=True)
class Configuration:
    cli: str
    root: Path
    components: tuple[Component, ...]

    @property
    def ablated(self) -> list[Component]:
        return [c for c in self.components if c.ablated]

    @property
    def digest(self) -> str:
        """One hash of every component: a changed configuration is a different experiment."""
        joined = "\n".join(f"{c.id} {c.digest} {c.ablated}" for c in self.components)
        return hashlib.sha256(joined.encode()).hexdigest()[:16]


def slug(text: str) -> str:
    words = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return (words[:MAX_SLUG].rstrip("-") or "section") if words else "section"


def read_claude_code(root: Path) -> Configuration:
    """The Claude Code configuration of the project at `root`; a SpecError names the file and
    line of anything that cannot be read."""
    claude = root / ".claude"
    found = [*sections_in(root, [root / "CLAUDE.md", claude / "CLAUDE.md"])]
    found += [*skills_in(root, claude / "skills"), *agents_in(root, claude / "agents")]
    if (root / ".mcp.json").is_file():
        mcp = inside(root, root / ".mcp.json")
        found += mcp_in(root, mcp, _mcp_json(mcp))
    found += [*_settings(root), *unused_in(root, claude, KNOWN, NOT_CARRIED)]
    return Configuration("claude-code", root, tuple(found))


def _rel(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


def inside(root: Path, path: Path, tree: bool = False) -> Path:
    """`path`, when reading it (with `tree`: and every file under it, links followed) follows no
    link out of the project at `root`; else a SpecError naming the link and what to do."""
    try:
        links.check_read(root, path, READER)
        if tree:
            links.check_tree(root, path, READER)
    except links.LinkOut as exc:
        raise SpecError.one(exc.link, None, f"a link to {exc.target}: {exc.why}") from None
    return path


def sections_in(root: Path, paths: list[Path], imports: bool = True) -> Iterator[Component]:
    """The top-level sections of the instruction files that exist among `paths` (their `@path`
    imports resolved in place when the CLI resolves them)."""
    taken: set[str] = set()
    for path in paths:
        if not inside(root, path).is_file():
            continue
        lines = instructions.resolve(path, root) if imports else instructions.plain(path)
        for part in instructions.sections(lines) if lines else []:
            name = base = slug(part.heading or "preamble")
            count = 2
            while name in taken:
                name, count = f"{base[: MAX_SLUG - 3]}-{count}", count + 1
            taken.add(name)
            first = part.lines[0]
            where = f"{_rel(root, first.path)}:{first.number}"
            yield Component("section", name, where, part.text)


def _front_matter(kind: str, path: Path) -> tuple[str, dict[str, Any]]:
    """The skill's or agent's name: its front matter's, else (as the CLI does) its folder's or
    file's. Front matter with a description is required; anything else is a SpecError."""
    meta, span, body = front_matter(path)
    if meta is None or "__invalid__" in meta:
        raise SpecError.one(path, 1, "expected YAML front matter between '---' lines")
    if not isinstance(meta.get("description"), str) or not meta["description"].strip():
        raise SpecError.one(path, 1, "front matter lacks 'description'")
    if not body.strip():
        raise SpecError.one(path, span + 1, "no instructions after the front matter")
    name = meta.get("name") or (path.parent.name if kind == "skill" else path.stem)
    if not isinstance(name, str) or not NAME.match(name):
        raise SpecError.one(
            path, 2, f"{kind} name '{name}' is not usable: lower-case letters, digits and '-'"
        )
    return name, meta


def _named_files(root: Path, kind: str, paths: list[Path], own_tools: str) -> Iterator[Component]:
    for path in paths:
        folder = inside(root, path.parent if kind == "skill" else path, tree=kind == "skill")
        name, meta = _front_matter(kind, path)
        read_text(path)  # the file the CLI reads must be text; its assets may be anything
        text = _digest_text(folder)
        if own_tools and "tools" in meta:
            reason = f"its tools are named in {own_tools}'s terms, a tier's in Claude Code's"
            yield Component(kind, name, _rel(root, path), text, False, reason + ": in no arm")
        else:
            yield Component(kind, name, _rel(root, path), text, source=folder)


def skills_in(root: Path, folder: Path) -> Iterator[Component]:
    """Each skill of `folder` (`<name>/SKILL.md`); other entries listed as in no arm."""
    found = sorted(folder.glob("*/SKILL.md")) if inside(root, folder).is_dir() else []
    yield from _named_files(root, "skill", found, "")
    for other in sorted(folder.iterdir()) if folder.is_dir() else []:
        if not (other / "SKILL.md").is_file():  # nested deeper, or no skill at all
            reason = "no SKILL.md directly in this folder: the CLI loads no skill from it"
            yield Component(
                "file", slug(other.name), _rel(root, other), _digest_text(other), False, reason
            )


def agents_in(root: Path, folder: Path, own_tools: str = "") -> Iterator[Component]:
    """Each sub-agent file of `folder` (`<name>.md`); `own_tools`: the CLI whose tool names an
    agent's `tools` list would use, where those are not Claude Code's (such an agent is listed,
    in no arm)."""
    found = sorted(folder.glob("*.md")) if inside(root, folder).is_dir() else []
    yield from _named_files(root, "agent", found, own_tools)


def _digest_text(path: Path) -> str:
    """What a file or folder holds, for its hash: each file's path and bytes (links are named,
    never followed)."""
    if path.is_dir() and not path.is_symlink():
        files = [(_rel(path, f), f) for f in sorted(path.rglob("*"))]
    else:
        files = [(path.name, path)]
    return "".join(
        f"--- {rel}\n{'(link)' if f.is_symlink() else f.read_bytes().decode('utf-8', 'replace')}\n"
        for rel, f in files
        if f.is_file() or f.is_symlink()
    )


def load_json(path: Path) -> Any:
    """A JSON file, or a SpecError naming its line and column."""
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise SpecError.one(
            path, exc.lineno, f"column {exc.colno}: {exc.msg} (the file is not JSON)"
        ) from None


def _mcp_json(path: Path) -> Any:
    servers = load_json(path)
    servers = servers.get("mcpServers") if isinstance(servers, dict) else None
    if not isinstance(servers, dict):
        raise SpecError.one(path, 1, "expected an object with 'mcpServers': {name: server}")
    return servers


def mcp_in(root: Path, path: Path, servers: Mapping[str, Any]) -> Iterator[Component]:
    """Each MCP server of `servers` ({name: {command, args, env} or {url}}, read from `path`)."""
    where = _rel(root, path)
    for name, server in sorted(servers.items()):
        text = json.dumps(server, sort_keys=True, indent=1)
        if not isinstance(server, dict) or not NAME.match(name):
            raise SpecError.one(path, None, f"server '{name}': expected a lower-case name and {{}}")
        if server.get("enabled", True) is False:
            reason = "switched off in the configuration (enabled: false): in no arm"
            yield Component("mcp", name, where, text, False, reason, data=server)
        elif not isinstance(server.get("command"), str):
            reason = "a remote server (url): tiers start their servers by command; in no arm"
            yield Component("mcp", name, where, text, False, reason, data=server)
        elif extra := sorted(set(server) - MCP_CARRIED):
            reason = f"its {', '.join(extra)} cannot be carried by a tier's server: in no arm"
            yield Component("mcp", name, where, text, False, reason, data=server)
        else:
            yield Component("mcp", name, where, text, data=server)


def _settings(root: Path) -> Iterator[Component]:
    path = root / ".claude" / "settings.json"
    if not inside(root, path).is_file():
        return
    settings = load_json(path)
    if not isinstance(settings, dict):
        raise SpecError.one(path, 1, "expected a JSON object of settings")
    hooks = settings.get("hooks") or {}
    for event, config in sorted(hooks.items() if isinstance(hooks, dict) else []):
        text = json.dumps(config, sort_keys=True, indent=1)
        yield Component("hook", slug(event), ".claude/settings.json", text, data={event: config})
    for key, value in sorted(settings.items()):
        if key != "hooks":
            text = json.dumps(value, sort_keys=True)
            reason = "a setting, kept in every arm so that the arms differ only by what is ablated"
            yield Component(
                "setting",
                slug(key),
                ".claude/settings.json",
                text,
                False,
                reason,
                data={key: value},
            )


def unused_in(
    root: Path, folder: Path, known: set[str], not_carried: Mapping[str, str]
) -> Iterator[Component]:
    """What the CLI's folder holds that no arm carries (its entries not in `known`): listed with
    the reason (`not_carried`'s, by name), never dropped silently."""
    for path in sorted(folder.iterdir()) if inside(root, folder).is_dir() else []:
        if path.name in known - {"settings.local.json"}:
            continue
        if path.name == "settings.local.json":
            reason = "personal settings (not committed, not the team's): in no arm"
        else:
            reason = not_carried.get(
                path.name, "not a part of the configuration the plan knows: in no arm"
            )
        kind = KINDS.get(path.name, "file")
        if path.is_dir() and not path.is_symlink():
            files = sorted(f for f in path.rglob("*") if f.is_file() or f.is_symlink())
        else:
            files = [path]
        for file in files or [path]:
            name = slug(_rel(path, file).removesuffix(".md") if file != path else path.name)
            yield Component(kind, name, _rel(root, file), _digest_text(file), False, reason)
