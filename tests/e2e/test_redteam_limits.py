"""Red team (#29 item 7): under bwrap, `--scylla-limits` caps processes, memory and the
sandbox's /tmp. Each attack is bounded (cheap on the host) and has its positive control: the
same attack without limits succeeds.

Here the sessions; the in-process tests are in `tests/unit/run/sandbox/test_redteam_limits.py`."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_scylla.run.sandbox import bwrap_works, limits

pytestmark = pytest.mark.skipif(bwrap_works() is not None, reason=f"bwrap: {bwrap_works()}")
needs_cgroups = pytest.mark.skipif(
    not {"memory", "pids"} <= set(limits.parents()), reason="no writable memory/pids cgroup here"
)


@needs_cgroups
def test_the_header_names_the_limits_of_the_sandbox(mini: Path, pytester: pytest.Pytester) -> None:
    """End to end: the session header says what bwrap limits (and local, that it limits
    nothing)."""
    bw = pytester.runpytest(
        "cases", "--co", "--scylla-sandbox=bwrap", "--scylla-limits=memory=256m,pids=64"
    )
    bw.stdout.fnmatch_lines(
        ["scylla: sandbox=bwrap", "scylla: limits: memory=256m, cpus=2, pids=64, /tmp=64m"]
    )
    local = pytester.runpytest("cases", "--co", "--scylla-sandbox=local")
    local.stdout.fnmatch_lines(["scylla: sandbox=local", "scylla: limits: none (local: *)"])
