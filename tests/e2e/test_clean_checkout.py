"""The git snapshot the CLI shows the model (its first request's system text: branch, `Status:`
lines, recent commits) is a clean checkout, as in the team's own run, though the tier overlay
rewrote the project's configuration; and the run's diff is the agent's work alone."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_scylla.run import workspace


def _first_main(run_dir: Path) -> dict[str, Any]:
    """The run's first request of the main agent (the first that offers it tools)."""
    bodies = [json.loads(b.read_bytes()) for b in sorted(run_dir.glob("bodies/*.request.json"))]
    return next(b for b in bodies if len(b.get("tools") or []) > 3)


def _snapshot(request: dict[str, Any]) -> str:
    """The git snapshot's `Status:` section in the request's system text."""
    system = request.get("system") or []
    text = system if isinstance(system, str) else "\n".join(b.get("text", "") for b in system)
    found = re.search(r"(?ms)^Status:\n(.*?)\n\nRecent commits:\n(.*?)(?:\n\n|\Z)", text)
    assert found is not None, text[-3000:]
    return found.group(1) + "\n--\n" + found.group(2)


def _unfolded(dest: Path, task: str, harness: Path) -> workspace.Workspace:
    """`workspace.start` as it was: the harness's copy taken, the overlay left uncommitted."""
    shutil.copytree(dest / ".git", harness / "git", symlinks=True)
    return workspace.Workspace(dest, task, harness / "git", task)


@pytest.mark.parametrize("folded", [True, False], ids=["folded", "control"])
def test_the_cli_sees_a_clean_checkout_and_the_diff_only_the_agents_work(
    mini: Path,
    pytester: pytest.Pytester,
    oracle: list[str],
    monkeypatch: pytest.MonkeyPatch,
    folded: bool,
) -> None:
    """The mini alpha case's source with a team's CLAUDE.md and .mcp.json, run in the arm T0-02
    (which appends a block to CLAUDE.md): the CLI's status is clean, its one commit the task's
    own, and the diff holds the oracle's solution (main.py) and nothing of the overlay's. The
    control (the overlay not folded into the commit, as before `workspace.start`): the CLI
    shows CLAUDE.md modified, and the diff would count it as the agent's."""
    if not folded:  # the session runs in this process
        monkeypatch.setattr(workspace, "start", _unfolded)
    source = mini / "cases" / "alpha" / "source"
    (source / "CLAUDE.md").write_text("# the team's rules\n\nKeep it small.\n")
    (source / ".mcp.json").write_text('{"mcpServers": {}}\n')
    out = mini / "out"
    result = pytester.runpytest(
        "cases",
        "-k",
        "alpha and T0-02",
        "-p",
        "no:xdist",
        *oracle,
        "--scylla-record-bodies",
        f"--scylla-out={out}",
    )
    result.assert_outcomes(passed=1)
    [run_json] = out.glob("runs/*/run.json")
    rec = json.loads(run_json.read_text())
    assert rec["outcome"] == "pass", rec["reason"]
    status, commits = _snapshot(_first_main(run_json.parent)).split("\n--\n")
    assert re.fullmatch(r"[0-9a-f]{7,40} alpha: task source", commits), commits
    changed = re.findall(r"(?m)^diff --git a/(\S+) ", (run_json.parent / "diff.patch").read_text())
    if folded:
        assert status == "(clean)"
        assert rec["source"]["base_commit"] != rec["source"]["task_commit"]
        assert changed == ["main.py"]
    else:
        assert status.split() == ["M", "CLAUDE.md"]
        assert rec["source"]["base_commit"] == rec["source"]["task_commit"]
        assert changed == ["CLAUDE.md", "main.py"]
