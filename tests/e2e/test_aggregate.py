"""The controller's aggregation and exports: the same records at -n 0 and -n 2, written as they
arrive, with a tier table at the end.

Here the sessions; the in-process tests are in `tests/unit/results/test_aggregate.py`."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from pytest_scylla.results import metrics

from ..conftest import MINI_ITEMS, export_rows, without_timings, workers


def _table(path: Path) -> list[dict[str, str]]:
    with path.open() as handle:
        return list(csv.DictReader(handle))


STABLE = (
    "tier",
    "subtest",
    "run_number",
    "case_id",
    "passed",
    "score",
    "grade",
    "outcome",
    "impl_rate",
    "exit_code",
    "num_turns",
    "api_calls",
)


def test_exports_are_identical_at_0_and_3_workers(standin: Path, pytester: pytest.Pytester) -> None:
    """Through the stand-in runner (36 runs, mixed outcomes): every export and statistic is
    the same whatever the worker count and arrival order; only timings may differ."""
    exports: dict[int, dict[str, object]] = {}
    for n in (0, 3):
        out = standin / f"out{n}" / "exp"  # the same experiment name in each
        result = pytester.runpytest(
            "cases",
            *workers(n),
            "--scylla-runs=3",
            f"--scylla-out={out}",
            "--scylla-report=md,json,csv",
        )
        counts = result.parseoutcomes()
        records = [json.loads(p.read_text()) for p in out.glob("runs/*/run.json")]
        assert len(records) == 3 * len(MINI_ITEMS)
        passes = sum(r["outcome"] == "pass" for r in records)
        assert 0 < passes < len(records)  # mixed: the comparison is not of constant columns
        assert (counts.get("passed", 0), counts.get("failed", 0)) == (passes, len(records) - passes)
        assert counts.get("errors", 0) == 0
        assert len((out / "runs.jsonl").read_text().splitlines()) == len(records)
        exports[n] = {
            name: export_rows(out / name)
            for name in ("runs.csv", "judges.csv", "criteria.csv", "subtests.csv")
        }
        for name in ("summary.json", "statistical_results.json"):
            exports[n][name] = without_timings(json.loads((out / name).read_text()))
        exports[n]["inputs"] = json.loads((out / "manifest.json").read_text())["inputs"]
        assert len(exports[n]["judges.csv"]) == 3 * len(records)  # type: ignore[arg-type]
    for name in exports[0]:
        assert exports[0][name] == exports[3][name], name


@pytest.mark.slow
def test_exports_are_the_same_at_0_2_and_8_workers(
    mini: Path, pytester: pytest.Pytester, oracle: list[str]
) -> None:
    tables, manifests = {}, {}
    for n in (0, 2, 8):
        out = mini / f"out{n}"
        result = pytester.runpytest("cases", *workers(n), *oracle, f"--scylla-out={out}")
        result.assert_outcomes(passed=len(MINI_ITEMS))
        result.stdout.fnmatch_lines(
            [
                "*SIMULATED MODEL: oracle agent and judges, not a real evaluation*",
                "tier * runs * pass rate [[]95% CI[]]*score*grade*cost/run*CoP*",
                "T0 * 6 * 100% [[]54%, 100%[]] * 1.00 * S *<- frontier,  "
                "n=6 < 10: interval is wide",
                f"outcomes: {len(MINI_ITEMS)} pass *",
                "spend (SIMULATED: * no money spent): agent $* + judges $* = $*; results: *",
            ]
        )
        lines = (out / "runs.jsonl").read_text().splitlines()
        assert len(lines) == len(MINI_ITEMS)
        runs = _table(out / "runs.csv")
        assert list(runs[0])[: len(metrics.RUN_COLUMNS)] == metrics.RUN_COLUMNS
        assert len(_table(out / "judges.csv")) == 3 * len(MINI_ITEMS)
        assert {r["criterion"] for r in _table(out / "criteria.csv")} >= {"functional", "quality"}
        summary = json.loads((out / "summary.json").read_text())
        assert summary["runs"] == len(MINI_ITEMS)
        assert summary["simulated"] is True
        assert summary["frontier"]["tier"] in {"T0", "T1", "T5"}
        assert [t["tier"] for t in summary["tiers"]] == ["T0", "T1", "T5"]
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["cli_versions"]
        assert manifest["prices_as_of"]
        # provenance: a content hash of every input file or folder the runs depended on
        assert set(manifest["inputs"]) == {
            "cases/alpha/",
            "cases/beta/",
            "cases/beta/rubric.yaml",
            "rubrics/basic.yaml",
            "tiers/T0.yaml",
            "tiers/T1.yaml",
            "tiers/T5.yaml",
            "tiers/blocks/rules.md",
            "tiers/prompts/terse.md",
            "tiers/skills/review/",
            "tiers/agents/helper.md",
            "tiers/mcp/notes.json",
        }
        assert all(len(h) == 64 for h in manifest["inputs"].values())
        assert manifest["inputs_changed_between_runs"] == []
        assert set(manifest["source_commits"]) == {"alpha", "beta"}
        assert manifest["options"]["oracle"] == "solution"
        tables[n] = sorted(tuple(r[c] for c in STABLE) for r in runs)
        manifests[n] = manifest
    assert tables[0] == tables[2] == tables[8]
    assert manifests[0]["inputs"] == manifests[8]["inputs"]
    assert manifests[0]["source_commits"] == manifests[8]["source_commits"]


def test_the_default_folder_is_named_by_time_and_label(
    mini: Path, pytester: pytest.Pytester, oracle: list[str]
) -> None:
    for extra, label in (([], "oracle-solution"), (["--scylla-label=baseline.v2"], "baseline.v2")):
        result = pytester.runpytest("cases", "-k", "alpha and T0-00", *workers(0), *oracle, *extra)
        result.assert_outcomes(passed=1)
        [folder] = [p for p in (mini / "reports").iterdir() if p.name.endswith("-" + label)]
        assert re.fullmatch(r"\d{8}-\d{6}-" + re.escape(label), folder.name)
        assert (folder / "runs.jsonl").is_file()
        result.stdout.fnmatch_lines([f"spend* results: {folder}"])
    result = pytester.runpytest("cases", *oracle, "--scylla-label=../up")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--scylla-label='../up': a label is up to 64 letters*"])
    assert "Traceback" not in result.stderr.str()
