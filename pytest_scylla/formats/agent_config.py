"""A team's own agent configuration, read as the CLI would load it and cut into components that
can be ablated one by one (`scylla ablate plan`).

For Claude Code: CLAUDE.md and .claude/CLAUDE.md (imports resolved) by top-level section, each
skill of .claude/skills/, each sub-agent of .claude/agents/, each MCP server of .mcp.json, each
hook event of .claude/settings.json. What the tier format cannot carry or must keep is still
listed, with the reason, so nothing is dropped silently: the other keys of settings.json are
kept in every arm; slash commands, output styles and unknown files are in no arm."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_scylla.formats import instructions
from pytest_scylla.formats.resources import front_matter
from pytest_scylla.formats.yamlmarks import SpecError, read_text

NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
MAX_SLUG = 36  # an arm is named `NN-no-<kind>-<slug>`, at most 50 characters
KNOWN = {"CLAUDE.md", "settings.json", "settings.local.json", "skills", "agents"}
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
    found = [*_sections(root), *_skills(root), *_agents(root), *_mcp_servers(root)]
    found += [*_settings(root), *_unused(root)]
    return Configuration("claude-code", root, tuple(found))


def _rel(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


def _sections(root: Path) -> Iterator[Component]:
    taken: set[str] = set()
    for path in (root / "CLAUDE.md", root / ".claude" / "CLAUDE.md"):
        if not path.is_file():
            continue
        for part in instructions.sections(instructions.resolve(path, root)):
            name = base = slug(part.heading or "preamble")
            count = 2
            while name in taken:
                name, count = f"{base[: MAX_SLUG - 3]}-{count}", count + 1
            taken.add(name)
            first = part.lines[0]
            where = f"{_rel(root, first.path)}:{first.number}"
            yield Component("section", name, where, part.text)


def _front_matter(kind: str, path: Path) -> str:
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
    return name


def _named_files(root: Path, kind: str, paths: list[Path]) -> Iterator[Component]:
    for path in paths:
        name = _front_matter(kind, path)
        folder = path.parent if kind == "skill" else path
        read_text(path)  # the file the CLI reads must be text; its assets may be anything
        yield Component(kind, name, _rel(root, path), _digest_text(folder), source=folder)


def _skills(root: Path) -> Iterator[Component]:
    folder = root / ".claude" / "skills"
    found = sorted(folder.glob("*/SKILL.md")) if folder.is_dir() else []
    yield from _named_files(root, "skill", found)
    for other in sorted(folder.iterdir()) if folder.is_dir() else []:
        if not (other / "SKILL.md").is_file():  # nested deeper, or no skill at all
            reason = "no SKILL.md directly in this folder: the CLI loads no skill from it"
            yield Component(
                "file", slug(other.name), _rel(root, other), _digest_text(other), False, reason
            )


def _agents(root: Path) -> Iterator[Component]:
    folder = root / ".claude" / "agents"
    found = sorted(folder.glob("*.md")) if folder.is_dir() else []
    yield from _named_files(root, "agent", found)


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


def _mcp_servers(root: Path) -> Iterator[Component]:
    path = root / ".mcp.json"
    if not path.is_file():
        return
    servers = load_json(path)
    servers = servers.get("mcpServers") if isinstance(servers, dict) else None
    if not isinstance(servers, dict):
        raise SpecError.one(path, 1, "expected an object with 'mcpServers': {name: server}")
    for name, server in sorted(servers.items()):
        text = json.dumps(server, sort_keys=True, indent=1)
        if not isinstance(server, dict) or not NAME.match(name):
            raise SpecError.one(path, None, f"server '{name}': expected a lower-case name and {{}}")
        if not isinstance(server.get("command"), str):
            reason = "a remote server (url): tiers start their servers by command; in no arm"
            yield Component("mcp", name, ".mcp.json", text, False, reason, data=server)
        else:
            yield Component("mcp", name, ".mcp.json", text, data=server)


def _settings(root: Path) -> Iterator[Component]:
    path = root / ".claude" / "settings.json"
    if not path.is_file():
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


def _unused(root: Path) -> Iterator[Component]:
    """What .claude/ holds that no arm carries: listed with the reason, never dropped silently."""
    folder = root / ".claude"
    for path in sorted(folder.iterdir()) if folder.is_dir() else []:
        if path.name in KNOWN - {"settings.local.json"}:
            continue
        if path.name == "settings.local.json":
            reason = "personal settings (not committed, not the team's): in no arm"
        else:
            reason = NOT_CARRIED.get(
                path.name, "not a part of the configuration the plan knows: in no arm"
            )
        kind = {"commands": "command", "output-styles": "output-style"}.get(path.name, "file")
        if path.is_dir() and not path.is_symlink():
            files = sorted(f for f in path.rglob("*") if f.is_file() or f.is_symlink())
        else:
            files = [path]
        for file in files or [path]:
            name = slug(_rel(path, file).removesuffix(".md") if file != path else path.name)
            yield Component(kind, name, _rel(root, file), _digest_text(file), False, reason)
