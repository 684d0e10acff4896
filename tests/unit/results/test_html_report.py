"""The HTML report as a reader uses it, in headless Chromium: the outcome links, the case × tier
matrix leading to its runs, the run table sorted and filtered by clicks and typing, a run's
drill-down with the transcript's tool calls folded and the sub-agent's conversation nested inside
the call that started it; and the agent's own words shown as text, never run as the page's code.

Here the in-process tests; the sessions are in `tests/e2e/test_html_report.py`."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_scylla.results import html_transcript
from pytest_scylla.results.html_parts import page

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
    from pytest_scylla.results.html_parts import static_table as _table

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
