"""The project's promises about itself: README and CI agree, the option surface is pinned.

Here the sessions; the in-process tests are in `tests/project/test_project.py`."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import needs_bwrap, needs_docker

ROOT = Path(__file__).resolve().parents[2]


def test_pytest_help_lists_every_scylla_option(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    options = sorted(set(re.findall(r"--scylla-[a-z-]+", result.stdout.str())))
    assert options == [
        "--scylla-agent",
        "--scylla-alpha",
        "--scylla-budget-usd",
        "--scylla-cache-dir",
        "--scylla-cli",
        "--scylla-docker-copy",
        "--scylla-fresh",
        "--scylla-image",
        "--scylla-judges",
        "--scylla-keep-workspaces",
        "--scylla-label",
        "--scylla-limits",
        "--scylla-margin",
        "--scylla-max-pause",
        "--scylla-max-run-cost",
        "--scylla-min-judges",
        "--scylla-model",
        "--scylla-models",
        "--scylla-only",
        "--scylla-oracle",
        "--scylla-out",
        "--scylla-packaged-tiers",
        "--scylla-panel",
        "--scylla-plan",
        "--scylla-progress",
        "--scylla-record-bodies",
        "--scylla-reference",
        "--scylla-rejudge",
        "--scylla-replay",
        "--scylla-report",
        "--scylla-retries",
        "--scylla-retry-wait",
        "--scylla-rubrics-dir",
        "--scylla-runs",
        "--scylla-sandbox",
        "--scylla-shard",
        "--scylla-skip",
        "--scylla-starts",
        "--scylla-stop",
        "--scylla-subtests",
        "--scylla-tiers",
        "--scylla-tiers-dir",
    ]
    ini = sorted(set(re.findall(r"^  (scylla_[a-z_]+)", result.stdout.str(), re.MULTILINE)))
    # one ini key per option (but the command line's switches of what a session runs), and
    # the case roots (an ini key only)
    assert ini == sorted(
        [
            *(
                o[2:].replace("-", "_")
                for o in options
                if o not in ("--scylla-only", "--scylla-skip")
            ),
            "scylla_cases",
        ]
    )
    # in six groups, each option in one, in the order a reader looks for them
    from pytest_scylla.config.options import GROUPS

    text = result.stdout.str()
    titles = [text.index(f"\n{title}:\n") for title, _ in GROUPS.values()]
    assert titles == sorted(titles)
    grouped = sorted(f"--scylla-{n}" for _, names in GROUPS.values() for n in names)
    assert grouped == options
    for (title, names), end in zip(GROUPS.values(), [*titles[1:], len(text)], strict=True):
        block = text[text.index(f"\n{title}:\n") : end]
        assert all(f"--scylla-{n}" in block for n in names), title
    if pytest.version_tuple[:2] >= (8, 4):  # number keys say so (pytest 8.4 types ini keys)
        assert re.search(r"^  scylla_runs \(int\):", text, re.M)
        assert re.search(r"^  scylla_retry_wait \(float\):", text, re.M)
    assert "$2.00 for a case that sets none" in text  # --scylla-max-run-cost's default


def test_a_number_ini_key_that_is_no_number_names_file_key_and_fix(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini("[pytest]\nscylla_runs = many\n")
    (pytester.path / "cases").mkdir()
    result = pytester.runpytest("cases", "--co")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    said = result.stderr.str()
    assert "tox.ini: scylla_runs" in said  # the file and the key
    assert "'many'" in said
    assert "e.g. scylla_runs = 3" in said or "e.g. --scylla-runs" in said  # the fix
    assert "Traceback" not in said


def test_scylla_command_help() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "pytest_scylla.cli", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for command in ("validate", "report", "import", "plan", "compare", "matrix"):
        assert command in out


@pytest.mark.slow
def test_overhead_benchmark_runs_and_reports_both_measures() -> None:
    needs_bwrap()
    needs_docker()
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench/overhead.py"), "--runs", "1", "--calls", "5"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    for sandbox in ("local", "bwrap", "docker", "docker-copy"):  # a row each, all measured
        assert re.search(rf"^{sandbox}( +-?\d+\.\d+){{6}}$", done.stdout, re.M), done.stdout
    assert re.search(r"^docker adds -?\d+\.\d+ s per run over bwrap", done.stdout, re.M)
    assert re.search(r"^docker-copy adds -?\d+\.\d+ s per run over bwrap", done.stdout, re.M)
    assert re.search(r"gateway per call: direct [\d.]+ ms, proxied [\d.]+ ms", done.stdout)


def test_judge_panel_benchmark_runs_and_reports_the_ratio() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench/judges.py"), "--latency", "0.5", "--repeat", "1"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert re.search(
        r"panel wall time \(median\)\s+[\d.]+ s = [\d.]+ x the slowest judge", done.stdout
    )  # the ratio is reported, not asserted (noisy machines)


@pytest.mark.slow
def test_report_scale_benchmark_runs_and_reports_time_and_size() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench/report_scale.py"), "--runs", "42"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "runs: 42 (3 judges each); scylla report exit 0" in done.stdout
    assert re.search(r"all outputs .*: [\d.]+ s", done.stdout)
    assert re.search(r"report.html: [\d.]+ MB", done.stdout)
