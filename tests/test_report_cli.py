"""`scylla report`: rebuild the outputs from stored folders, merge shards, read paper CSVs."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from pytest_scylla.cli import main

from .conftest import workers

DRYRUN = Path(__file__).parent / "fixtures" / "dryrun"


def test_shards_from_two_sessions_merge_into_one_report(
        mini: Path, pytester: pytest.Pytester, oracle: list[str],
        capsys: pytest.CaptureFixture[str]) -> None:
    for marker, name in (("T0", "shard-a"), ("T1 or T5", "shard-b")):
        result = pytester.runpytest("cases", "-m", marker, *workers(2), *oracle,
                                    f"--scylla-out={mini / name}")
        assert result.ret == 0
    merged = mini / "merged"
    assert main(["report", str(mini / "shard-a"), str(mini / "shard-b"), "--out",
                 str(merged)]) == 0
    printed = capsys.readouterr().out
    assert "T0 " in printed
    assert "T5 " in printed
    assert "<- frontier" in printed
    with (merged / "runs.csv").open() as handle:
        runs = list(csv.DictReader(handle))
    assert sorted(r["tier"] for r in runs) == ["T0"] * 6 + ["T1"] * 4 + ["T5"] * 2
    summary = json.loads((merged / "summary.json").read_text())
    assert summary["runs"] == 12
    assert summary["warnings"] == []
    assert json.loads((merged / "statistical_results.json").read_text())["n_runs"] == 12
    # the same folder rebuilt in place gives the same runs
    assert main(["report", str(mini / "shard-a")]) == 0
    with (mini / "shard-a" / "runs.csv").open() as handle:
        assert len(list(csv.DictReader(handle))) == 6


def test_paper_format_csvs_reproduce_alpha_and_the_frontier(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(DRYRUN), "--out", str(tmp_path / "out")]) == 0
    assert "T5        1         100% [2%, 100%]   0.98     A   $0.0653   $0.0653 <- frontier" \
        in capsys.readouterr().out
    results = json.loads((tmp_path / "out" / "statistical_results.json").read_text())
    assert round(results["krippendorff_alpha"]["alpha"], 3) == -0.117
    assert results["omnibus"][0]["note"] == "one run per group: too few to compare"
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["frontier"]["tier"] == "T5"


def test_report_input_errors_are_one_line(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(tmp_path / "missing")]) == 2
    assert "missing: no such folder" in capsys.readouterr().err
    assert main(["report", str(tmp_path), str(tmp_path)]) == 2
    assert "pass --out DIR" in capsys.readouterr().err
    assert main(["report", str(tmp_path)]) == 2
    assert "no runs.jsonl, runs/*/run.json or runs.csv here" in capsys.readouterr().err
    (tmp_path / "runs.jsonl").write_text('{"run_key": "a"}\n{"run_ke')
    assert main(["report", str(tmp_path)]) == 2
    assert "runs.jsonl:2: not a JSON record" in capsys.readouterr().err
