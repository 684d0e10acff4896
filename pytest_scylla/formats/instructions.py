"""An instructions file as a CLI loads it (CLAUDE.md, AGENTS.md, GEMINI.md): its `@path` imports
resolved in place, then split into top-level sections, each with the file and line it starts at.

Imports follow Claude Code's rule: `@path` outside code (fenced blocks and `code spans` are left
alone), relative to the importing file, at most five hops deep. An import loop, a missing file
or one outside the project is an error naming the importing file and line."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from pytest_scylla.formats.yamlmarks import SpecError, read_text

# `@docs/a.md`, `@./a.md`, `@../a.md`, `@~/a.md`, and into a dot-folder: `@.claude/rules.md`
IMPORT = re.compile(r"(?<![\w`@])@((?:\.{1,2}/|~/)?\.?[A-Za-z0-9_][\w./-]*\.[A-Za-z0-9]+)")
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")
MAX_HOPS = 5
MIN_SECTIONS = 3


@dataclass(frozen=True)
class Line:
    """One line of the resolved text, with where it came from."""

    text: str
    path: Path
    number: int


@dataclass(frozen=True)
class Section:
    """A top-level section: its heading (empty for the text before the first one) and lines."""

    heading: str
    lines: tuple[Line, ...]

    @property
    def text(self) -> str:
        return "".join(line.text + "\n" for line in self.lines).strip() + "\n"

    @property
    def where(self) -> str:
        first = self.lines[0]
        return f"{first.path.name}:{first.number}"


def resolve(
    path: Path, root: Path, chain: tuple[Path, ...] = (), as_written: bool = False
) -> list[Line]:
    """The file's lines with each `@path` import replaced by the imported file's lines (with
    `as_written`: the import's line kept as written, the imported lines after it, as Claude Code
    sends the importing file as written and each imported file after it)."""
    chain = (*chain, path.resolve())
    out: list[Line] = []
    fenced = False
    for number, text in enumerate(read_text(path).split("\n"), start=1):
        if FENCE.match(text):
            fenced = not fenced
        found = [] if fenced else _imports(text)
        if not found:
            out.append(Line(text, path, number))
            continue
        rest = IMPORT.sub("", _without_spans(text)).strip()
        if as_written:
            out.append(Line(text, path, number))
        elif rest:
            out.append(Line(IMPORT.sub(lambda m: m.group(1), text), path, number))
        for target in found:
            out += _imported(path, number, target, root, chain, as_written)
    while out and not out[-1].text.strip():
        out.pop()
    return out


COMMENT = re.compile(r"<!--.*?-->", re.S)


def only_imports(path: Path, root: Path) -> Path | None:
    """The one file that `path` imports when that is all it does (its other lines blank or HTML
    comments, which Claude Code hides: `@AGENTS.md`), else None."""
    text = COMMENT.sub("", read_text(path))
    lines = [x for x in text.split("\n") if x.strip()]
    if not lines or any(FENCE.match(x) or IMPORT.sub("", _without_spans(x)).strip() for x in lines):
        return None
    targets = {t for x in lines for t in _imports(x)}
    if len(targets) != 1:
        return None
    target = targets.pop()
    number = next(i for i, x in enumerate(read_text(path).split("\n"), 1) if f"@{target}" in x)
    _imported(path, number, target, root, (path.resolve(),), True)  # missing, outside: said
    file = path.parent / target
    return None if file.is_symlink() else file.resolve()


def plain(path: Path) -> list[Line]:
    """The file's lines as they are (for a CLI that resolves no imports: Codex, opencode)."""
    out = [Line(text, path, n) for n, text in enumerate(read_text(path).split("\n"), start=1)]
    while out and not out[-1].text.strip():
        out.pop()
    return out


def _without_spans(text: str) -> str:
    return re.sub(r"`[^`]*`", "", text)


def imports_in(text: str) -> list[str]:
    """The `@path` imports of a text (outside fenced code and code spans), as written."""
    found, fenced = [], False
    for line in text.split("\n"):
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            found += _imports(line)
    return found


def _imports(text: str) -> list[str]:
    return IMPORT.findall(_without_spans(text))


def _imported(
    path: Path, number: int, target: str, root: Path, chain: tuple[Path, ...], as_written: bool
) -> list[Line]:
    def error(message: str) -> SpecError:
        return SpecError.one(path, number, f"@{target}: {message}")

    if target.startswith("~/"):
        raise error("imports from the home folder are not part of the project; copy it in")
    file = (path.parent / target).resolve()
    if not file.is_relative_to(root.resolve()):
        raise error("points outside the project")
    if file in chain:
        loop = " -> ".join(p.name for p in (*chain[chain.index(file) :], file))
        raise error(f"import loop ({loop}); remove one of the imports")
    if len(chain) > MAX_HOPS:
        raise error(f"imports nest deeper than {MAX_HOPS} files, which the CLI does not follow")
    if not file.is_file():
        raise error("no such file")
    return resolve(file, root, chain, as_written)


def sections(lines: list[Line]) -> list[Section]:
    """The top-level sections: cut at the shallowest heading level that makes at least
    `MIN_SECTIONS` of them (headings of that level or above start one, so a lone `#` title is a
    section with the text under it), else at every heading. Only the file's own headings cut (an
    imported file belongs to the section that imports it), unless it has none."""
    own = _heading_levels([x if x.path == lines[0].path else Line("", x.path, 0) for x in lines])
    levels = own or _heading_levels(lines)  # a file that only imports: the imported headings
    if not levels:
        return [Section("", tuple(lines))] if any(x.text.strip() for x in lines) else []
    cuts: list[int] = []
    for depth in sorted({level for _, level in levels}):
        cuts = [i for i, level in levels if level <= depth]
        if len(cuts) + (cuts[0] > 0) >= MIN_SECTIONS:
            break
    found = []
    for start, end in zip([0, *cuts], [*cuts, len(lines)], strict=True):
        part = lines[start:end]
        if any(x.text.strip() for x in part):
            match = HEADING.match(part[0].text) if start in cuts else None
            found.append(Section(match.group(2) if match else "", tuple(part)))
    return found


def _heading_levels(lines: list[Line]) -> list[tuple[int, int]]:
    """(index, level) of each heading outside fenced code."""
    found, fenced = [], False
    for i, line in enumerate(lines):
        if FENCE.match(line.text):
            fenced = not fenced
        elif not fenced and (match := HEADING.match(line.text)):
            found.append((i, len(match.group(1))))
    return found
