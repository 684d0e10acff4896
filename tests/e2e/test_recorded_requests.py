"""The recorded Claude Code requests the ablation check's unit tests read
(tests/fixtures/claude-requests) are made again by their script with the installed pinned CLI,
into a temporary folder: each still shows what its unit tests rely on, so a pinned CLI that
changed how it lists skills or loads a subfolder's CLAUDE.md fails here, in CI."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_scylla.run.gateway import reached as ablation

from ..conftest import FIXTURES, ROOT, require

SCRIPT = FIXTURES / "claude-requests" / "refresh.py"
OURS = {f"s{i:02d}-helper" for i in range(60)}


def _first(request: dict[str, Any]) -> dict[str, Any]:
    """The request up to the model's first turn (what its run's first request carried)."""
    messages = request["messages"]
    at = next(i for i, m in enumerate(messages) if m["role"] == "assistant")
    return {**request, "messages": messages[:at]}


@pytest.mark.slow  # three oracle runs through the real CLI, more if the race below loses
def test_the_refreshed_requests_still_show_what_the_unit_tests_rely_on(
    tmp_path: Path, oracle: list[str]
) -> None:
    require(None if shutil.which("claude") else "no `claude` on PATH (.ci/run installs it)")
    out = tmp_path / "out"
    cache = oracle[1].partition("=")[2]  # the session's, shared with the other oracle runs
    argv = [str(SCRIPT), f"--out={out}", f"--keep={tmp_path / 'work'}", f"--cache-dir={cache}"]
    done = subprocess.run(
        [sys.executable, *argv],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    made = {p.name: json.loads(p.read_text()) for p in out.glob("*.json")}
    assert sorted(made) == sorted(p.name for p in SCRIPT.parent.glob("*.json"))
    pinned = re.search(r"^CLAUDE_CODE_VERSION=(\S+)", (ROOT / ".ci" / "run").read_text(), re.M)
    assert pinned is not None
    assert {r["cli_version"] for r in made.values()} == {pinned.group(1)}
    # 60 skills past the listing budget: listed as bare `- name` lines
    compact = made["compact-skills.json"]
    listing = next(m["content"] for m in compact["messages"] if m["role"] == "system")
    assert all(f"\n- {name}\n" in listing + "\n" for name in OURS)
    seen = ablation.observe(compact)
    assert seen.skills >= OURS
    assert not OURS & set(seen.descriptions)
    # a subfolder's CLAUDE.md, loaded once the agent read there, in a later request
    for name, path in (
        ("nested-claude-md.json", "/w/sub/CLAUDE.md"),
        ("subagent-nested-claude-md.json", "/w/ledger/CLAUDE.md"),
    ):
        later = made[name]
        assert path not in ablation.observe(_first(later)).claude_md, name
        assert path in ablation.observe_later(later).claude_md, name
    # (sub/'s skill comes with it on some runs only: the script says so when it never did)
