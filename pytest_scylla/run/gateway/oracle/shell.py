"""The oracle's file writes through the CLI's shell tool (Codex, opencode with `bash`, and any
CLI whose file tools cannot take a file): each file's text passed to a small Python writer as an
argument. One argument may hold at most 128 KiB on Linux (`MAX_ARG_STRLEN`; a larger one fails
with E2BIG, "Argument list too long"), and a CLI may quote the command again before it runs it:
Codex (0.169.0, unified exec) refused commands over about 92 kB as it shows them, and shows a
command with single quotes quoted once more. So a larger file is written in pieces whose
command, quoted twice, stays well under that, one turn each: the first piece creates the file,
the later ones append, in order.
"""

from __future__ import annotations

import functools
import shlex
from pathlib import Path
from typing import Any

from pytest_scylla.run.gateway.oracle import failure as oracle_failure
from pytest_scylla.run.gateway.oracle import tools as oracle_tools

PIECE_BYTES = 50_000  # a piece's bytes quoted twice: half of what Codex was seen to take
WROTE = oracle_failure.WROTE  # what the writer prints once the piece is written
WRITER = (
    "import sys; open(sys.argv[1], sys.argv[2], encoding='utf-8').write(sys.argv[3]); "
    f"print({WROTE!r}, sys.argv[1])"
)


@functools.lru_cache(maxsize=8)  # asked again on every request of the run (the oracle is
def pieces(text: str) -> tuple[str, ...]:  # stateless)
    """`text` cut at line ends into pieces whose quoted form fits one argument (a line longer
    than that is cut inside)."""
    found: list[str] = []
    current: list[str] = []
    used = 0
    for line in text.splitlines(keepends=True) or [""]:
        for part in _cut(line):
            size = len(shlex.quote(shlex.quote(part)).encode())
            if current and used + size > PIECE_BYTES:
                found.append("".join(current))
                current, used = [], 0
            current.append(part)
            used += size
    found.append("".join(current))
    return tuple(found)


def _cut(line: str) -> list[str]:
    """A line in parts each small enough alone (quoted twice, a character can take 17 bytes
    and 4 in UTF-8)."""
    step = PIECE_BYTES // 100
    return [line[i : i + step] for i in range(0, len(line), step)] if len(line) > step else [line]


def command(path: str, piece: str, first: bool) -> str:
    make = f"mkdir -p {shlex.quote(str(Path(path).parent))} && " if first else ""
    mode = "w" if first else "a"
    return f"{make}python3 -c {shlex.quote(WRITER)} {shlex.quote(path)} {mode} {shlex.quote(piece)}"


def write_turns(
    tools: set[str], paths: list[tuple[str, str]]
) -> list[list[tuple[str, dict[str, Any]]]] | None:
    """The turns writing each (path, text) with the offered shell tool: turn k writes every
    file's k-th piece; None without a shell tool."""
    cut = [(path, pieces(text)) for path, text in paths]
    turns: list[list[tuple[str, dict[str, Any]]]] = []
    for k in range(max((len(p) for _, p in cut), default=0)):
        turn = []
        for path, parts in cut:
            if k < len(parts):
                call = oracle_tools.shell_call(
                    tools, command(path, parts[k], k == 0), "Write a file"
                )
                if call is None:
                    return None
                turn.append(call)
        turns.append(turn)
    return turns
