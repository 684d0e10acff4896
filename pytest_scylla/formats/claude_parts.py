"""The parts of a Claude Code configuration beside CLAUDE.md, skills, agents and servers that the
CLI also loads (`scylla ablate plan`): the rules of .claude/rules/, the custom commands of
.claude/commands/, the CLAUDE.md files of subfolders, and the `env` keys of settings.json.

What the CLI sends and when, as the real CLI (2.1.197) shows in its requests:
- an unscoped rule (no `paths:` in its front matter) is memory, like CLAUDE.md, in the first
  request, under a header of its own: a component, left in the workspace of the arms that keep
  it (`keep_files`), so the CLI loads it as it loads the team's.
- a rule scoped by `paths:` is loaded once the agent reads a matching file, and a subfolder's
  CLAUDE.md once it reads files there: components, which an arm keeps by naming them in its
  `keep_files` (left in the workspace; `project_config: remove` takes out the others).
- a command is listed to the model beside the skills (`- name: description`), unless its front
  matter says `disable-model-invocation: true`: a component, carried as a skill of its name.
- an `env` key that redirects the CLI (its endpoint, key, model names, cloud provider, proxy)
  is dropped from every arm: the session's gateway decides where the model is."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pytest_scylla.formats.components import Component, inside, rel, slug
from pytest_scylla.formats.resources import front_matter
from pytest_scylla.formats.yamlmarks import SpecError, read_text

SCOPED = "loaded when the agent reads a file its paths name ({paths}): left in the workspace "
SCOPED += "of the arms that keep it (keep_files)"
RULES_LINK = "a linked folder of rules: taken out of every arm (the plan carries rules one file "
RULES_LINK += "at a time; keep them in .claude/rules itself to ablate them)"
UNSCOPED = "memory, sent in the first request under its own header: left in the workspace of "
UNSCOPED += "the arms that keep it (keep_files)"
LINKED = "a link that is not relative or leaves the project: taken out of every arm (a run "
LINKED += "follows no such link); a relative link to a file of the project is kept like the file"
HIDDEN = "disable-model-invocation: true: the model is never told of it, a user types it; in no arm"
NESTED = "read when the agent reads files in {folder}/: left in the workspace of the arms that "
NESTED += "keep it (keep_files)"
MEMORY = ("CLAUDE.md", "CLAUDE.local.md")
REDIRECT = re.compile(
    r"^(ANTHROPIC_\w+|CLAUDE_CODE_USE_\w+|CLAUDE_CODE_SKIP_\w+_AUTH|AWS_\w+|VERTEX_\w+|"
    r"CLOUD_ML_REGION|GOOGLE_\w+|(HTTPS?|ALL|NO)_PROXY|\w+_BASE_URL|\w+_API_KEY|\w+_AUTH_TOKEN)$",
    re.IGNORECASE,
)
DROPPED = "redirects the CLI (its endpoint, key, model or proxy): dropped from every arm; the "
DROPPED += "session's gateway decides where the model is"
KEY_HELPER = "a script that prints the CLI's key: dropped from every arm; the session's gateway "
KEY_HELPER += "holds the key"
MAX_HOPS = 8  # links in a chain a kept link may have
SKIP_DIRS = {".git", "node_modules", "__pycache__", ".venv", "venv"}  # never a team's memory


def on_demand(root: Path) -> list[Path]:
    """The files the CLI finds by itself, as found (no link followed): the memory it loads on
    demand (the CLAUDE.md and CLAUDE.local.md of subfolders), the `.md` files and links of
    .claude/rules/ (a linked rules folder is one link) and the workflows of .claude/workflows/
    (`.js`), and the styles of .claude/output-styles/. The overlay takes out those an arm does
    not keep."""
    found: list[Path] = []
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        at = here.relative_to(root).as_posix()
        in_rules = at == ".claude/rules" or at.startswith(".claude/rules/")
        links = [d for d in dirs if (here / d).is_symlink()]
        if in_rules or here == root / ".claude":
            found += [here / d for d in links if in_rules or d in ("rules", "workflows")]
        for name in sorted(files):
            path = here / name
            if (
                (in_rules and (name.endswith(".md") or path.is_symlink()))
                or (at == ".claude/workflows" and name.endswith(".js"))
                or (at == STYLES and name.endswith(".md"))
                or (name in MEMORY and here not in (root, root / ".claude"))
            ):
                found.append(path)
    return found


WORKFLOW = "a workflow: listed to the model as the skill '{name}'; left in the workspace of the "
WORKFLOW += "arms that keep it (keep_files)"
NOT_FLOW = "not a workflow the CLI loads (a `.js` file directly in the folder): left in the "
NOT_FLOW += "workspace of every arm"
META_NAME = re.compile(r"export\s+const\s+meta\s*=\s*\{.*?\bname\s*:\s*([\"'])([^\"'\n]+)\1", re.S)


def workflow_name(path: Path) -> str:
    """The skill name the CLI lists a workflow of .claude/workflows/ by: its `meta.name`
    (`export const meta = {name: "pr-stamp-sweep", ...}`), else the file's name."""
    found = META_NAME.search(read_text(path))
    return found.group(2).strip() if found else path.stem


def workflows_in(root: Path) -> Iterator[Component]:
    """Each workflow of .claude/workflows/ (Claude Code 2.1.197 lists it beside the skills)."""
    folder = root / ".claude" / "workflows"
    flows = [p for p in on_demand(root) if p.parent == folder]
    for path in flows:
        where = rel(root, path)
        linked_out = path.is_symlink() and not linked_within(root, path)
        if linked_out or not inside(root, path).is_file():
            yield Component("file", slug(where), where, "(link)", False, LINKED)
            continue
        name = workflow_name(path)
        reason, data = WORKFLOW.format(name=name), {"keep": where, "skill": name}
        yield Component("workflow", slug(name), where, read_text(path), reason=reason, data=data)
    for path in sorted(folder.rglob("*")) if inside(root, folder).is_dir() else []:
        if path.is_file() and path not in flows:
            where = rel(root, path)
            yield Component("file", slug(rel(folder.parent, path)), where, "", False, NOT_FLOW)


def linked_within(root: Path, path: Path) -> bool:
    """A link the CLI follows to a file of the project (pydantic-ai's `docs/CLAUDE.md ->
    AGENTS.md`): each hop relative and inside `root`, so a copy of the project (the run's
    workspace) keeps it pointing at the copy's own file. Only link texts are read here."""
    base, here, hops = root.resolve(), path, 0
    while here.is_symlink() and hops < MAX_HOPS:
        text = os.readlink(here)
        if os.path.isabs(text):
            return False
        here, hops = Path(os.path.normpath(here.parent / text)), hops + 1
        if not here.is_relative_to(root) or not here.parent.resolve().is_relative_to(base):
            return False
    return hops > 0 and not here.is_symlink() and here.is_file()


def _meta(path: Path) -> tuple[dict[str, Any], str]:
    """The front matter (empty without one) and the body; broken front matter is a SpecError."""
    meta, _, body = front_matter(path, lenient=False)  # a scope that is not YAML: said
    if meta is not None and "__invalid__" in meta:
        raise SpecError.one(path, 1, "the front matter between '---' lines is not a YAML mapping")
    return meta or {}, body


def rules_in(root: Path) -> Iterator[Component]:
    """Each rule of .claude/rules/ (its subfolders too): an unscoped one is memory, carried as a
    CLAUDE.md block; one scoped by `paths:` stays in the workspace of the arms that keep it."""
    rules = root / ".claude" / "rules"
    for path in (p for p in on_demand(root) if p.is_relative_to(rules)):
        where = rel(root, path)
        name = slug(rel(rules, path) if path != rules else where)  # a linked rules folder
        linked_out = path.is_symlink() and not linked_within(root, path)
        if linked_out or not inside(root, path).is_file():
            why = LINKED if path.is_symlink() and not path.is_dir() else RULES_LINK
            yield Component("file", name, where, "(link)", False, why)
            continue
        meta, body = _meta(path)
        if not body.strip():
            raise SpecError.one(path, 1, "the rule is empty; write it or remove the file")
        paths, keep = meta.get("paths"), {"keep": where}
        if paths:
            shown = ", ".join(map(str, paths)) if isinstance(paths, list) else str(paths)
            reason = SCOPED.format(paths=shown)
            yield Component("rule", name, where, body, reason=reason, data=keep)
        else:
            yield Component("rule", name, where, body.strip() + "\n", reason=UNSCOPED, data=keep)


def commands_in(root: Path) -> Iterator[Component]:
    """Each command of .claude/commands/ (`a/b.md` is the CLI's `a:b`, a skill named `a-b`)."""
    folder = root / ".claude" / "commands"
    found = sorted(folder.rglob("*.md")) if inside(root, folder).is_dir() else []
    for path in (p for p in found if inside(root, p).is_file()):
        meta, body = _meta(path)
        cli_name = path.relative_to(folder).with_suffix("").as_posix()
        name, where = slug(cli_name), rel(root, path)
        if meta.get("disable-model-invocation") is True:
            yield Component("command", name, where, body, False, HIDDEN)
            continue
        if not body.strip():
            raise SpecError.one(path, 1, "the command has no instructions; write them")
        said = meta.get("description")
        first = next((x.strip("# ").strip() for x in body.splitlines() if x.strip()), "")
        description = said.strip() if isinstance(said, str) and said.strip() else first
        reason = f"listed to the model as the skill '{name}'" + (
            f" (the CLI names it '{cli_name.replace('/', ':')}')" if "/" in cli_name else ""
        )
        data = {"description": description, "meta": meta, "body": body}
        yield Component("command", name, where, body, reason=reason, source=path, data=data)


def nested_memory_in(root: Path) -> Iterator[Component]:
    """Each CLAUDE.md of a subfolder, kept in the arms that keep it; CLAUDE.local.md, a user's,
    in no arm."""
    for path in (p for p in on_demand(root) if p.name in MEMORY):
        folder = rel(root, path.parent)
        if path.is_symlink() and not linked_within(root, path):
            inside(root, path)  # a link out of the project is a SpecError
            yield Component("file", slug(rel(root, path)), rel(root, path), "", False, LINKED)
        elif path.name == "CLAUDE.local.md":
            reason = "personal memory (not committed, not the team's): in no arm"
            yield Component("memory", slug(f"{folder}-local"), rel(root, path), "", False, reason)
        else:
            where, reason = rel(root, path), NESTED.format(folder=folder)
            text, data = read_text(path), {"keep": where}
            yield Component("memory", slug(folder), where, text, reason=reason, data=data)


def env_parts(where: str, env: dict[str, Any]) -> tuple[dict[str, Any], list[Component]]:
    """The `env` every arm keeps, and each key that redirects the CLI as a dropped component
    (its value is never copied: it may be a key)."""
    kept = {k: v for k, v in env.items() if not REDIRECT.match(str(k))}
    dropped = [
        Component("setting", slug(f"env-{k}"), where, f"env.{k}", False, f"env.{k} {DROPPED}")
        for k in sorted(env, key=str)
        if k not in kept
    ]
    return kept, dropped


VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}")


def unset_variables(path: Path, servers: dict[str, Any]) -> None:
    """A `${VAR}` in a server's command, args or env (which the CLI expands from its
    environment) that is not set here and has no `${VAR:-default}`: a SpecError naming the
    file and line, since the server could not start with it."""
    lines = read_text(path).split("\n")
    for name, server in sorted(servers.items()):
        if not isinstance(server, dict):
            continue
        given = server.get("env")
        env: dict[str, Any] = given if isinstance(given, dict) else {}
        values = [server.get("command"), *(server.get("args") or []), *env.values()]
        for value in (v for v in values if isinstance(v, str)):
            for match in VARIABLE.finditer(value):
                if match.group(2) is None and match.group(1) not in os.environ:
                    at = next((i for i, x in enumerate(lines, 1) if match.group(0) in x), None)
                    why = f"server '{name}': {match.group(0)} is not set; set it before the plan "
                    why += f"and the runs, or give a default (${{{match.group(1)}:-value}})"
                    raise SpecError.one(path, at, why)


STYLE = "the output style settings.json names (its text replaces part of the system prompt): "
STYLE += "left in the workspace, and named in the settings, of the arms that keep it"
PLUGINS = "plugins come from a marketplace, which a sandbox (no network) cannot reach, and a "
PLUGINS += "tier does not carry them: dropped from every arm (the full arm differs from the "
PLUGINS += "team's run by them)"
STYLES = ".claude/output-styles"


def setting_part(root: Path, where: str, key: str, value: Any) -> Component | None:
    """A settings.json key that is more than a setting every arm keeps: `outputStyle` naming a
    style of .claude/output-styles/ (a component: the file and the key go together), and the
    plugins the project enables (dropped, with the reason); None for any other key."""
    if key in ("enabledPlugins", "extraKnownMarketplaces"):
        return Component("setting", slug(key), where, json.dumps(value), False, PLUGINS)
    if key != "outputStyle" or not isinstance(value, str):
        return None
    style = next((p for p in output_styles(root) if _style_name(p) == value), None)
    if style is None:  # a built-in style (Explanatory, Learning): a setting like the others
        return None
    data = {"keep": rel(root, style), "settings": {key: value}}
    return Component(
        "output-style", slug(value), rel(root, style), read_text(style), True, STYLE, data=data
    )


def output_styles(root: Path) -> list[Path]:
    """The style files of .claude/output-styles/ (not links: a style is the team's file)."""
    folder = root / STYLES
    found = sorted(folder.glob("*.md")) if inside(root, folder).is_dir() else []
    return [p for p in found if p.is_file() and not p.is_symlink()]


def _style_name(path: Path) -> str:
    """The name settings.json picks a style by: its front matter's `name`, else the file's."""
    meta, _ = _meta(path)
    name = meta.get("name")
    return name if isinstance(name, str) and name.strip() else path.stem
