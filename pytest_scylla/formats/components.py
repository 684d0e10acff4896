"""The component a plan ablates or keeps (`scylla ablate plan`), the configuration they make,
and reading a project's files without following a link out of it."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_scylla.core import links
from pytest_scylla.formats.yamlmarks import SpecError

NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
MAX_SLUG = 36  # an arm is named `NN-no-<kind>-<slug>`, at most 50 characters
READER = "scylla ablate plan reads a configuration"


@dataclass(frozen=True)
class Component:
    """One part of the configuration. `ablated` False: the same in every arm, for `reason`."""

    kind: str  # section | rule | skill | command | agent | mcp | hook | setting | memory | file ...
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


def rel(root: Path, path: Path) -> str:
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
