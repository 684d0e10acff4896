"""The machine's start slots (operations/starts.py): at most N agents starting at once, across
threads and processes; a slot comes back at the first model call, at the block's end, after the
hold limit (red team: a CLI that never calls the model), or with its process (killed); the CLI
never inherits the lock. Each has its positive control."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pytest_scylla.operations.starts import Starts

# another process takes a slot in `folder` (argv[1]), holds it `argv[2]` seconds with its first
# model call never coming, and says how long it waited
OTHER = """
import sys, threading, time
from pathlib import Path
from pytest_scylla.operations.starts import Starts
with Starts(Path(sys.argv[1]), 1, float(sys.argv[3])).slot(threading.Event()) as waited:
    print(waited, flush=True)
    time.sleep(float(sys.argv[2]))
"""


def _other(folder: Path, hold: float, limit: float = 60.0) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", OTHER, str(folder), str(hold), str(limit)],
        stdout=subprocess.PIPE,
        text=True,
    )


def _most_at_once(starts: Starts, agents: int) -> int:
    """Start `agents` threads that each hold a start for 0.15 s; the most seen at once."""
    now = most = 0
    lock = threading.Lock()

    def agent() -> None:
        nonlocal now, most
        with starts.slot(threading.Event()):
            with lock:
                now += 1
                most = max(most, now)
            time.sleep(0.15)
            with lock:
                now -= 1

    threads = [threading.Thread(target=agent) for _ in range(agents)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in threads)
    return most


def test_at_most_n_agents_start_at_once(tmp_path: Path) -> None:
    assert _most_at_once(Starts(tmp_path / "two", 2), 6) == 2
    assert _most_at_once(Starts(tmp_path / "none", 0), 6) == 6  # control: no limit


def test_the_first_model_call_gives_the_slot_back_to_another_process(tmp_path: Path) -> None:
    starts = Starts(tmp_path, 1)
    called = threading.Event()
    with starts.slot(called) as waited:
        assert waited < 0.5
        other = _other(tmp_path, 0)
        time.sleep(0.5)
        assert other.poll() is None  # control: it waits while this start holds the slot
        called.set()  # the CLI's first model call
        out, _ = other.communicate(timeout=20)
    assert 0.3 < float(out) < 5  # it started once the call came, not at the block's end


def test_a_cli_that_never_calls_the_model_holds_its_slot_only_to_the_limit(
    tmp_path: Path,
) -> None:
    """Red team: an agent whose CLI hangs before its first model call (or never makes one)
    cannot keep the machine's other runs from starting beyond the hold limit."""
    holder = _other(tmp_path, 3.0, limit=0.3)
    assert float(holder.stdout.readline()) < 1  # type: ignore[union-attr]
    began = time.monotonic()
    with Starts(tmp_path, 1).slot(threading.Event()) as waited:
        pass
    assert waited < 2.0
    assert time.monotonic() - began < 2.0
    holder.kill()
    holder.wait(timeout=20)
    # control: without the limit the same hung start holds the slot as long as it lives
    holder = _other(tmp_path, 1.0)
    assert float(holder.stdout.readline()) < 1  # type: ignore[union-attr]
    with Starts(tmp_path, 1).slot(threading.Event()) as waited:
        pass
    assert waited > 0.7
    holder.wait(timeout=20)


def test_a_killed_holder_holds_nothing(tmp_path: Path) -> None:
    holder = _other(tmp_path, 60)
    assert float(holder.stdout.readline()) < 1  # type: ignore[union-attr]
    fd = os.open(tmp_path / "0", os.O_RDWR)
    try:
        with pytest.raises(BlockingIOError):  # control: held while its process lives
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(fd)
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=20)
    with Starts(tmp_path, 1).slot(threading.Event()) as waited:
        assert waited < 0.5


def test_the_cli_does_not_inherit_the_slot(tmp_path: Path) -> None:
    """A CLI that lives on (or leaves a process behind) does not hold the slot: the lock's file
    is not inherited, even by a child that keeps every inheritable descriptor."""
    keep = {"close_fds": False, "stdin": subprocess.DEVNULL}
    with Starts(tmp_path, 1).slot(threading.Event()):
        child = subprocess.Popen(["sleep", "30"], **keep)  # type: ignore[call-overload]
    try:
        with Starts(tmp_path, 1).slot(threading.Event()) as waited:
            assert waited < 0.5
    finally:
        child.kill()
        child.wait()
    # control: an inherited lock would be held by the child after the parent let it go
    fd = os.open(tmp_path / "0", os.O_RDWR)
    os.set_inheritable(fd, True)
    fcntl.flock(fd, fcntl.LOCK_EX)
    child = subprocess.Popen(["sleep", "30"], **keep)  # type: ignore[call-overload]
    os.close(fd)
    try:
        probe = os.open(tmp_path / "0", os.O_RDWR)
        with pytest.raises(BlockingIOError):
            fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.close(probe)
    finally:
        child.kill()
        child.wait()


def test_a_folder_that_cannot_be_made_means_no_limit(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("")
    with Starts(tmp_path / "afile" / "starts", 1).slot(threading.Event()) as waited:
        assert waited == 0
