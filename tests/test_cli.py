"""The `scylla` command."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_scylla.cli import main


def test_validate_accepts_a_good_project(mini: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(mini)]) == 0
    out = capsys.readouterr().out
    assert "ok   alpha (bug-fixing, 1 checks, 2 rubric items)" in out
    assert "ok   T5 (2 subtests)" in out
    assert out.rstrip().endswith("all valid")


def test_validate_reports_every_bad_file(mini: Path, edit: Callable[[str, str, str], None],
                                         capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(mini)
    edit("rubrics/basic.yaml", "weight: 0.6", "weight: 0.7")
    edit("tiers/T1.yaml", "skills: [review]\n", "skills: [nope]\n")
    assert main(["validate", "."]) == 1
    out = capsys.readouterr().out
    assert "rubrics/basic.yaml:2: category weights sum to 1.1, not 1" in out
    assert "tiers/T1.yaml:6: unknown skill 'nope'" in out
    assert out.rstrip().endswith("invalid")


def test_validate_needs_a_project_folder(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(tmp_path)]) == 2
    assert "has neither cases/ nor tiers/" in capsys.readouterr().err


def test_plan_passes_a_bad_option_on_as_pytest_s_usage_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["plan", "--scylla-runs=0"]) == pytest.ExitCode.USAGE_ERROR
