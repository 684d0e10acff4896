"""The workspace after the agent as hostile data: nothing it wrote runs or is followed on the
host, and what would game the checks is undone and recorded. Each attack is first shown to work
the naive way (the positive control), then shown to fail against the harness.

Here the sessions; the in-process tests are in `tests/unit/run/test_integrity.py`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_scylla.formats.spec import Case, load_case
from pytest_scylla.run import hostile, integrity
from pytest_scylla.run.workspace import Workspace, create, diff

ROOT = Path(__file__).resolve().parents[2]
CANARY = "sk-ant-canary-integrity-7f3a"


def case(name: str) -> Case:
    return load_case(ROOT / "cases" / name / "test.yaml", ROOT / "rubrics")


def make(case_: Case, tmp_path: Path) -> Workspace:
    return create(case_, tmp_path / "ws", tmp_path / "cache", harness=tmp_path / "harness")


def findings(case_: Case, ws: Workspace) -> list[tuple[str, str]]:
    entries, _ = hostile.walk(ws.path)
    return [(f.kind, f.path) for f in integrity.secure(case_, ws.tree(), entries)]


# -- 1. the agent's .git runs nothing on the host --------------------------------------------


def plant_git_traps(ws: Path, marker: Path) -> None:
    """fsmonitor, hooks and a clean filter that would run on the host and leak the key."""
    hook = ws / "trap.sh"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    with open(ws / ".git" / "config", "a") as cfg:
        cfg.write(
            f"[core]\n\tfsmonitor = {hook}\n\thooksPath = {ws}\n"
            "[filter \"x\"]\n\tclean = sh -c 'echo $ANTHROPIC_API_KEY; cat'\n"
            "[diff \"x\"]\n\ttextconv = sh -c 'echo $ANTHROPIC_API_KEY'\n"
        )
    (ws / ".gitattributes").write_text("* filter=x diff=x\n")
    (ws / "hello.py").write_text("print('Hello, World!')\n")


def test_the_agents_git_config_filters_and_fsmonitor_never_run_on_the_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY)
    c = case("test-001")
    ws = make(c, tmp_path)
    marker = tmp_path / "ran-on-host"
    plant_git_traps(ws.path, marker)
    # positive control: git run the naive way, in the workspace with the harness's environment
    control = tmp_path / "control"
    shutil.copytree(ws.path, control, symlinks=True)
    plant_git_traps(control, marker)  # the paths inside the traps point at the copy
    naive = subprocess.run(
        "git add -A && git diff --cached HEAD",
        shell=True,
        cwd=control,
        capture_output=True,
        text=True,
        check=False,
    )
    assert marker.exists()
    assert CANARY in naive.stdout
    marker.unlink()

    text = diff(ws)
    assert not marker.exists()
    assert CANARY not in text
    assert "+print('Hello, World!')" in text  # the agent's work is still all there
    assert "b/.gitattributes" in text
    assert "b/trap.sh" in text


def test_pytest_settings_the_agent_changed_or_added_are_put_back(tmp_path: Path) -> None:
    """`addopts = --co` makes every pytest check collect only and exit 0 (the positive control
    runs it); the harness restores changed settings files and removes added ones, while a
    settings file changed elsewhere (dependencies) or without pytest settings is left alone."""
    c = case("test-002")
    ws = make(c, tmp_path)
    control = tmp_path / "control"
    shutil.copytree(ws.path, control, symlinks=True)
    (control / "calc_test.py").write_text("def test_fails():\n    assert False\n")
    (control / "pytest.ini").write_text("[pytest]\naddopts = --co -q\n")
    naive = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "calc_test.py"],
        cwd=control,
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("PYTEST")},
        check=False,
    )
    assert naive.returncode == 0, naive.stdout  # the failing test was never run

    (ws.path / "pytest.ini").write_text("[pytest]\naddopts = --co -q\n")
    (ws.path / "tests" / "tox.ini").write_text("[pytest]\naddopts = -k nothing\n")
    (ws.path / "fairshare" / "setup.cfg").write_text("[metadata]\nname = x\n")  # no pytest
    pinned = (ws.path / "pyproject.toml").read_text()
    (ws.path / "pyproject.toml").write_text(pinned + 'addopts = "--co"\n')  # in its section
    found = findings(c, ws)
    assert ("test_config", "pytest.ini") in found
    assert ("test_config", "tests/tox.ini") in found
    assert ("test_config", "pyproject.toml") in found
    assert not (ws.path / "pytest.ini").exists()
    assert not (ws.path / "tests" / "tox.ini").exists()
    assert (ws.path / "pyproject.toml").read_text() == pinned  # restored
    assert (ws.path / "fairshare" / "setup.cfg").exists()
    assert integrity.pytest_settings("pyproject.toml", b'[project]\nname = "x"\n') is None
    assert integrity.pytest_settings("pyproject.toml", b"[tool.pytest]\nx = 1\n") == {"x": 1}
    assert integrity.pytest_settings("pytest.ini", b"") == {}  # pytest.ini always counts
    assert integrity.pytest_settings(
        "pyproject.toml", (pinned + 'addopts = "--co"\n').encode()
    ) == {"ini_options": {"testpaths": ["tests"], "addopts": "--co"}}  # parsed, not raw
