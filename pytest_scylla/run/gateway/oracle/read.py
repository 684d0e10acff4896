"""The oracle's reads of the files it is about to overwrite, in views the CLI shows whole.

Claude Code (2.1.197) writes or edits a file only after a Read of it that it showed whole: a
plain Read of a file over its cap (25,000 tokens, counted by the upstream's `count_tokens`,
which the oracle answers at about four bytes a token) returns a PARTIAL view, and the Write that
follows is refused ("File has not been read yet"). A Read with `offset`/`limit` whose lines fit
the cap counts as a read. So a file too large for one view is read in pages of lines, each well
under the cap, all in one turn; a file with a single line too large for any view cannot be read
at all (the oracle then writes with the shell instead).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

PAGE_BYTES = 60_000  # a page's text as JSON (what count_tokens is sent): ~15,000 tokens
LINE_BYTES = 90_000  # one line alone up to this still fits the 25,000-token cap
PAGE_LINES = 2000  # the CLI's own default view


def _size(line: str) -> int:
    return len(json.dumps(line, ensure_ascii=False).encode()) - 2


def pages(text: str) -> tuple[tuple[int, int], ...] | None:
    """The (offset, limit) views that read `text` whole: () when one plain Read shows it all,
    None when a line is too large for any view."""
    lines = text.splitlines(keepends=True)
    sizes = [_size(line) for line in lines]
    if len(lines) <= PAGE_LINES and sum(sizes) <= PAGE_BYTES:
        return ()
    if any(size > LINE_BYTES for size in sizes):
        return None
    found: list[tuple[int, int]] = []
    start, used = 0, 0
    for i, size in enumerate(sizes):
        if i > start and (used + size > PAGE_BYTES or i - start >= PAGE_LINES):
            found.append((start + 1, i - start))
            start, used = i, 0
        used += size
    found.append((start + 1, len(lines) - start))
    return tuple(found)


def of_files(
    workspace: Path, rels: frozenset[str]
) -> tuple[tuple[str, tuple[tuple[int, int], ...] | None], ...]:
    """The views of each of these files of the workspace that one plain Read cannot show."""
    found = []
    for rel in sorted(rels):
        try:
            text = (workspace / rel).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        views = pages(text)
        if views != ():
            found.append((rel, views))
    return tuple(found)


def read_calls(
    workspace: Path,
    existing: frozenset[str],
    views: tuple[tuple[str, tuple[tuple[int, int], ...] | None], ...],
    rels: list[str],
) -> list[tuple[str, dict[str, Any]]] | None:
    """The Read calls that make the CLI count every existing file among `rels` as read, or
    None when one cannot be read in views."""
    paged = dict(views)
    calls: list[tuple[str, dict[str, Any]]] = []
    for rel in rels:
        if rel not in existing:
            continue
        path = str(workspace / rel)
        if rel not in paged:
            calls.append(("Read", {"file_path": path}))
            continue
        ranges = paged[rel]
        if ranges is None:
            return None
        calls += [("Read", {"file_path": path, "offset": o, "limit": n}) for o, n in ranges]
    return calls
