"""The model axis, `--scylla-models=a,b`: every run once per model; the model ends the item id
(`-k`), is a marker (`-m`), is the run's model (over a subtest's own), and is a key of every
summary: the tiers per model, the model comparison table, the models' tests, resume and
`scylla compare`.

Here the sessions; the in-process tests are in `tests/unit/core/test_models.py`."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from pytest_scylla.cli.main import main

from ..browser import Browser
from ..conftest import workers

MODELS = "--scylla-models=claude-sonnet-5,claude-haiku-4-5"


def _ids(pytester: pytest.Pytester, *args: str) -> list[str]:
    result = pytester.runpytest("cases", "--collect-only", "-q", MODELS, *args)
    return [line.split("::")[1] for line in result.outlines if "::" in line]


def test_the_model_is_in_the_item_id_and_a_marker(mini: Path, pytester: pytest.Pytester) -> None:
    ids = _ids(pytester, "-k", "alpha and T0-01")
    assert ids == ["alpha[T0-01-r1-claude-sonnet-5]", "alpha[T0-01-r1-claude-haiku-4-5]"]
    assert _ids(pytester, "-k", "haiku and T0") == [
        f"{case}[T0-{n}-r1-claude-haiku-4-5]"
        for case in ("alpha", "beta")
        for n in ("00", "01", "02")
    ]
    marked = _ids(pytester, "-m", "claude-sonnet-5 and T1", "--strict-markers")
    assert marked == [
        f"{case}[T1-{n}-r1-claude-sonnet-5]" for case in ("alpha", "beta") for n in ("01", "02")
    ]
    assert len(_ids(pytester)) == 2 * len(_ids(pytester, "-k", "haiku"))
    bad = pytester.runpytest("cases", "--collect-only", "--scylla-models=a,b,a")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    assert "'a' is listed twice" in bad.stderr.str()


def _check_html(report: Path, profile: Path) -> None:
    """The report's run table has a model column and filter; the models' table is shown."""
    browser = Browser(profile)
    try:
        browser.open(report.as_uri())
        assert browser.js("document.getElementById('runs-count').textContent") == "4 of 4 shown"
        browser.choose("select[data-f=model]", "Haiku 4.5")
        assert browser.js("document.getElementById('runs-count').textContent") == "2 of 4 shown"
        assert browser.js(
            "Array.from(document.querySelectorAll('#runs tbody tr:not([hidden])'))"
            ".every(function (r) { return r.textContent.indexOf('haiku') >= 0; })"
        )
        assert browser.js(
            "Array.from(document.querySelectorAll('h2')).map(function (h) "
            "{ return h.textContent; })"
        )[:2] == ["Models", "Tiers (all models pooled)"]
        assert browser.errors() == []
    finally:
        browser.close()


@pytest.mark.slow  # the model axis's collection and keys are tested above
def test_two_models_end_to_end(
    mini: Path, pytester: pytest.Pytester, oracle: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Real CLI runs through the gateway per model: the oracle answers as the model asked for
    and the gateway prices it as that model, so Haiku costs less than Sonnet by construction."""
    out = mini / "out"
    args = [
        "cases",
        "-k",
        "alpha and T0-01",
        *workers(2),
        MODELS,
        *oracle,
        "--scylla-runs=2",
        f"--scylla-out={out}",
        "--scylla-report=terminal,md,html",
    ]
    done = pytester.runpytest(*args)
    done.assert_outcomes(passed=4)
    records = {p.parent.name: json.loads(p.read_text()) for p in out.glob("runs/*/run.json")}
    assert {k: r["model"] for k, r in records.items()} == {
        f"alpha-T0-01-r{n}-{m}": m for n in (1, 2) for m in ("claude-sonnet-5", "claude-haiku-4-5")
    }
    with (out / "runs.csv").open(encoding="utf-8") as handle:
        assert (
            sorted(r["agent_model"] for r in csv.DictReader(handle))
            == ["Haiku 4.5"] * 2 + ["Sonnet 5"] * 2
        )
    summary = json.loads((out / "summary.json").read_text())
    side = {m["agent_model"]: m for m in summary["models"]}
    assert side["Haiku 4.5"]["mean_cost"] < side["Sonnet 5"]["mean_cost"]
    assert side["Haiku 4.5"]["cop"] < side["Sonnet 5"]["cop"]
    assert (side["Haiku 4.5"]["n"], side["Haiku 4.5"]["frontier_tier"]) == (2, "T0")
    assert [(t["agent_model"], t["tier"], t["n"]) for t in summary["model_tiers"]] == [
        ("Haiku 4.5", "T0", 2),
        ("Sonnet 5", "T0", 2),
    ]
    stats = json.loads((out / "statistical_results.json").read_text())
    cost = next(r for r in stats["models"]["pairwise"] if r["metric"] == "cost_usd")
    assert (cost["group1"], cost["group2"], cost["cliffs_delta"]) == ("Haiku 4.5", "Sonnet 5", -1.0)
    assert [t["agent_model"] for t in stats["tiers_per_model"]] == ["Haiku 4.5", "Sonnet 5"]
    assert "model Haiku 4.5: 2 runs, pass rate 100%" in done.stdout.str()
    assert "## Model comparison" in (out / "tables.md").read_text()
    _check_html(out / "report.html", mini / "profile")
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["options"]["models"] == ["claude-sonnet-5", "claude-haiku-4-5"]
    # the same session again: each model's runs are its own stored runs, reused
    again = pytester.runpytest(*args)
    again.assert_outcomes(passed=4)
    assert "resumed out: 0 run now, 4 reused from disk (cached)" in again.stdout.str()
    assert {p.parent.name for p in out.glob("runs/*/run.json")} == set(records)
    # compare pairs each model with itself when both sides have the axis
    assert main(["compare", str(out), str(out), "--out", str(mini / "cmp")]) == 0
    result = json.loads((mini / "cmp" / "compare.json").read_text())
    assert {(r["agent_model"], r["tier"]) for r in result["tiers"]} == {
        ("Haiku 4.5", "T0"),
        ("Sonnet 5", "T0"),
    }
    assert all(r["paired"] for r in result["tiers"])
    assert result["verdicts"]["common_runs"] == 4
    capsys.readouterr()
