"""Where report.html keeps its runs' drill-downs. A report of up to a thousand runs or so keeps
them in the page, one `<template id=run-N>` per run: report.html stays one self-contained file.
Past `INLINE_DETAILS` characters a page that size no longer opens comfortably (12,000 runs made
a page of 148 MB), so they all go beside it instead: the folder `report-runs/`, one file per
`CHUNK_RUNS` runs (`runs-0000.js` holds runs 0 to 199), each a single call
`scyllaRuns({"0": "<run 0's HTML as a JSON string>", ...});`. The page loads a file with a
`<script src>` when one of its runs is opened: a script loads from a `file://` page, where
fetch and XHR do not. The strings are `json.dumps(..., ensure_ascii=True)`, so whatever a
transcript holds cannot end the string (nor the call) early; the HTML in them is the same
escaped HTML a template holds, put into the page the same way.

The details are written as they are rendered: at most the budget is held in memory, then a
chunk at a time. An earlier report's folder is removed first, whichever way this one goes."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from html import escape
from itertools import chain, islice
from pathlib import Path

# Characters of run details a page keeps inline (about 1,300 runs of ~12,000 characters), so a
# page stays under ~20 MB: 12,000 runs inline made 148 MB, 16 s to load in headless Chromium
# before a row could be clicked. Past it, every run's details go beside the page.
INLINE_DETAILS = 16_000_000
CHUNK_RUNS = 200  # runs per file beside the page: ~2.4 MB, one quick load per opened run
FOLDER = "report-runs"
PREFIX = "runs-"  # runs-0000.js, runs-0001.js, …
MISSING = (
    f"run details are in {FOLDER}/ beside this file: keep the folder with report.html"
    " (this run's file could not be loaded)"
)


@dataclass
class Placed:
    """Where the details went: `inline` (run N's HTML at index N) or `chunks` files beside
    the page (then `inline` is empty)."""

    inline: list[str] = field(default_factory=list)
    chunks: int = 0
    runs: int = 0


def place(out: Path, details: Iterable[str]) -> Placed:
    """Place the runs' details (the N-th is run N's): inline while their total stays within
    `INLINE_DETAILS`, else every run's into chunk files in `out/report-runs/`."""
    folder = out / FOLDER
    if folder.is_dir():
        shutil.rmtree(folder)  # an earlier report's chunks: never mixed with this one's
    held: list[str] = []
    total = 0
    rest = iter(details)
    for text in rest:
        held.append(text)
        total += len(text)
        if total > INLINE_DETAILS:
            return write_chunks(folder, chain(_drained(held), rest))
    return Placed(inline=held, runs=len(held))


def _drained(held: list[str]) -> Iterator[str]:
    """The held details in order, each let go once given (so they are not all kept while the
    chunks are written)."""
    held.reverse()
    while held:
        yield held.pop()


def write_chunks(folder: Path, details: Iterable[str]) -> Placed:
    """Write the details, `CHUNK_RUNS` runs a file, into `folder`."""
    folder.mkdir(parents=True)
    rest = iter(details)
    chunks = runs = 0
    while batch := list(islice(rest, CHUNK_RUNS)):
        entries = ",\n".join(
            f"{json.dumps(str(runs + i))}: {json.dumps(text, ensure_ascii=True)}"
            for i, text in enumerate(batch)
        )
        (folder / chunk_name(chunks)).write_text(f"scyllaRuns({{\n{entries}\n}});\n", "ascii")
        chunks += 1
        runs += len(batch)
    return Placed(chunks=chunks, runs=runs)


def chunk_name(index: int) -> str:
    """The file of chunk `index` (runs `index * CHUNK_RUNS` onwards); the page's script
    builds the same name."""
    return f"{PREFIX}{index:04d}.js"


def note(placed: Placed) -> str:
    """What a reader of the run table needs to know when the details are beside the page
    ("" when they are in it)."""
    if not placed.chunks:
        return ""
    return (
        f"<p class=banner id=runs-external>The details of these {placed.runs} runs are in the "
        f"folder {FOLDER}/ beside this file ({placed.chunks} files), loaded when a run is "
        f"opened: keep the folder with report.html when moving or sharing it.</p>"
    )


def detail_box(placed: Placed) -> str:
    """The box an opened run is shown in; when the details are beside the page it says where
    (the page's script loads `data-src` + the chunk's number + `.js`)."""
    if not placed.chunks:
        return "<div id=detail hidden></div>"
    return (
        f"<div id=detail hidden data-src={FOLDER}/{PREFIX} data-per={CHUNK_RUNS} "
        f'data-missing="{escape(MISSING)}"></div>'
    )
