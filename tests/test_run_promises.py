"""Promises of a run that no other test holds the plugin to: the forced sandbox is the one used
and said, a sandbox failing mid-session is the harness's error, hidden files stay out of the
agent's sight, an unpriced model costs what the CLI says, a case's max_turns reaches the CLI, a
CLI error result is the agent's failure, numeric options keep to their ranges, and pytest's -x,
--lf and --junitxml work on run items. End to end through the real CLI, with the oracle."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

import pytest

from .conftest import Edit

ALPHA = "alpha and T0-01"


def records(out: Path) -> dict[str, dict[str, Any]]:
    return {p.parent.name: json.loads(p.read_text()) for p in out.glob("runs/*/run.json")}


def events(out: Path, key: str) -> list[dict[str, Any]]:
    """The CLI's stream-json transcript of a run, event by event."""
    lines = (out / "runs" / key / "transcript.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def calls(out: Path, key: str) -> list[dict[str, Any]]:
    """The agent's model calls as the gateway logged them."""
    lines = (out / "runs" / key / "model_calls.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def fake_bwrap(folder: Path, script: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A `bwrap` first on PATH running `script` (the sandbox program, never the Claude CLI)."""
    folder.mkdir()
    (folder / "bwrap").write_text("#!/bin/sh\n" + script)
    (folder / "bwrap").chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")


# ---------------------------------------------------------------------------------------------
# 1. the sandbox a session is told to use


HOSTNAME_CHECK = ("solution: solution", "  - name: where\n"
                  "    run: [python, -c, 'import socket; print(socket.gethostname())']\n"
                  "solution: solution")


@pytest.mark.parametrize(("kind", "hostname"), [
    pytest.param("bwrap", "scylla", id="bwrap"),  # its own UTS namespace, named by the sandbox
    pytest.param("local", socket.gethostname(), id="local"),  # this machine's
])
def test_a_forced_sandbox_is_the_one_the_run_uses_and_the_header_names(
        mini: Path, pytester: pytest.Pytester, edit: Edit, oracle: list[str], kind: str,
        hostname: str) -> None:
    """--scylla-sandbox=bwrap|local: the header line, the record's and the manifest's `sandbox`
    say it, and the run's checks (started by the same sandbox as the agent) really ran in it."""
    edit("cases/alpha/test.yaml", *HOSTNAME_CHECK)
    out = mini / "out"
    result = pytester.runpytest("cases", "-k", ALPHA, "-p", "no:xdist", *oracle,
                                f"--scylla-out={out}", f"--scylla-sandbox={kind}")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"scylla: sandbox={kind}"])
    rec = records(out)["alpha-T0-01-r1"]
    assert rec["sandbox"] == kind
    where = {c["name"]: c for c in rec["checks"]}["where"]
    assert where["stdout"] == f"{hostname}\n"
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["sandboxes"] == [kind]
    assert manifest["options"]["sandbox"] == kind


def test_forcing_an_unusable_bwrap_is_one_setup_error_and_nothing_runs(
        mini: Path, pytester: pytest.Pytester, oracle: list[str],
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """--scylla-sandbox=bwrap where bubblewrap cannot create a sandbox: the header says so, the
    first run errors with the reason and the fix, and the session stops there: no fallback to
    an unisolated run, no wall of errors."""
    fake_bwrap(tmp_path / "bin", "echo 'bwrap: setting up uid map: Permission denied' >&2\n"
               "exit 1\n", monkeypatch)
    out = mini / "out"
    result = pytester.runpytest("cases", "-p", "no:xdist", *oracle, f"--scylla-out={out}",
                                "--scylla-sandbox=bwrap")
    problem = ("--scylla-sandbox=bwrap: bubblewrap cannot create a sandbox here: bwrap: setting "
               "up uid map: Permission denied; install it (Debian/Ubuntu: apt-get install "
               "bubblewrap) or use --scylla-sandbox=local")
    result.stdout.fnmatch_lines([f"scylla: sandbox problem: {problem}"])
    result.stdout.fnmatch_lines(["*ERROR at setup of alpha[[]T0-00-r1]*", f"setup: {problem}"])
    result.assert_outcomes(errors=1)
    assert [ln for ln in result.outlines if ln.startswith("setup:")] == [f"setup: {problem}"]
    assert not (out / "runs").exists()
    assert "Traceback" not in result.stdout.str()
