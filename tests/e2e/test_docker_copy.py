"""`--scylla-docker-copy`: the run's folder goes into its container and comes back through the
engine's archive API. What comes back is the agent's: extracted as hostile data (unit tests on
crafted archives), and end to end a FIFO, a set-uid file and links the agent left are refused,
stripped or kept as links, with the bind-mounted run as the positive control.

Here the sessions; the in-process tests are in `tests/unit/run/sandbox/test_docker_copy.py`."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from pytest_scylla.run.sandbox.docker.extract import SPECIAL

from ..conftest import needs_docker
from ..support.copy_session import run_command

ATTACK = (
    "mkfifo pipe && printf '#!/bin/sh\\n' > suid.sh && chmod 4755 suid.sh && "
    "ln -s /etc/passwd passwd-link && echo left"
)


@pytest.mark.parametrize("copy", [True, False], ids=["copy", "bind-control"])
def test_what_the_agent_leaves_comes_back_as_data(
    mini: Path,
    pytester: pytest.Pytester,
    oracle: list[str],
    monkeypatch: pytest.MonkeyPatch,
    copy: bool,
) -> None:
    needs_docker()
    done, rec, run_dir = run_command(mini, pytester, oracle, monkeypatch, ATTACK, copy)
    assert "Traceback" not in done.stdout.str()
    assert rec["transfer"] == ("copy" if copy else "bind")
    assert rec["leftover_processes"] == 0  # the gateway relay of copy mode is not the agent's
    ws = run_dir / "workspace"
    assert os.readlink(ws / "passwd-link") == "/etc/passwd"  # a link, listed, never followed
    mode = (ws / "suid.sh").stat().st_mode
    if copy:
        assert rec["copy_refused"] == [f"work/pipe: {SPECIAL}"]
        assert not (ws / "pipe").exists()
        assert not mode & stat.S_ISUID
    else:  # the control: bind-mounted, the agent's files are there as it made them
        assert "copy_refused" not in rec
        assert stat.S_ISFIFO((ws / "pipe").lstat().st_mode)
        assert mode & stat.S_ISUID
    assert "passwd-link" in (run_dir / "files.txt").read_text()
