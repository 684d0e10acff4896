"""`scylla compare BASE CANDIDATE`: the signs of the changes, their tests, the gate's exit code,
refusal of experiments of other cases or tiers, the conditions that changed, and a compare.md
that renders as a pull-request comment does (GitHub-flavoured Markdown tables).

Here the in-process tests; the sessions are in `tests/e2e/test_compare.py`."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

from pytest_scylla.cli.main import main

from ...browser import Browser
from .test_multicase import _experiment, _write_csv


def _edit(folder: Path, change: Any) -> None:
    """Rewrite the runs.csv of an export row by row (`change(row)` edits it in place)."""
    path = folder / "runs.csv"
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        change(row)
    _write_csv(path, rows)


def _set(row: dict[str, Any], passed: bool, score: float, cost: float) -> None:
    row.update(passed=passed, score=score, impl_rate=score, cost_usd=cost)


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two experiments of the same 3 cases × 2 tiers × 3 runs: in the candidate T1 fails every
    run (it passed every one in the base), scores 0.1 lower and costs twice as much; T0 is
    the same on both sides."""
    root = tmp_path_factory.mktemp("compare")
    _experiment(root)
    base, cand = root / "base", root / "cand"
    shutil.copytree(root / "export", base)
    shutil.copytree(root / "export", cand)

    def better(row: dict[str, Any]) -> None:
        if row["tier"] == "T1":
            _set(row, True, 0.7 + 0.01 * int(row["run_number"]), 0.1)

    def worse(row: dict[str, Any]) -> None:
        if row["tier"] == "T1":
            _set(row, False, 0.6 + 0.01 * int(row["run_number"]), 0.2)

    _edit(base, better)
    _edit(cand, worse)
    for folder, model, digest in (
        (base, "claude-sonnet-4-5", "a" * 64),
        (cand, "claude-haiku-4-5", "b" * 64),
    ):
        inputs = {
            "tiers/T1.yaml": digest,
            **({"tiers/T2.yaml": "c" * 64} if folder == cand else {}),
        }  # a file the candidate added
        (folder / "manifest.json").write_text(
            json.dumps({"agent_models": [model], "inputs": inputs})
        )
    return base, cand


def _rows(out: Path, table: str, metric: str) -> dict[tuple[str, ...], dict[str, Any]]:
    result = json.loads((out / "compare.json").read_text())
    keys = ("tier",) if table == "tiers" else ("case_id", "tier")
    return {tuple(r[k] for k in keys): r for r in result[table] if r["metric"] == metric}


def test_compare_shows_the_signs_tests_and_what_changed(
    pair: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, cand = pair
    out = tmp_path / "cmp"
    assert main(["compare", str(base), str(cand), "--out", str(out)]) == 0
    passes, scores = _rows(out, "tiers", "pass_rate"), _rows(out, "tiers", "mean_score")
    costs, cops = _rows(out, "tiers", "cost_per_run"), _rows(out, "tiers", "cop")
    t1 = passes["T1",]
    assert (t1["base"], t1["candidate"], t1["delta"]) == (1.0, 0.0, -1.0)
    assert (t1["paired"], t1["test"], t1["significant"]) == (True, "CMH", True)
    assert t1["ci_high"] < 0
    assert scores["T1",]["delta"] == pytest.approx(-0.1)
    assert (scores["T1",]["significant"], scores["T1",]["test"]) == (True, "Wilcoxon")
    assert costs["T1",]["delta"] == pytest.approx(0.1)
    assert costs["T1",]["significant"]
    assert (cops["T1",]["candidate"], cops["T1",]["delta"]) == (float("inf"), None)
    for metric in (passes, scores, costs):  # T0 is the same on both sides
        assert (metric["T0",]["delta"], metric["T0",]["significant"]) == (0, False)
    # Holm across the table: each corrected p at least its raw p
    assert all(r["p_holm"] >= r["p"] for r in passes.values())
    per_case = _rows(out, "cases", "pass_rate")
    assert {k for k, r in per_case.items() if r["delta"] == -1.0} == {
        (case, "T1") for case in ("test-001", "test-002", "test-003")
    }
    result = json.loads((out / "compare.json").read_text())
    # the runs both have, each case's own (they share tier, subtest and run numbers): T1's
    # verdicts all flipped, T0's all stand
    assert (result["verdicts"]["common_runs"], result["verdicts"]["same_verdict"]) == (18, 9)
    assert {
        "what": "agent_models",
        "base": ["claude-sonnet-4-5"],
        "candidate": ["claude-haiku-4-5"],
    } in result["conditions"]
    assert {
        "what": "input tiers/T1.yaml",
        "base": "content aaaaaaaaaaaa",
        "candidate": "content bbbbbbbbbbbb",
    } in result["conditions"]
    assert {
        "what": "input tiers/T2.yaml",
        "base": "absent",  # never "changed → absent"
        "candidate": "content cccccccccccc",
    } in result["conditions"]
    md = (out / "compare.md").read_text()
    assert md in capsys.readouterr().out
    assert len(md.splitlines()) < 40  # a pull-request comment, not a report
    rendered = MarkdownIt("commonmark").enable("table").parse(md)
    cells = [t.content for t in rendered if t.type == "inline"]
    assert sum(t.type == "table_open" for t in rendered) == 1
    assert any(c.startswith("100.0% → 0.0%: -100.0 pts [") and c.endswith("*") for c in cells)
    assert "agent_models: claude-sonnet-4-5 → claude-haiku-4-5" in cells  # no Python repr
    assert "input tiers/T2.yaml: absent → content cccccccccccc" in cells
    assert "['" not in md
    _check_page(out / "compare.html", tmp_path / "profile")


def _check_page(page: Path, profile: Path) -> None:
    """compare.html in Chromium: both tables whole; "significant changes only" leaves T1's
    drops, marked worse; the selects and a sort by the change work."""
    browser = Browser(profile)

    def shown(table: str, what: str) -> list[Any]:
        return list(
            browser.js(
                f"Array.from(document.querySelectorAll('#{table} tbody tr:not([hidden])'))"
                f".map(function (r) {{ return {what}; }})"
            )
        )

    try:
        browser.open(page.as_uri())
        assert (
            browser.js("document.getElementById('cells-count').textContent") == "24 of 24 shown"
        )  # 3 cases x 2 tiers x 4 metrics
        assert len(shown("tiers", "r.id")) == 8
        browser.click("a[href='#sig=yes']")  # T1's drops only, and only per tier (n=3
        # runs per case and tier is too few for a per-case change to be significant)
        assert shown(
            "tiers", "[r.getAttribute('data-tier'), r.getAttribute('data-metric'), r.className]"
        ) == [["T1", m, "worse"] for m in ("pass rate", "mean score", "cost/run")]
        assert browser.js("document.getElementById('cells-count').textContent") == "0 of 24 shown"
        browser.choose("select[data-f=sig]", "")
        browser.choose("select[data-f=metric]", "pass rate")
        assert len(shown("cells", "r.id")) == 6
        browser.click("#cells th[data-k=delta]")
        changes = [float(v) for v in shown("cells", "r.cells[6].getAttribute('data-v')")]
        assert changes == [-1.0] * 3 + [0.0] * 3
        assert shown("cells", "r.getAttribute('data-tier')")[:3] == ["T1"] * 3
        assert browser.errors() == []
    finally:
        browser.close()


def test_the_regression_gate_exits_1_on_a_significant_drop(
    pair: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, cand = pair
    assert (
        main(
            [
                "compare",
                str(base),
                str(cand),
                "--out",
                str(tmp_path / "a"),
                "--fail-on-regression",
                "5",
            ]
        )
        == 1
    )
    assert "**Gate** (pass-rate drop > 5 pts, significant): FAILED" in capsys.readouterr().out
    # the drop is 100 points: a threshold of 100 lets it through; the other way round is a gain
    assert (
        main(
            [
                "compare",
                str(base),
                str(cand),
                "--out",
                str(tmp_path / "b"),
                "--fail-on-regression",
                "100",
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "compare",
                str(cand),
                str(base),
                "--out",
                str(tmp_path / "c"),
                "--fail-on-regression",
                "0",
            ]
        )
        == 0
    )
    assert main(["compare", str(base), str(cand), "--fail-on-regression", "-1"]) == 2
    assert "expected a number of percentage points >= 0" in capsys.readouterr().err


def test_experiments_of_other_cases_are_refused_unless_intersected(
    pair: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, cand = pair
    fewer = tmp_path / "fewer"
    shutil.copytree(cand, fewer)
    for name in ("runs", "judges", "criteria"):
        with (fewer / f"{name}.csv").open(newline="", encoding="utf-8") as handle:
            rows = [r for r in csv.DictReader(handle) if r["experiment"] != "test-003"]
        _write_csv(fewer / f"{name}.csv", rows)
    capsys.readouterr()
    assert main(["compare", str(base), str(fewer), "--out", str(tmp_path / "x")]) == 2
    assert capsys.readouterr().err == (
        f"{fewer}: its cases differ from {base}'s (only in the base: test-003; only in the "
        "candidate: -); pass --intersect to compare the ones both have\n"
    )
    assert (
        main(["compare", str(base), str(fewer), "--out", str(tmp_path / "y"), "--intersect"]) == 0
    )
    result = json.loads((tmp_path / "y" / "compare.json").read_text())
    assert result["notes"] == [
        "cases compared: those both have (only in the base: test-003; only in the candidate: -)"
    ]
    assert {r["n_base"] for r in result["tiers"]} == {6}
