"""A fixed oracle session's exports are the same, file for file, as the reference kept in
`tests/reference/oracle-session/` (written by the code before the restructuring of issue 31):
a refactoring that changes any number, row, column order or report line fails here. Only what
differs between two runs of the same session is masked: timings, dates, temporary paths, the
session's id and the CLI's own event ids.

To write a new reference after an intended change: `SCYLLA_WRITE_REFERENCE=1 pytest -m slow
tests/e2e/test_reference_exports.py`, then review the diff like code."""

from __future__ import annotations

import csv
import io
import json
import os
import re
from pathlib import Path

import pytest

from ..conftest import TIMINGS, workers

REFERENCE = Path(__file__).parents[1] / "reference" / "oracle-session"
EXPORTS = (
    "runs.csv",
    "judges.csv",
    "criteria.csv",
    "subtests.csv",
    "summary.json",
    "statistical_results.json",
    "report.md",
    "tables.md",
)
# what two runs of the same session may not share, masked in every export
VOLATILE = [
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?"), "<time>"),
    (re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d(?::\d\d)?(?: UTC)?"), "<time>"),
    (re.compile(r"/tmp/\S+?(?=[\s\"',)|]|$)"), "<tmp>"),
    (re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|s|m\d\ds|h\d\dm)\b"), "<duration>"),
]


def _masked(name: str, text: str) -> str:
    if name.endswith(".json"):
        text = json.dumps(_without(json.loads(text)), indent=1, sort_keys=True)
    elif name.endswith(".csv"):
        rows = list(csv.reader(io.StringIO(text)))
        keep = [i for i, column in enumerate(rows[0] if rows else []) if column not in TIMINGS]
        text = "\n".join(repr([row[i] for i in keep]) for row in rows)
    elif name.endswith(".md"):
        text = _without_latency(text)
    for pattern, mask in VOLATILE:
        text = pattern.sub(mask, text)
    return text


def _without_latency(markdown: str) -> str:
    """A markdown report with the numbers of its latency tables masked (seconds per run)."""
    lines, timed = [], False
    for line in markdown.splitlines():
        if line.startswith("#"):
            timed = "latency" in line.lower()
        elif timed and line.startswith("|"):
            line = re.sub(r"\b\d+\.\d+\b", "<seconds>", line)
        lines.append(line)
    return "\n".join(lines)


def _without(value: object) -> object:
    if isinstance(value, dict):
        return {
            k: _without(v)
            for k, v in value.items()
            if k not in TIMINGS and k not in ("session", "written_at", "experiment_dir")
        }
    if isinstance(value, list):
        return [_without(v) for v in value]
    return value


@pytest.mark.slow
def test_the_oracle_sessions_exports_match_the_reference(
    mini: Path, pytester: pytest.Pytester, oracle: list[str]
) -> None:
    out = mini / "out" / "reference"
    done = pytester.runpytest(
        "cases",
        "-k",
        "T0 or T1-01",
        *workers(0),
        "--scylla-oracle=mixed",
        *oracle[1:],
        "--scylla-runs=2",
        f"--scylla-out={out}",
        "--scylla-report=md,json,csv",
    )
    assert done.ret in (0, 1), done.stdout.str()[-2000:]
    exports = {
        name: _masked(name, (out / name).read_text(encoding="utf-8"))
        for name in EXPORTS
        if (out / name).exists()
    }
    assert {"runs.csv", "summary.json", "statistical_results.json"} <= set(exports)
    if os.environ.get("SCYLLA_WRITE_REFERENCE") == "1":
        REFERENCE.mkdir(parents=True, exist_ok=True)
        for name, text in exports.items():
            (REFERENCE / name).write_text(text, encoding="utf-8")
    kept = sorted(p.name for p in REFERENCE.iterdir())
    assert sorted(exports) == kept
    for name in kept:
        assert exports[name] == (REFERENCE / name).read_text(encoding="utf-8"), name


def test_the_masks_keep_what_a_refactoring_could_change() -> None:
    """Positive control of the comparison: a changed score or column survives the masks; a
    timing, a date and a temporary path do not."""
    csv_text = "tier,score,duration_seconds\nT0,0.75,12.3\n"
    assert _masked("runs.csv", csv_text) == _masked("runs.csv", csv_text.replace("12.3", "9"))
    assert _masked("runs.csv", csv_text) != _masked("runs.csv", csv_text.replace("0.75", "0.7"))
    md = "written 2026-11-27 06:40 UTC from /tmp/pytest-1/x, agent 12.5 s; pass rate 50%"
    assert _masked("report.md", md) == _masked(
        "report.md",
        md.replace("06:40", "07:01").replace("pytest-1", "pytest-9").replace("12.5 s", "3 s"),
    )
    assert _masked("report.md", md) != _masked("report.md", md.replace("50%", "51%"))
    latency = "## Latency breakdown\n| T0 | 12 | 0.982 |\n## Tiers\n| T0 | 12 | 0.417 |"
    assert _masked("tables.md", latency) == _masked("tables.md", latency.replace("0.982", "1.6"))
    assert _masked("tables.md", latency) != _masked("tables.md", latency.replace("0.417", "0.4"))
    doc = {"score": 0.5, "mean_duration": 3.0, "written_at": "x"}
    assert _masked("summary.json", json.dumps(doc)) != _masked(
        "summary.json", json.dumps({**doc, "score": 0.6})
    )
