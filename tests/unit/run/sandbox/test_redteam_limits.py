"""Red team (#29 item 7): under bwrap, `--scylla-limits` caps processes, memory and the
sandbox's /tmp. Each attack is bounded (cheap on the host) and has its positive control: the
same attack without limits succeeds.

Here the in-process tests; the sessions are in `tests/e2e/test_redteam_limits.py`."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from pytest_scylla.run.sandbox import Bwrap, Sandbox, base_env, bwrap_works, limits
from pytest_scylla.run.sandbox.limits import DEFAULT_LIMITS

pytestmark = pytest.mark.skipif(bwrap_works() is not None, reason=f"bwrap: {bwrap_works()}")
needs_cgroups = pytest.mark.skipif(
    not {"memory", "pids"} <= set(limits.parents()), reason="no writable memory/pids cgroup here"
)

SMALL = (256 << 20, 1.0, 64)  # memory=256m (so /tmp=64m), cpus=1, pids=64

FORK = """
import subprocess, sys
started = []
for _ in range(300):
    try:
        started.append(subprocess.Popen(["sleep", "30"]))
    except OSError:
        break
print("started", len(started), flush=True)
for p in started:
    p.kill()
    p.wait()
"""
HOG = """
chunks = []
for _ in range(32):  # 512 MiB in 16 MiB pieces, every page written
    chunks.append(b"\\1" * (16 << 20))
print("allocated", flush=True)
"""
FILL = """
import errno
written = 0
try:
    with open("/tmp/fill", "wb") as out:
        for _ in range(200):
            out.write(b"\\0" * (1 << 20))
            out.flush()
            written += 1
    print("wrote", written)
except OSError as exc:
    print("stopped", written, errno.errorcode[exc.errno])
"""


def _run(tmp_path: Path, script: str, box: Sandbox) -> tuple[str, int | None]:
    private = tmp_path / "private"
    (private / "work").mkdir(parents=True, exist_ok=True)
    out, err = tmp_path / "out", tmp_path / "err"
    try:
        with out.open("wb") as so, err.open("wb") as se:
            finished = box.run(
                [sys.executable, "-c", script],
                private / "work",
                private,
                base_env(private),
                None,
                60,
                so,
                se,
            )
    finally:
        box.close(private)
    return out.read_text() + err.read_text(), finished.exit_code


@needs_cgroups
@pytest.mark.parametrize(("limited", "expect"), [(True, "capped"), (False, "control")])
def test_a_fork_loop_is_capped_at_the_pids_limit(
    tmp_path: Path, limited: bool, expect: str
) -> None:
    text, _ = _run(tmp_path, FORK, Bwrap(limits=SMALL if limited else None))
    started = int(text.split("started ")[1].split()[0])
    if limited:
        assert started < 64, text
    else:  # control: without limits all 300 start
        assert started == 300, text


@needs_cgroups
@pytest.mark.parametrize("limited", [True, False])
def test_a_memory_hog_is_stopped_at_the_memory_limit(tmp_path: Path, limited: bool) -> None:
    text, code = _run(tmp_path, HOG, Bwrap(limits=SMALL if limited else None))
    if limited:
        assert "allocated" not in text, (code, text)
        assert code != 0, (code, text)
    else:  # control: 512 MiB is taken freely without a limit
        assert "allocated" in text, (code, text)
        assert code == 0, (code, text)


@pytest.mark.parametrize("limited", [True, False])
def test_filling_tmp_stops_at_the_sized_tmpfs(tmp_path: Path, limited: bool) -> None:
    text, _ = _run(tmp_path, FILL, Bwrap(limits=SMALL if limited else None))
    if limited:
        assert "stopped" in text, text
        assert "ENOSPC" in text, text
        assert int(text.split()[1]) <= 64, text
    else:  # control: 200 MB fit in an unsized /tmp
        assert "wrote 200" in text, text


@needs_cgroups
def test_a_runs_cgroups_are_removed_even_after_a_timeout(tmp_path: Path) -> None:
    box = Bwrap(limits=DEFAULT_LIMITS)
    private = tmp_path / "private"
    (private / "work").mkdir(parents=True)
    finished = box.run(
        ["sh", "-c", "sleep 60 & sleep 60 & wait"],
        private / "work",
        private,
        base_env(private),
        None,
        1,
        -3,
        -3,
    )
    assert finished.timed_out
    made = list(box.groups[private].dirs)
    assert made  # control: the run had its cgroups
    assert all(d.is_dir() for d in made)
    box.close(private)
    assert not any(d.exists() for d in made)
    assert private not in box.groups


def test_what_cannot_be_limited_is_said(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "parents", lambda: {})
    said = limits.summary(limits.Limits(*SMALL))
    assert "memory NOT limited" in said
    assert "cpus NOT limited" in said
    assert "/tmp=64m" in said
    assert ("pids NOT limited" in said) == (os.geteuid() == 0)
    box = Bwrap(limits=SMALL)
    argv = box.wrap(["true"], Path("/"), Path("/nonexistent"))
    assert ["--size", str(64 << 20), "--tmpfs", "/tmp"] == argv[argv.index("--size") :][:4]
    box.close(Path("/nonexistent"))


def test_the_local_sandbox_says_it_limits_nothing() -> None:
    from pytest_scylla.session.header import limits_line

    assert "unbounded" in str(limits_line("local", DEFAULT_LIMITS))
    assert str(limits_line("bwrap", DEFAULT_LIMITS)).startswith("scylla: limits: ")


def test_a_cgroup_that_cannot_be_made_is_a_clear_sandbox_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_scylla.run.sandbox import SandboxError

    monkeypatch.setattr(limits, "parents", lambda: {"pids": tmp_path / "gone"})
    with pytest.raises(SandboxError, match="cannot make the run's cgroup"):
        Bwrap(limits=SMALL).wrap(["true"], tmp_path, tmp_path)


@needs_cgroups
def test_cgroups_a_killed_session_left_are_removed_by_the_next() -> None:
    dead = max(int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()) + 100000
    live = limits.create(limits.Limits(*SMALL))
    left = [parent / f"scylla-{dead}-0" for parent in set(limits.parents().values())]
    for path in left:
        path.mkdir()
    try:
        assert all(p.is_dir() for p in left)  # control: they are there
        limits.remove(limits.stale())
        assert not any(p.exists() for p in left)
        assert all(p.is_dir() for p in live.dirs)  # a live process's own are kept
    finally:
        limits.remove(live)
        for path in left:
            if path.exists():
                path.rmdir()
