"""The HTML report as a reader uses it, in headless Chromium: the outcome links, the case × tier
matrix leading to its runs, the run table sorted and filtered by clicks and typing, a run's
drill-down with the transcript's tool calls folded and the sub-agent's conversation nested inside
the call that started it; and the agent's own words shown as text, never run as the page's code.

Here the in-process tests; the sessions are in `tests/e2e/test_html_report.py`."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from html import escape
from pathlib import Path

import pytest

from pytest_scylla.core.record import RunRecord
from pytest_scylla.results import report
from pytest_scylla.results.html import details as html_details
from pytest_scylla.results.html import report as html_report
from pytest_scylla.results.html import transcript as html_transcript
from pytest_scylla.results.html.parts import page
from pytest_scylla.results.report_input import ReportInput
from pytest_scylla.results.tables import Tables

from ...browser import Browser

HOSTILE = "</template></div><script>window.pwned = 1</script><img src=x onerror=window.pwned=2>"


def test_the_agents_words_are_shown_never_run(tmp_path: Path) -> None:
    """A transcript whose messages, tool inputs, results and sub-agent prompt carry markup: the
    drill-down shows it as text and no script of it runs (positive control: the same payload
    put into a page unescaped does run). Ids reused across levels still nest right, and a
    transcript past the limit is cut with a note."""
    lines = [
        {
            "type": "assistant",
            "message": {
                "content": [
                    {"type": "text", "text": f"plan {HOSTILE}"},
                    {
                        "type": "tool_use",
                        "id": "t1",
                        "name": "Agent",
                        "input": {
                            "subagent_type": "writer",
                            "description": HOSTILE,
                            "prompt": "go",
                        },
                    },
                ]
            },
        },
        {"type": "user", "parent_tool_use_id": "t1", "message": {"content": HOSTILE}},
        {
            "type": "assistant",
            "parent_tool_use_id": "t1",
            "message": {
                "content": [
                    {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": HOSTILE}}
                ]
            },
        },
        {
            "type": "user",
            "parent_tool_use_id": "t1",
            "message": {
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "is_error": True,
                        "content": HOSTILE,
                    }
                ]
            },
        },
        {
            "type": "user",
            "message": {
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": [{"type": "text", "text": "sub done"}],
                    }
                ]
            },
        },
        "not json {",
        *(
            {"type": "assistant", "message": {"content": [{"type": "text", "text": f"m{i}"}]}}
            for i in range(html_transcript.ITEM_LIMIT)
        ),
    ]
    path = tmp_path / "transcript.jsonl"
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines))
    body = html_transcript.render(path)
    assert "<script>" not in body
    assert "&lt;script&gt;" in body
    assert "… 4 more messages and tool calls" in body  # 404 items, 400 shown
    shown = tmp_path / "shown.html"
    shown.write_text(
        page("t", [f"<template id=run-0>{body}</template><div id=detail hidden></div>"])
    )
    control = tmp_path / "control.html"
    control.write_text(f"<!doctype html><html><body>{HOSTILE}</body></html>")
    browser = Browser(tmp_path / "profile")
    try:
        browser.open(control.as_uri())
        browser.wait("window.pwned !== undefined")  # the payload runs when not escaped
        browser.open(shown.as_uri() + "#open=0")
        assert browser.js("typeof window.pwned") == "undefined"
        call = "#detail .tx > details.agent"
        assert (
            browser.js(f"document.querySelector('{call} > summary').textContent")
            == f"Agent writer: {HOSTILE}"
        )
        nested = browser.js(
            f"document.querySelector('{call} > .sub > details.call > summary').textContent"
        )
        assert nested.startswith("Bash ")
        assert nested.endswith("error")
        assert HOSTILE in browser.js(f"document.querySelector('{call} > .sub').textContent")
        assert (
            browser.js(f"document.querySelector('{call} > pre:last-child').textContent")
            == "sub done"
        )
        assert browser.js("document.querySelectorAll('img').length") == 0
        assert browser.js("typeof window.pwned") == "undefined"
    finally:
        browser.close()


def test_a_long_transcript_is_cut_to_the_runs_budget(tmp_path: Path) -> None:
    """Past the per-run budget, messages are left out and calls keep their summary line only,
    with a note of what was left out (a 1,000-run report stays small)."""
    lines = [
        {
            "type": "assistant",
            "message": {
                "content": [
                    {"type": "text", "text": f"message {i} " + "x" * 500},
                    {
                        "type": "tool_use",
                        "id": f"t{i}",
                        "name": "Read",
                        "input": {"file_path": f"src/f{i}.py"},
                    },
                ]
            },
        }
        for i in range(40)
    ]
    path = tmp_path / "transcript.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines))
    body = html_transcript.render(path)
    assert len(body) < html_transcript.RUN_TEXT_LIMIT + 40 * 150  # texts + 40 summary lines
    assert body.count("<details class='call'>") == 40  # every call's summary stays
    assert "<code>src/f39.py</code>" in body
    assert "message 39" not in body
    assert "more texts (messages, tool inputs and results): the whole transcript" in body


def test_the_tier_table_reads_without_raw_column_names() -> None:
    """The report's tier table: headers as a reader says them, the pass rate with its interval
    in one cell (the method in the header's tooltip), a tier without counted runs said so."""
    from pytest_scylla.results.html.parts import static_table as _table

    rows = [
        {
            "tier": "T0",
            "n": 6,
            "pass_rate": 1.0,
            "ci_low": 0.54,
            "ci_high": 1.0,
            "ci_method": "clopper-pearson",
            "mean_score": 0.9,
            "cop": 0.12,
        },
        {
            "tier": "T1",
            "n": 0,
            "pass_rate": 0.0,
            "ci_low": 0.0,
            "ci_high": 0.0,
            "ci_method": "clopper-pearson",
            "mean_score": None,
            "cop": float("inf"),
        },
    ]
    html = _table(rows, ["tier", "n", "pass_rate", "mean_score", "cop"], ("tier",))
    for raw in ("ci_low", "ci_high", "ci_method", "mean_score", "pass_rate", ">n<"):
        assert raw not in html.replace("title='interval: clopper-pearson'", "")
    assert "<th title='interval: clopper-pearson'>pass rate [95% CI]" in html
    assert "<td>100% [54%, 100%]" in html
    assert "<td>no counted runs" in html  # never 0% [0%, 0%]
    assert "<th>Cost-of-Pass" in html


# A transcript's text that would end a JS string or script if pasted in raw.
BREAKOUT = "a \" b \u2028 c \\\n</script><script>window.pwned = 1</script> '); alert(1); //"


def _html_only(report: ReportInput) -> None:
    """The html writer without the figures (matplotlib is not the subject here)."""
    html_report.write(
        report.folder,
        report.tables,
        dict(report.summary),
        dict(report.statistics),
        [],
        report.tables.sources,
    )


def _report(tmp_path: Path, runs: int, said: str = "done") -> Path:
    """report.html of `runs` runs, each with a stored transcript of one message, `said`."""
    store = tmp_path / "store"
    records: list[RunRecord] = []
    for i in range(runs):
        key = f"case-T0-01-r{i}"
        records.append(
            {
                "run_key": key,
                "case": "case",
                "tier": "T0",
                "subtest": "T0-01",
                "run": i,
                "outcome": "pass" if i % 2 else "fail",
                "score": i / 10,
                "cost_usd": 0.1 + i / 100,
                "judges": [],
            }
        )
        message = {"type": "assistant", "message": {"content": [{"type": "text", "text": said}]}}
        (store / "runs" / key).mkdir(parents=True, exist_ok=True)
        (store / "runs" / key / "transcript.jsonl").write_text(json.dumps(message))
    tables = Tables()
    tables.add_records(records, "exp", store)
    out = tmp_path / "exp"
    report.write(out, tables, None, formats=("html",), writers={"html": _html_only})
    return out


def _chunk(path: Path) -> dict[str, str]:
    """A chunk file's runs, checking the file is exactly one call of one JSON object."""
    text = path.read_text(encoding="utf-8")
    call = re.fullmatch(r"scyllaRuns\((.*)\);\n", text, re.S)
    assert call is not None, text[:200]
    runs = json.loads(call.group(1))  # one JSON value, nothing after it
    assert isinstance(runs, dict)
    return runs


def test_past_the_budget_the_run_details_go_beside_the_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over the inline budget, every run's details are in report-runs/ (chunks of CHUNK_RUNS,
    keyed by run number, an earlier report's chunk removed), none in the page, and the page
    says where they are; under it, they are templates in the page and the folder is gone."""
    monkeypatch.setattr(html_details, "INLINE_DETAILS", 500)  # ~160 a run
    monkeypatch.setattr(html_details, "CHUNK_RUNS", 2)
    stale = tmp_path / "exp" / "report-runs" / "runs-0009.js"
    stale.parent.mkdir(parents=True)
    stale.write_text("scyllaRuns({});\n")
    out = _report(tmp_path, 5)
    chunks = sorted(p.name for p in (out / "report-runs").iterdir())
    assert chunks == ["runs-0000.js", "runs-0001.js", "runs-0002.js"]
    runs = [_chunk(out / "report-runs" / name) for name in chunks]
    assert [sorted(r) for r in runs] == [["0", "1"], ["2", "3"], ["4"]]
    assert runs[1]["3"].startswith("<h3>case-T0-01-r3</h3>")
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "<template" not in page
    assert "are in the folder report-runs/ beside this file (3 files)" in page
    assert "data-src=report-runs/runs- data-per=2 " in page
    assert re.findall(r"<tr [^>]*data-run=(\d+)>", page) == ["0", "1", "2", "3", "4"]

    monkeypatch.setattr(html_details, "INLINE_DETAILS", 1_000_000)
    assert _report(tmp_path, 5) == out  # the same folder again, now within the budget
    page = (out / "report.html").read_text(encoding="utf-8")
    assert not (out / "report-runs").exists()
    assert [page.count(f"<template id=run-{i}><h3>case-T0-01-r{i}</h3>") for i in range(5)] == [
        1
    ] * 5
    assert "report-runs" not in page


def test_a_transcript_cannot_break_out_of_its_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A transcript holding a quote, U+2028, a backslash, a line break, `</script>` and
    `'); alert(1); //`: its chunk file is still exactly one call of one JSON object, pure
    ASCII, the run's text in it intact (as escaped HTML, the same as the inline template
    holds). Positive controls: inline, the text stays escaped; pasted into a chunk without
    JSON encoding, it fails the same check."""
    said = BREAKOUT * 3
    monkeypatch.setattr(html_details, "INLINE_DETAILS", 1_000_000)
    inline = (_report(tmp_path / "small", 2, said) / "report.html").read_text(encoding="utf-8")
    templates = dict(re.findall(r"<template id=run-(\d+)>(.*?)</template>", inline, re.S))
    assert sorted(templates) == ["0", "1"]
    assert f"<div class='msg agent'>{escape(said)}</div>" in templates["1"]
    assert "</script><script>" not in inline
    monkeypatch.setattr(html_details, "INLINE_DETAILS", 100)
    out = _report(tmp_path / "big", 2, said)
    chunk = out / "report-runs" / "runs-0000.js"
    assert chunk.read_bytes().isascii()
    assert "\u2028" not in chunk.read_text(encoding="ascii")
    assert _chunk(chunk) == templates  # the same HTML, each run's under its number
    naive = tmp_path / "naive.js"
    naive.write_text('scyllaRuns({"0": "' + templates["0"] + '"});\n')
    with pytest.raises(json.JSONDecodeError):
        _chunk(naive)


def test_the_details_are_written_as_they_are_rendered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the budget, a chunk is written as soon as its runs are rendered: when run 7 is
    rendered, the chunks of runs 0 to 5 are on disk (never every run's details at once)."""
    monkeypatch.setattr(html_details, "INLINE_DETAILS", 250)
    monkeypatch.setattr(html_details, "CHUNK_RUNS", 2)
    folder = tmp_path / "report-runs"

    def details() -> Iterator[str]:
        for number in range(9):
            if number == 7:
                assert sorted(p.name for p in folder.iterdir()) == [
                    "runs-0000.js",
                    "runs-0001.js",
                    "runs-0002.js",
                ]
            yield f"<h3>run {number}</h3>" + "x" * 100

    placed = html_details.place(tmp_path, details())
    assert (placed.inline, placed.chunks, placed.runs) == ([], 5, 9)
    assert _chunk(folder / "runs-0004.js") == {"8": "<h3>run 8</h3>" + "x" * 100}
