"""`scylla check-case` on cases that live outside `cases/` (as mined cases often do): they are
collected as cases there, and when no run is made, the command it suggests is the one that
shows why (not a plain `pytest <folder>`, which collects the case's hidden tests and fails on
their imports)."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_scylla.cli.main import main


def test_a_case_outside_cases_gets_a_command_that_shows_why_it_made_no_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    case = tmp_path / "mined" / "demo"
    (case / "hidden" / "tests").mkdir(parents=True)
    (case / "test.yaml").write_text("id: demo\nname: x\nprompt: [unclosed\n")
    (case / "hidden" / "tests" / "test_x.py").write_text(
        "import not_a_module_here\n\n\ndef test_x():\n    pass\n"
    )
    monkeypatch.chdir(tmp_path)
    assert main(["check-case", "mined/demo"]) == 1
    said = capsys.readouterr().out
    assert said.startswith("FAIL demo: no run was made"), said
    command = said.split("run `", 1)[1].split("` to see why", 1)[0]
    argv = shlex.split(command)
    assert argv[:2] == ["pytest", "mined/demo/test.yaml"], command
    shown = subprocess.run(
        [sys.executable, "-m", *argv], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert "mined/demo/test.yaml:4: YAML syntax error" in shown.stdout, shown.stdout
    assert "not_a_module_here" not in shown.stdout + shown.stderr  # the hidden test: not run
    # the control: the old suggestion, pytest on the folder, fails on the hidden test's import
    old = subprocess.run(
        [sys.executable, "-m", "pytest", "mined/demo", "--scylla-oracle", "-p", "no:cacheprovider"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert "ModuleNotFoundError: No module named 'not_a_module_here'" in old.stdout
