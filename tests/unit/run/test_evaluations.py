"""Evaluations in Python (`@pytest.mark.scylla`) and the public fixtures: their records, their
failures, resume, the errors of a badly marked test, and reading the agent's files safely.
The runner seam is the stand-in (fast, no CLI) except where the workspace itself is the point;
the scaffolded example runs through the real CLI in tests/e2e/test_init.py.

Here the in-process tests; the sessions are in `tests/e2e/test_evaluations.py`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_scylla.run.hostile import HostileDataError, read


def test_reading_the_agents_files_never_follows_what_it_planted(tmp_path: Path) -> None:
    """The attack on `AgentRun.read_text`: links, a FIFO (a read that would hang) and a path
    out of the workspace, with the naive read as the positive control."""
    secret = tmp_path / "secret.txt"
    secret.write_text("the host's secret\n")
    ws = tmp_path / "work"
    (ws / "pkg").mkdir(parents=True)
    (ws / "pkg" / "ok.py").write_text("fine\n")
    (ws / "link.py").symlink_to(secret)
    (ws / "linkdir").symlink_to(tmp_path)
    os.mkfifo(ws / "pipe")
    assert read(ws, "pkg/ok.py") == b"fine\n"
    assert (ws / "link.py").read_text() == "the host's secret\n"  # the naive read follows
    assert (ws / "linkdir" / "secret.txt").read_text() == "the host's secret\n"
    for rel in ("link.py", "linkdir/secret.txt", "pipe", "../secret.txt", "pkg/../../x"):
        with pytest.raises(HostileDataError):
            read(ws, rel)
    (ws / "big").write_bytes(b"x" * 11)
    with pytest.raises(HostileDataError, match="larger than 10 bytes"):
        read(ws, "big", limit=10)
    with pytest.raises(FileNotFoundError):
        read(ws, "missing.py")
