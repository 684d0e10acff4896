"""A team's own agent configuration, read as the CLI would load it and cut into components that
can be ablated one by one (`scylla ablate plan`).

For Claude Code: CLAUDE.md and .claude/CLAUDE.md (imports resolved, into dot-folders too) by
top-level section, each rule of .claude/rules/, each subfolder's CLAUDE.md, each skill of
.claude/skills/, each command of .claude/commands/ the model is told of, each sub-agent of
.claude/agents/, each MCP server of .mcp.json, each hook event of .claude/settings.json
(claude_parts: rules, nested CLAUDE.md, commands, env). What the tier format cannot carry or
must keep is still listed, with the reason, so nothing is dropped silently: the other keys of
settings.json and the other files of .claude/ (a hook's script) are kept in every arm; the
`env` keys that redirect the CLI, output styles, settings.local.json and the commands only a
user can type are in no arm.

Everything read is read from inside the project: a link that leads out of it (a linked CLAUDE.md,
skill folder or agent, a link among a skill's files, which its copy would follow) is a SpecError
naming the link, so no host file is carried into the tiers folder and from there into every arm's
requests. Links that stay inside the project are followed, as the CLI follows them."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_scylla.formats import claude_parts, instructions, npx, pypi
from pytest_scylla.formats.components import (
    MAX_SLUG,
    NAME,
    Component,
    Configuration,
    inside,
    rel,
    slug,
)
from pytest_scylla.formats.resources import front_matter
from pytest_scylla.formats.yamlmarks import SpecError, read_text

__all__ = ["Component", "Configuration", "inside", "slug"]  # read from here by other readers

KNOWN = {"CLAUDE.md", "settings.json", "settings.local.json", "skills", "agents"}
KNOWN |= {"rules", "commands", "workflows"}  # claude_parts reads them
MCP_CARRIED = {"command", "args", "env", "type", "enabled", "description", "trust", "timeout"}
MCP_CARRIED |= {"startup_timeout_sec", "tool_timeout_sec"}  # how long the CLI waits, not what
KINDS = {"commands": "command", "command": "command", "prompts": "command"}
KINDS |= {"output-styles": "output-style"}
NOT_CARRIED = {"output-styles": "a style settings.json does not name (a user picks it): in no arm"}
STAYS = "not a file the CLI loads by itself: left in the workspace of every arm"
COMMENT = re.compile(r"<!--.*?-->", re.S)
HIDDEN = "only an HTML comment, which Claude Code hides from the model: in no arm"
RUN_BY_HOOK = "a script the {event} hook runs: left in the workspace of every arm, with the hook"


def read_claude_code(root: Path) -> Configuration:
    """The Claude Code configuration of the project at `root`; a SpecError names the file and
    line of anything that cannot be read."""
    claude = root / ".claude"
    found = [_seen(c) for c in _claude_md(root)]
    found += claude_parts.rules_in(root)
    found += [*skills_in(root, claude / "skills"), *claude_parts.commands_in(root)]
    found += claude_parts.workflows_in(root)
    found += agents_in(root, claude / "agents")
    if (root / ".mcp.json").is_file():
        mcp = inside(root, root / ".mcp.json")
        servers = _mcp_json(mcp)
        claude_parts.unset_variables(mcp, servers)
        found += mcp_in(root, mcp, servers)
    settings = [*_settings(root)]
    imported = {f for c in found if c.kind == "section" for f in c.data.get("files", ())}
    imported |= {c.where for c in settings if c.kind == "output-style"}  # listed with its key
    others = unused_in(root, claude, KNOWN, NOT_CARRIED, STAYS)
    found += [*settings, *_explained(others, imported, settings)]
    found += _hook_scripts(root, settings)
    found += claude_parts.nested_memory_in(root)
    _one_skill_per_name(root, found)
    return Configuration("claude-code", root, tuple(found))


def _seen(section: Component) -> Component:
    """A section that is only HTML comments (`<!-- markdownlint-disable -->` before the first
    heading) is kept out: Claude Code hides such comments from the model (2.1.197 sent none)."""
    if COMMENT.sub("", section.text).strip():
        return section
    return replace(section, ablated=False, reason=HIDDEN)


def _one_skill_per_name(root: Path, found: list[Component]) -> None:
    """A command is carried as the skill of its name: one that a skill has too is a SpecError."""
    skills = {c.name: c for c in found if c.kind == "skill"}
    for comp in found:
        if comp.kind == "command" and comp.ablated and comp.name in skills:
            other = skills[comp.name].where
            why = f"the command '{comp.name}' has the name of the skill {other}; rename one"
            raise SpecError.one(root / comp.where, 1, why)


def _explained(
    others: Iterator[Component], imported: set[str], settings: list[Component]
) -> Iterator[Component]:
    """The other files of .claude/: those an import names are part of its section (not listed
    again); those a hook's command names say so."""
    hooks = [c for c in settings if c.kind == "hook"]
    for comp in others:
        if comp.where in imported:
            continue
        event = next((h.name for h in hooks if comp.where in h.text), None)
        yield replace(comp, reason=RUN_BY_HOOK.format(event=event)) if event else comp


WORD = re.compile(r"[A-Za-z0-9_.${}/-]+")


def _hook_scripts(root: Path, settings: list[Component]) -> Iterator[Component]:
    """The project's files outside .claude/ that a hook's command names (`bash agents/x.sh`,
    `.ci/lint.sh`): listed as run by the hook (they stay in the workspace of every arm)."""
    seen: set[str] = set()
    for hook in (c for c in settings if c.kind == "hook"):
        for word in WORD.findall(json.dumps(hook.data)):
            word = word.removeprefix("$CLAUDE_PROJECT_DIR/").removeprefix("${CLAUDE_PROJECT_DIR}/")
            path = root / word
            if word in seen or word.startswith((".claude/", "/")) or ".." in word.split("/"):
                continue
            if word and path.is_file() and not path.is_symlink():
                seen.add(word)
                reason = RUN_BY_HOOK.format(event=hook.name)
                yield Component("file", slug(word), word, _digest_text(path), False, reason)


ONLY_IMPORTS = "only imports {target}, whose sections are the components: kept in every arm "
ONLY_IMPORTS += "(the CLI loads the file through it, as the team's does)"


def _claude_md(root: Path) -> Iterator[Component]:
    """The sections of CLAUDE.md as written (each import's line kept, the imported file left in
    place for the arms that keep the section: the CLI sends each file under its own header),
    then those of .claude/CLAUDE.md (imports resolved in place: its blocks go to CLAUDE.md).
    A CLAUDE.md that only imports one file (`@AGENTS.md`) is kept in every arm and that file's
    sections are the components, written back to it."""
    home = root / "CLAUDE.md"
    target = instructions.only_imports(home, root) if inside(root, home).is_file() else None
    if target is not None:
        where = rel(root, target)
        reason = ONLY_IMPORTS.format(target=where)
        data = {"keep": "CLAUDE.md", "home": where}
        yield Component("file", "claude-md", "CLAUDE.md", read_text(home), False, reason, data=data)
        home = target
    yield from sections_in(root, [home, root / ".claude" / "CLAUDE.md"], written=home)


def sections_in(
    root: Path, paths: list[Path], imports: bool = True, written: Path | None = None
) -> Iterator[Component]:
    """The top-level sections of the instruction files that exist among `paths` (their `@path`
    imports resolved in place when the CLI resolves them; those of `written` kept as written,
    each section's text its own file's lines, the files it imports named in its data)."""
    taken: set[str] = set()
    for path in paths:
        if not inside(root, path).is_file():
            continue
        lines = instructions.resolve(path, root) if imports else instructions.plain(path)
        parts = instructions.sections(lines) if lines else []
        if imports and path == written:
            kept = instructions.sections(instructions.resolve(path, root, as_written=True))
            if all(_own(x, path).strip() for x in kept):  # else imported headings cut it:
                parts = kept  # written with its imports resolved in place
            else:
                written = None
        for part in parts:
            name = base = slug(part.heading or "preamble")
            count = 2
            while name in taken:
                name, count = f"{base[: MAX_SLUG - 3]}-{count}", count + 1
            taken.add(name)
            first = part.lines[0]
            where = f"{rel(root, first.path)}:{first.number}"
            files = tuple(dict.fromkeys(rel(root, x.path) for x in part.lines))
            if path != written:
                yield Component("section", name, where, part.text, data={"files": files})
                continue
            own = _own(part, path).strip() + "\n"
            home = rel(root, path)
            data = {"files": files, "imports": tuple(f for f in files if f != home), "home": home}
            yield Component("section", name, where, own, data=data)


def _own(part: instructions.Section, path: Path) -> str:
    """The lines of a section that are `path`'s own (not those of the files it imports)."""
    return "".join(x.text + "\n" for x in part.lines if x.path == path)


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
            yield Component(kind, name, rel(root, path), text, False, reason + ": in no arm")
        else:
            yield Component(kind, name, rel(root, path), text, source=folder)


def skills_in(root: Path, folder: Path) -> Iterator[Component]:
    """Each skill of `folder` (`<name>/SKILL.md`); other entries listed as in no arm."""
    found = sorted(folder.glob("*/SKILL.md")) if inside(root, folder).is_dir() else []
    yield from _named_files(root, "skill", found, "")
    for other in sorted(folder.iterdir()) if folder.is_dir() else []:
        if not (other / "SKILL.md").is_file():  # nested deeper, or no skill at all
            reason = "no SKILL.md directly in this folder: the CLI loads no skill from it"
            yield Component(
                "file", slug(other.name), rel(root, other), _digest_text(other), False, reason
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
        files = [(rel(path, f), f) for f in sorted(path.rglob("*"))]
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
    where = rel(root, path)
    for name, server in sorted(servers.items()):
        text = json.dumps(server, sort_keys=True, indent=1)
        if not isinstance(server, dict) or not NAME.match(name):
            raise SpecError.one(path, None, f"server '{name}': expected a lower-case name and {{}}")
        if server.get("enabled", True) is False:
            reason = "switched off in the configuration (enabled: false): in no arm"
            yield Component("mcp", name, where, text, False, reason, data=server)
        elif not isinstance(server.get("command"), str):
            yield Component("mcp", name, where, text, False, REMOTE, data=server)
        elif Path(server["command"]).name in ("docker", "podman"):
            yield Component("mcp", name, where, text, False, CONTAINED, data=server)
        elif extra := sorted(set(server) - MCP_CARRIED):
            reason = f"its {', '.join(extra)} cannot be carried by a tier's server: in no arm"
            yield Component("mcp", name, where, text, False, reason, data=server)
        else:
            server, note = npx.pinned(path, name, server)  # its `npm` key: installed on the host
            server, note = (server, note) if note else pypi.pinned(path, name, server)  # uvx
            text = json.dumps(server, sort_keys=True, indent=1)
            yield Component("mcp", name, where, text, reason=note, data=server)


REMOTE = "a remote server (url): a sandbox has no network and the gateway relays no MCP "
REMOTE += "traffic: in no arm (the full arm differs from the team's run by it)"
CONTAINED = "a server run in a container (docker run): a sandbox has no container engine to "
CONTAINED += "start it: in no arm (the full arm differs from the team's run by it)"
KEPT = "a setting, kept in every arm so that the arms differ only by what is ablated"


def _settings(root: Path) -> Iterator[Component]:
    path = root / ".claude" / "settings.json"
    if not inside(root, path).is_file():
        return
    settings = load_json(path)
    if not isinstance(settings, dict):
        raise SpecError.one(path, 1, "expected a JSON object of settings")
    hooks = settings.get("hooks") or {}
    where = ".claude/settings.json"
    for event, config in sorted(hooks.items() if isinstance(hooks, dict) else []):
        text = json.dumps(config, sort_keys=True, indent=1)
        yield Component("hook", slug(event), where, text, data={event: config})
    for key, value in sorted(settings.items()):
        if key == "env" and isinstance(value, dict):
            value, dropped = claude_parts.env_parts(where, value)
            yield from dropped
        special = claude_parts.setting_part(root, where, key, value)
        if special is not None:
            yield special
        elif key == "apiKeyHelper":
            yield Component("setting", slug(key), where, key, False, claude_parts.KEY_HELPER)
        elif key != "hooks" and (value or key != "env"):
            text = json.dumps(value, sort_keys=True)
            yield Component("setting", slug(key), where, text, False, KEPT, data={key: value})


def unused_in(
    root: Path,
    folder: Path,
    known: set[str],
    not_carried: Mapping[str, str],
    unknown: str = "not a part of the configuration the plan knows: in no arm",
) -> Iterator[Component]:
    """What the CLI's folder holds that no arm carries (its entries not in `known`): listed with
    the reason (`not_carried`'s, by name), never dropped silently."""
    for path in sorted(folder.iterdir()) if inside(root, folder).is_dir() else []:
        if path.name in known - {"settings.local.json"}:
            continue
        if path.name == "settings.local.json":
            reason = "personal settings (not committed, not the team's): in no arm"
        else:
            reason = not_carried.get(path.name, unknown)
        kind = KINDS.get(path.name, "file")
        if path.is_dir() and not path.is_symlink():
            files = sorted(f for f in path.rglob("*") if f.is_file() or f.is_symlink())
        else:
            files = [path]
        for file in files or [path]:
            name = slug(rel(path, file).removesuffix(".md") if file != path else path.name)
            yield Component(kind, name, rel(root, file), _digest_text(file), False, reason)
