"""The `scylla` command.

Here the in-process tests; the sessions are in `tests/e2e/test_cli.py`."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_scylla.cli.main import main


def test_validate_needs_a_project_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", str(tmp_path)]) == 2
    assert "has neither cases/ nor tiers/" in capsys.readouterr().err


def test_plan_passes_a_bad_option_on_as_pytest_s_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["plan", "--scylla-runs=0"]) == pytest.ExitCode.USAGE_ERROR
