"""The oracle's edits of a file too large to read whole: Edit calls built from the diff between
the file and the reference solution's version, as a model with a large file at hand works.

Reading such a file whole in pages and writing it back puts it in the conversation twice: a
516 kB file ended the run with "Prompt is too long". Claude Code (2.1.197) takes an Edit once
any view of the file was read whole (a Read with `offset`/`limit` under its cap), so the oracle
reads the lines around each change and replaces them, each `old_string` found exactly once in
the file as it stands when its Edit runs (the edits run in order, the lowest first, so the lines
above stay where the reads saw them).
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_scylla.run.gateway.oracle import read as oracle_read

CONTEXT = 3  # unchanged lines around a change, as a unified diff shows them
MAX_DIFF_LINES = 50_000  # lines that differ, on the shorter side, beyond which no edits are made


@dataclass(frozen=True)
class Edits:
    """What the oracle reads of a file, and the edits that turn it into the solution's."""

    views: tuple[tuple[int, int], ...]  # (offset, limit) Reads, 1-based, of the original
    edits: tuple[tuple[str, str], ...]  # (old_string, new_string), to apply in this order


def _view(lines: list[str], start: int) -> tuple[int, int] | None:
    """A Read from line `start` (0-based) that the CLI shows whole, or None."""
    used, end = 0, start
    while end < len(lines) and end - start < oracle_read.PAGE_LINES:
        size = len(json.dumps(lines[end], ensure_ascii=False).encode())
        if end > start and used + size > oracle_read.PAGE_BYTES:
            break
        used, end = used + size, end + 1
    if used > oracle_read.LINE_BYTES:
        return None
    return start + 1, max(1, end - start)


def _unique(lines: list[str], i1: int, i2: int) -> tuple[int, int] | None:
    """[i1, i2) widened by unchanged lines (1, 2, 4, ... more each side) until its text occurs
    once in `lines`; None when that takes more than a view's worth of text (a change in one of
    many identical blocks)."""
    text, step = "".join(lines), 1
    while True:
        chunk = "".join(lines[i1:i2])
        if len(chunk.encode()) > oracle_read.PAGE_BYTES:
            return None
        if chunk and text.count(chunk) == 1:
            return i1, i2
        if i1 == 0 and i2 == len(lines):
            return None
        i1, i2, step = max(0, i1 - step), min(len(lines), i2 + step), step * 2


def _groups(a: list[str], b: list[str]) -> list[list[tuple[str, int, int, int, int]]] | None:
    """The diff's hunks with their context (as `get_grouped_opcodes`), the common head and tail
    set aside first (difflib is quadratic on repeated lines); None when what differs is too
    long to diff quickly."""
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    middle_a, middle_b = a[head : len(a) - tail], b[head : len(b) - tail]
    if min(len(middle_a), len(middle_b)) > MAX_DIFF_LINES:
        return None
    start, end = max(0, head - CONTEXT), min(tail, CONTEXT)
    matcher = difflib.SequenceMatcher(
        None, a[start : len(a) - tail + end], b[start : len(b) - tail + end], autojunk=True
    )
    return [
        [(tag, i1 + start, i2 + start, j1 + start, j2 + start) for tag, i1, i2, j1, j2 in group]
        for group in matcher.get_grouped_opcodes(CONTEXT)
    ]


def plan(old: str, new: str) -> Edits | None:
    """The reads and edits turning `old` into `new`, or None where edits cannot do it (a file
    with carriage returns, an empty side, a line no view can show, a change no view's worth of
    text around it tells apart); the oracle then reads the file in pages and writes it whole."""
    if not old.strip() or not new.strip() or "\r" in old + new:
        return None
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    groups = _groups(a, b)
    if groups is None:
        return None
    lines, views, edits = list(a), [], []
    for group in reversed(groups):  # the lowest first: the lines above keep their numbers
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        wide = _unique(lines, i1, i2)
        if wide is None:
            return None
        w1, w2 = wide
        view = _view(lines, w1)
        if view is None:
            return None
        replacement = lines[w1:i1] + b[j1:j2] + lines[i2:w2]
        edits.append(("".join(lines[w1:w2]), "".join(replacement)))
        views.append(view)
        lines[w1:w2] = replacement
    if "".join(lines) != new:
        return None
    return Edits(tuple(sorted(views)), tuple(edits))


def of_files(
    workspace: Path,
    files: tuple[tuple[str, str], ...],
    views: tuple[tuple[str, tuple[tuple[int, int], ...] | None], ...],
) -> tuple[tuple[str, Edits], ...]:
    """The edits for each file too large for one view (`views`) where edits can make it."""
    large = {rel for rel, _ in views}
    found = []
    for rel, text in files:
        if rel not in large:
            continue
        try:
            old = (workspace / rel).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        edits = plan(old, text)
        if edits is not None:
            found.append((rel, edits))
    return tuple(found)


Call = tuple[str, dict[str, Any]]


def turns(
    workspace: Path,
    files: tuple[tuple[str, str], ...],
    existing: frozenset[str],
    views: tuple[tuple[str, tuple[tuple[int, int], ...] | None], ...],
    edited: dict[str, Edits],
) -> list[list[Call]] | None:
    """Claude Code's turns: every file it replaces read (a large one around its changes, or in
    pages), then each written, or edited where `edited` has its edits; None when a file can
    be neither read nor edited."""
    plain = [rel for rel, _ in files if rel not in edited]
    reads = oracle_read.read_calls(workspace, existing, views, plain)
    if reads is None:
        return None
    writes: list[Call] = []
    for rel, text in files:
        path = str(workspace / rel)
        if rel not in edited:
            writes.append(("Write", {"file_path": path, "content": text}))
            continue
        reads += [
            ("Read", {"file_path": path, "offset": o, "limit": n}) for o, n in edited[rel].views
        ]
        writes += [
            ("Edit", {"file_path": path, "old_string": old, "new_string": new})
            for old, new in edited[rel].edits
        ]
    return [reads, writes] if reads else [writes]


CONTEXT_BYTES = 400_000  # a file read whole and written back: ~100,000 tokens of conversation


def too_large(
    workspace: Path,
    files: tuple[tuple[str, str], ...],
    views: tuple[tuple[str, tuple[tuple[int, int], ...] | None], ...],
    edited: tuple[tuple[str, Edits], ...],
) -> str:
    """Why the oracle cannot apply these files through Claude Code's Read and Write ('' when it
    can): a file that edits cannot change and that, read in pages and written whole, would
    fill the model's context (a 516 kB file ended its run with "Prompt is too long")."""
    large, done = {rel for rel, _ in views}, {rel for rel, _ in edited}
    for rel, text in files:
        if rel in large and rel not in done:
            size = (workspace / rel).stat().st_size + len(text.encode())
            if size > CONTEXT_BYTES:
                return (
                    f"{rel} would take {size // 1000} kB of the conversation read in pages and "
                    "written whole (no small edits make the change), more than fits the model's "
                    "context"
                )
    return ""
