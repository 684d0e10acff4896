"""`scylla report`: rebuild the outputs from stored folders, merge shards, read paper CSVs.

Here the sessions; the in-process tests are in `tests/unit/results/test_report_cli.py`."""

from __future__ import annotations

import csv
import json
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from pytest_scylla.cli.main import main

from ..conftest import require, workers
from ..support.docs import example
from ..support.dryrun_report import dryrun_report


@pytest.mark.slow  # tests/e2e/test_shards.py merges shards in the default suite
def test_shards_from_two_sessions_merge_into_one_report(
    standin: Path, pytester: pytest.Pytester, oracle: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    mini = standin  # the controller and the merge are the subject: the stand-in runner
    for marker, name in (("T0", "shard-a"), ("T1 or T5", "shard-b")):
        result = pytester.runpytest(
            "cases", "-m", marker, *workers(0), *oracle, f"--scylla-out={mini / name}"
        )
        assert result.ret in (0, 1)  # the stand-in's mixed outcomes
        assert "error" not in result.parseoutcomes()
    merged = mini / "merged"
    assert main(["report", str(mini / "shard-a"), str(mini / "shard-b"), "--out", str(merged)]) == 0
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
    manifest = json.loads((merged / "manifest.json").read_text())
    assert [m["folder"] for m in manifest["merged_from"]] == [
        str(mini / "shard-a"),
        str(mini / "shard-b"),
    ]
    assert [m["options"]["oracle"] for m in manifest["merged_from"]] == ["solution"] * 2
    assert {"tiers/T0.yaml", "tiers/T5.yaml", "cases/alpha/"} <= set(manifest["inputs"])
    assert len(manifest["config_hashes"]) == 12
    assert manifest["rebuilt_by"].startswith("scylla report ")
    # the same folder rebuilt in place gives the same runs and keeps its session's options
    before = json.loads((mini / "shard-a" / "manifest.json").read_text())
    assert main(["report", str(mini / "shard-a")]) == 0
    with (mini / "shard-a" / "runs.csv").open() as handle:
        assert len(list(csv.DictReader(handle))) == 6
    after = json.loads((mini / "shard-a" / "manifest.json").read_text())
    assert after["options"] == before["options"]
    assert after["inputs"] == before["inputs"]


def test_a_session_writes_the_html_report_on_request(
    mini: Path, pytester: pytest.Pytester, oracle: list[str]
) -> None:
    out = mini / "out"
    result = pytester.runpytest(
        "cases",
        "-k",
        "alpha and T0-01",
        "-p",
        "no:xdist",
        *oracle,
        f"--scylla-out={out}",
        "--scylla-report=terminal,html,md",
    )
    result.assert_outcomes(passed=1)
    html = (out / "report.html").read_text()
    assert "SIMULATED MODEL" in html
    assert html.count("<template id=run-") == 1
    assert "oracle judge: 1 of 1 checks passed" in html  # the drill-down holds the verdicts
    assert "diff --git" in html  # and the diff of the run
    assert (out / "tables.md").is_file()


def test_html_report_loads_in_headless_chromium_without_console_errors(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Chromium opens the report (the paper's dry run's), exits 0 and draws a full-size
    screenshot, with no console error; where chromium is missing it is skipped, saying so, and
    under CI it fails."""
    require(
        None
        if shutil.which("chromium")
        else "Debian's chromium is not installed (.ci/run installs it)"
    )
    code, _, out = dryrun_report(tmp_path_factory)  # `scylla report <dryrun> --out out`
    assert code == 0
    shot = tmp_path / "report.png"
    done = subprocess.run(
        [
            "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--enable-logging=stderr",
            "--v=0",
            f"--screenshot={shot}",
            "--window-size=1200,2400",
            (out / "report.html").as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"  # a PNG, whose IHDR holds width and height
    assert struct.unpack(">II", png[16:24]) == (1200, 2400)  # the whole requested window
    assert len(png) > 10_000  # a real picture of the page, not a blank one
    console = [ln for ln in done.stderr.splitlines() if "CONSOLE" in ln or "Uncaught" in ln]
    assert console == []


# the extension guide's report writer (docs/extending.md), and a count of how often a session
# asks for it
WRITER = (
    example("extending", "report-writer")
    + """

_offered = pytest_scylla_report_writers


def pytest_scylla_report_writers(config):
    if config is not None:  # a session: how often it asks
        with open(config.rootpath / "asked.txt", "a") as asked:
            asked.write("asked\\n")
    return _offered(config)
"""
)


def test_a_report_writer_from_a_plugin_or_an_entry_point(
    mini: Path,
    pytester: pytest.Pytester,
    oracle: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The guide's report writer (importing only `pytest_scylla.api`): as a `conftest.py` it
    adds a report `--scylla-report` names; as a package of the `pytest_scylla` entry-point
    group it adds it to `scylla report` too. Without them the name is refused (the controls)."""
    assert "from pytest_scylla.api import" in WRITER
    assert [
        line
        for line in WRITER.splitlines()
        if line.startswith(("from pytest_scylla", "import pytest_scylla"))
    ] == ["from pytest_scylla.api import ReportInput, Writer"]
    out = mini / "out"
    refused = pytester.runpytest("cases", "--co", "-p", "no:xdist", "--scylla-report=txt")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(["ERROR: --scylla-report: unknown report format 'txt'; *"])
    (mini / "conftest.py").write_text(WRITER)
    done = pytester.runpytest(
        "cases",
        "-k",
        "alpha and T0-01",
        "-p",
        "no:xdist",
        *oracle,
        "--scylla-report=terminal,txt",
        f"--scylla-out={out}",
    )
    done.assert_outcomes(passed=1)
    assert (out / "runs.txt").read_text() == "1 runs, 1 passed\n"
    assert (mini / "asked.txt").read_text() == "asked\n"  # once per session
    (mini / "conftest.py").unlink()
    (out / "runs.txt").unlink()
    assert main(["report", str(out), "--report", "txt"]) == 2  # no package offers it yet
    site = tmp_path / "site"  # an installed package: a module and its entry point
    (site / "toy_writer-0.1.dist-info").mkdir(parents=True)
    (site / "toy_writer.py").write_text(WRITER)
    (site / "toy_writer-0.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: toy-writer\nVersion: 0.1\n"
    )
    (site / "toy_writer-0.1.dist-info" / "entry_points.txt").write_text(
        "[pytest_scylla]\ntoy = toy_writer\n"
    )
    monkeypatch.syspath_prepend(str(site))
    assert main(["report", str(out), "--report", "txt"]) == 0
    assert (out / "runs.txt").read_text() == "1 runs, 1 passed\n"
    again = pytester.runpytest(
        "cases",
        "-k",
        "alpha and T0-01",
        "-p",
        "no:xdist",
        *oracle,
        "--scylla-report=txt",
        f"--scylla-out={mini / 'out2'}",
    )
    again.assert_outcomes(passed=1)  # the session registers the group's modules as plugins
    assert (mini / "out2" / "runs.txt").read_text() == "1 runs, 1 passed\n"
