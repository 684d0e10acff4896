"""The HTML report as a reader uses it, in headless Chromium: the outcome links, the case × tier
matrix leading to its runs, the run table sorted and filtered by clicks and typing, a run's
drill-down with the transcript's tool calls folded and the sub-agent's conversation nested inside
the call that started it; and the agent's own words shown as text, never run as the page's code.

Here the sessions; the in-process tests are in `tests/unit/results/test_html_report.py`."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import pytest

from pytest_scylla.core.record import RunRecord
from pytest_scylla.results import report
from pytest_scylla.results.html import details as html_details
from pytest_scylla.results.html import report as html_report
from pytest_scylla.results.report_input import ReportInput
from pytest_scylla.results.tables import Tables

from ..browser import Browser
from ..conftest import workers


def _shown(browser: Browser, attribute: str) -> list[str]:
    """The values of a data attribute over the run table's visible rows, in their order."""
    return list(
        browser.js(
            f"Array.from(document.querySelectorAll('#runs tbody tr:not([hidden])'))"
            f".map(function (r) {{ return r.getAttribute('{attribute}'); }})"
        )
    )


def _costs(browser: Browser, column: int = 8) -> list[float]:
    """The visible rows' costs as the page sorts them (the sort value, else the text)."""
    return [
        float(v)
        for v in browser.js(
            f"Array.from(document.querySelectorAll("
            f"'#runs tbody tr:not([hidden]) td:nth-child({column})'))"
            ".map(function (c) { return c.getAttribute('data-v') || c.textContent; })"
        )
    ]


@pytest.mark.slow  # the report loads in chromium without errors in the default suite
def test_a_readers_path_through_the_report(
    mini: Path, pytester: pytest.Pytester, oracle: list[str], edit: object, tmp_path: Path
) -> None:
    """A real oracle session (mixed outcomes; T1-02's agent `helper` made able to write, so the
    oracle hands the work to it through the CLI's Agent tool), then its report, clicked."""
    assert callable(edit)
    edit("tiers/agents/helper.md", "tools: Read, Grep", "tools: Read, Grep, Write, Edit")
    out = mini / "out"
    done = pytester.runpytest(
        "cases",
        "-k",
        "T0-01 or T1-02",
        *workers(2),
        "--scylla-oracle=mixed",
        *oracle[1:],
        "--scylla-runs=2",
        f"--scylla-out={out}",
        "--scylla-report=html",
    )
    assert done.ret in (0, 1)
    with (out / "runs.csv").open(encoding="utf-8") as handle:
        runs = list(csv.DictReader(handle))
    outcomes = Counter(r["outcome"] for r in runs)
    assert len(runs) == 8
    assert min(outcomes["pass"], outcomes["fail"]) > 0, outcomes  # both kinds

    browser = Browser(tmp_path / "profile")
    try:
        browser.open((out / "report.html").as_uri())
        assert browser.js("document.getElementById('runs-count').textContent") == "8 of 8 shown"
        text = browser.js("document.body.innerText")
        assert "{'pass'" not in text
        assert '{"pass"' not in text
        # an outcome link in the header: only those runs
        browser.click("a[href='#outcome=fail']")
        assert _shown(browser, "data-outcome") == ["fail"] * outcomes["fail"]
        # the matrix: alpha × T1 leads to alpha's two T1 runs
        browser.click("#matrix a[href='#case=alpha&tier=T1']")
        assert browser.js("location.hash") == "#case=alpha&tier=T1"
        assert _shown(browser, "data-case") == ["alpha", "alpha"]
        assert _shown(browser, "data-tier") == ["T1", "T1"]
        assert browser.js("document.querySelector('select[data-f=tier]').value") == "T1"
        # the selects: every tier again, only beta
        browser.choose("select[data-f=tier]", "")
        browser.choose("select[data-f=case]", "beta")
        assert _shown(browser, "data-case") == ["beta"] * 4
        # sorting: a click on the cost header sorts up, a second one down
        browser.click("th[data-k=cost]")
        assert (
            browser.js("document.querySelector('th[data-k=cost]').getAttribute('aria-sort')")
            == "ascending"
        )
        assert _costs(browser) == sorted(_costs(browser))
        browser.click("th[data-k=cost]")
        costs = _costs(browser)
        assert costs == sorted(costs, reverse=True)
        assert len(set(costs)) > 1
        # typing in the search box: one run by its key
        browser.type("input[data-f=q]", "beta-T1-02-r2")
        assert browser.js("document.getElementById('runs-count').textContent") == "1 of 8 shown"
        # a click on the run's link opens its drill-down, keeping the view
        browser.click("#runs tbody tr:not([hidden]) a")
        assert browser.js("document.querySelector('#detail h3').textContent") == "beta-T1-02-r2"
        assert browser.js("location.hash").startswith("#case=beta&")
        assert browser.js("document.getElementById('runs-count').textContent") == "1 of 8 shown"
        _check_drill_down(browser, out / "runs" / "beta-T1-02-r2")
        browser.click("#detail-close")
        assert browser.js("document.getElementById('detail').hidden") is True
        assert "open=" not in browser.js("location.hash")
        assert browser.errors() == []
        # a shared link opens the same view: filters, order and the open run
        number = browser.js(
            "document.querySelector('#runs tr[data-run]:not([hidden])').getAttribute('data-run')"
        )
        browser.open(
            f"{(out / 'report.html').as_uri()}#case=beta&open={number}&sort=runs.cost&dir=desc"
        )
        assert browser.js("document.querySelector('#detail h3').textContent") == "beta-T1-02-r2"
        assert _costs(browser) == costs
        assert browser.errors() == []
    finally:
        browser.close()


def _check_drill_down(browser: Browser, run_dir: Path) -> None:
    """The open run shows its judges, its checks and its transcript: the Agent call folded, the
    sub-agent's tool calls nested in it, each call's result inside."""
    rec = json.loads((run_dir / "run.json").read_text())
    assert rec["trajectory"]["used"]["agents"] == {"helper": True}
    detail = browser.js("document.getElementById('detail').innerText")
    assert "agents helper: used" in detail
    assert browser.js("document.querySelectorAll('#detail h4').length") >= 3  # judges, checks
    agent = "#detail .tx > details.agent"
    assert (
        browser.js(f"document.querySelector('{agent} > summary').textContent")
        == "Agent helper: Hand the change to helper"
    )
    assert browser.js(f"document.querySelector('{agent}').open") is False  # folded
    browser.click(f"{agent} > summary")
    assert browser.js(f"document.querySelector('{agent}').open") is True
    inner = browser.js(
        f"Array.from(document.querySelectorAll('{agent} > .sub > details.call'))"
        ".map(function (d) { return d.querySelector('summary').textContent; })"
    )
    assert inner, "no tool call nested in the Agent call"
    assert all(s.startswith(("Write", "Edit", "Read")) for s in inner), inner
    # the sub-agent's prompt and its call's result are inside, and so is the Agent's result
    sub = browser.js(f"document.querySelector('{agent} > .sub').textContent")
    assert "[scylla-oracle level 1]" in sub
    assert "File created successfully" in sub or "updated successfully" in sub
    assert "Done" in browser.js(f"document.querySelector('{agent} > pre:last-child').textContent")


HOSTILE = "\" \u2028 \\\n</script><script>window.pwned = 1</script> '); window.pwned = 2; //"


def _big_report(tmp_path: Path) -> Path:
    """report.html of six runs (two cases, costs all different, each transcript one hostile
    message), made as a report of thousands of runs is: their details beside it, two a file."""
    store, records = tmp_path / "store", []
    for i, case in enumerate(["alpha", "beta"] * 3):
        key = f"{case}-T0-01-r{i}"
        said = {"type": "assistant", "message": {"content": [{"type": "text", "text": HOSTILE}]}}
        (store / "runs" / key).mkdir(parents=True)
        (store / "runs" / key / "transcript.jsonl").write_text(json.dumps(said))
        record: RunRecord = {
            "run_key": key,
            "case": case,
            "tier": "T0",
            "subtest": "T0-01",
            "run": i,
            "outcome": "pass" if i % 3 else "fail",
            "score": i / 10,
            "cost_usd": [0.3, 0.1, 0.5, 0.2, 0.4, 0.6][i],
            "judges": [],
        }
        records.append(record)
    tables = Tables()
    tables.add_records(records, "exp", store)

    def html(given: ReportInput) -> None:  # no figures: not the subject
        html_report.write(
            given.folder,
            given.tables,
            dict(given.summary),
            dict(given.statistics),
            [],
            given.tables.sources,
        )

    out = tmp_path / "exp"
    report.write(out, tables, None, formats=("html",), writers={"html": html})
    return out


def test_a_big_reports_runs_open_from_the_files_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the run details beside the page (the budget made small): the page says so, the
    run table sorts and filters as ever, a clicked run's details load from its chunk file and
    its transcript shows as text; with that chunk's file gone, the run says where its details
    should be."""
    monkeypatch.setattr(html_details, "INLINE_DETAILS", 100)
    monkeypatch.setattr(html_details, "CHUNK_RUNS", 2)
    out = _big_report(tmp_path)
    assert "<template" not in (out / "report.html").read_text(encoding="utf-8")
    browser = Browser(tmp_path / "profile")
    try:
        browser.open((out / "report.html").as_uri())
        note = browser.js("document.getElementById('runs-external').innerText")
        assert "in the folder report-runs/ beside this file (3 files)" in note
        browser.choose("select[data-f=case]", "beta")
        assert browser.js("document.getElementById('runs-count').textContent") == "3 of 6 shown"
        browser.click("th[data-k=cost]")
        browser.click("th[data-k=cost]")
        assert _costs(browser) == [0.6, 0.2, 0.1]
        browser.click("#runs tbody tr:not([hidden]) a")  # beta-T0-01-r5: the third file
        browser.wait("(document.querySelector('#detail h3') || {}).textContent === 'beta-T0-01-r5'")
        assert HOSTILE in browser.js("document.querySelector('#detail .tx').textContent")
        assert browser.js("typeof window.pwned") == "undefined"
        assert browser.js("location.hash") == "#case=beta&dir=desc&sort=runs.cost&open=5"
        assert browser.errors() == []
        (out / "report-runs" / "runs-0001.js").unlink()  # runs 2 and 3
        browser.open(f"{(out / 'report.html').as_uri()}#open=3")
        browser.wait("!!document.getElementById('detail-missing')")
        assert browser.js("document.getElementById('detail-missing').textContent") == (
            html_details.MISSING
        )
        assert "run details are in report-runs/ beside this file: keep the folder" in (
            html_details.MISSING
        )
    finally:
        browser.close()
