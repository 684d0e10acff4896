"""The resource files a tier's subtests name (CLAUDE.md blocks, skills, agents, MCP servers):
reading a Markdown file's front matter, and checking that each file is what its kind needs."""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

import yaml

from pytest_scylla.formats.yamlmarks import Problem, SpecError, check_value, display, read_text

PLAIN = re.compile(r"^([a-zA-Z_-]+):\s+(.+)$")
INDICATOR = re.compile(r"[{}\[\]*&#!|>%@`]|: ")
FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?)\n---[ \t]*(?:\n|\Z)", re.DOTALL)

ResourceKind = Literal["claude_md", "skills", "agents", "mcp_servers"]


def front_matter(path: Path, lenient: bool = True) -> tuple[dict[str, Any] | None, int, str]:
    """(front matter mapping or None, number of lines it spans, body) of a Markdown file;
    front matter that is not YAML read again as Claude Code reads it (`_quoted`), unless not
    `lenient`."""
    text = read_text(path)
    match = FRONT_MATTER.match(text)
    if not match:
        return None, 0, text
    try:
        meta = yaml.safe_load(match.group(1))
    except yaml.YAMLError:
        try:  # as Claude Code does: again with its problem values quoted
            meta = yaml.safe_load(_quoted(match.group(1))) if lenient else "invalid"
        except yaml.YAMLError:
            meta = "invalid"
    span = match.group(0).count("\n")
    return (meta if isinstance(meta, dict) else {"__invalid__": True}), span, text[match.end() :]


def _quoted(text: str) -> str:
    """Front matter that is not YAML, as Claude Code (2.1.197) reads it on its second try: each
    `key: value` line whose value holds a YAML indicator or `: ` (and is not quoted or a list)
    double-quoted, leading tabs as two spaces each. Its own sub-agents (`/agents`) write such
    descriptions: `description: Use it when ... user: 'I've written ...'`."""
    lines = []
    for line in text.split("\n"):
        found = PLAIN.match(line)
        value = found.group(2) if found else ""
        if found and INDICATOR.search(value) and not _quoted_already(value):
            escaped = value.replace("\\", "\\\\").replace('"', '\\"')
            line = f'{found.group(1)}: "{escaped}"'
        lines.append(line)
    return re.sub(r"^\t+", lambda m: "  " * len(m.group(0)), "\n".join(lines), flags=re.M)


def _quoted_already(value: str) -> bool:
    if value[:1] in "\"'" and value[-1:] == value[:1] and len(value) > 1:
        return True
    if value.startswith("[") and value.endswith("]"):
        with contextlib.suppress(yaml.YAMLError):
            return isinstance(yaml.safe_load(value), list)
    return False


def check_resource(kind: ResourceKind, name: str, path: Path) -> list[Problem]:
    """Problems with one resource file; `line=None` problems mean the file is missing."""
    where = display(path)
    if not path.is_file():
        label = {
            "claude_md": "CLAUDE.md block",
            "skills": "skill",
            "agents": "agent",
            "mcp_servers": "MCP server",
        }[kind]
        return [Problem(path, None, f"unknown {label} '{name}': expected the file {where}")]
    try:
        text = read_text(path)  # what it holds is checked once readable as text
    except SpecError as exc:
        return list(exc.problems)
    except OSError as exc:
        return [Problem(path, None, f"cannot read the file: {exc.strerror or exc}")]
    if kind == "mcp_servers":
        return _mcp_server_problems(path, text)
    if kind == "claude_md":
        if not text.strip():
            return [Problem(path, 1, "the block is empty; write its guidance or remove it")]
        return []
    return _front_matter_problems(path, name)


def _mcp_server_problems(path: Path, text: str) -> list[Problem]:
    """An MCP server file: valid JSON of the `mcp` schema, its `files` inside its folder."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return [Problem(path, exc.lineno, f"invalid JSON: {exc.msg}")]
    try:
        check_value(data, "mcp", path)
    except SpecError as exc:
        return [replace(p, line=1) for p in exc.problems]
    problems = []
    for rel in data.get("files", []):
        target = (path.parent / rel).resolve()
        if not target.is_relative_to(path.parent.resolve()) or not target.is_file():
            problems.append(
                Problem(
                    path, 1, f"'files' entry '{rel}' must be a file inside {display(path.parent)}"
                )
            )
    return problems


def _front_matter_problems(path: Path, name: str) -> list[Problem]:
    """A skill or agent file: front matter with its name and description, then instructions."""
    meta, span, body = front_matter(path)
    required = ("name", "description")
    if meta is None or "__invalid__" in meta:
        return [
            Problem(
                path,
                1,
                f"expected YAML front matter between '---' lines with {' and '.join(required)}",
            )
        ]
    problems = [
        Problem(path, 1, f"front matter lacks '{key}'")
        for key in required
        if not isinstance(meta.get(key), str) or not meta[key].strip()
    ]
    if meta.get("name") not in (None, name):
        problems.append(
            Problem(
                path,
                2,
                f"front matter name '{meta['name']}' differs from '{name}'; make them equal",
            )
        )
    if not body.strip():
        problems.append(Problem(path, span + 1, "no instructions after the front matter"))
    return problems
