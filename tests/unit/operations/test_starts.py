"""The machine's start slots (operations/starts.py): at most N agents starting at once, across
threads and processes; a slot comes back at the first model call, at the block's end, after the
hold limit (red team: a CLI that never calls the model), or with its process (killed); the CLI
never inherits the lock. Each has its positive control."""

from __future__ import annotations

import fcntl
import math
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pytest_scylla.operations import starts
from pytest_scylla.operations.starts import Starts, Wait

# another process takes a slot in `folder` (argv[1]), holds it `argv[2]` seconds with its first
# model call never coming, and says how long it waited (with argv[4], first that it is about to
# wait: its start-up is not counted as waiting)
OTHER = """
import sys, threading, time
from pathlib import Path
from pytest_scylla.operations import starts
from pytest_scylla.operations.starts import Starts, Wait
if len(sys.argv) > 4:
    print("waiting", flush=True)
with Starts(Path(sys.argv[1]), 1, float(sys.argv[3])).slot(threading.Event()) as waited:
    print(waited.seconds, flush=True)
    time.sleep(float(sys.argv[2]))
"""


def _other(
    folder: Path, hold: float, limit: float = 60.0, announce: bool = False
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", OTHER, str(folder), str(hold), str(limit), *["announce"] * announce],
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
        assert waited.seconds < 0.5
        other = _other(tmp_path, 0, announce=True)
        assert other.stdout is not None
        assert other.stdout.readline() == "waiting\n"  # its start-up is over (on a busy machine
        time.sleep(0.5)  # it took 0.3 s, which the bound below once counted as waiting)
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
    assert waited.seconds < 2.0
    assert time.monotonic() - began < 2.0
    holder.kill()
    holder.wait(timeout=20)
    # control: without the limit the same hung start holds the slot as long as it lives
    holder = _other(tmp_path, 1.0)
    assert float(holder.stdout.readline()) < 1  # type: ignore[union-attr]
    with Starts(tmp_path, 1).slot(threading.Event()) as waited:
        pass
    assert waited.seconds > 0.7
    holder.wait(timeout=20)


def test_a_stopped_holder_is_waited_for_only_to_the_wait_limit(tmp_path: Path) -> None:
    """Red team: a process stopped (SIGSTOP) while it holds a slot never gives it back; the
    machine's other starts wait for it no longer than the wait limit, then go without a slot,
    saying so; once its slot is known stuck, the next start hardly waits."""
    holder = _other(tmp_path, 60)
    try:
        assert float(holder.stdout.readline()) < 1  # type: ignore[union-attr]
        holder.send_signal(signal.SIGSTOP)
        with Starts(tmp_path, 1, wait_limit=1.0).slot(threading.Event()) as first:
            pass
        assert 0.4 < first.seconds < 3.0
        assert "started without a start slot" in first.note
        with Starts(tmp_path, 1, wait_limit=1.0).slot(threading.Event()) as later:
            pass
        assert later.seconds < 0.95  # the slot is known stuck: not the whole wait limit
        assert "has been held over 1 s (a stopped process" in later.note
        # control: with no deadline, the waiter waits as long as the stopped holder lives
        got: list[Wait] = []

        def wait() -> None:
            with Starts(tmp_path, 1, wait_limit=math.inf).slot(threading.Event()) as wait:
                got.append(wait)

        waiter = threading.Thread(target=wait)
        waiter.start()
        waiter.join(timeout=1.5)
        assert waiter.is_alive()
        assert not got
    finally:
        holder.kill()  # a stopped process is killed all the same
        holder.wait(timeout=20)
    waiter.join(timeout=20)
    assert got[0].seconds > 1.4
    assert got[0].note == ""


def _touched(host: Path) -> tuple[bool, float]:
    """Whether `host` is locked now (a slot taken on it), and its modification time."""
    probe = os.open(host, os.O_RDONLY)
    try:
        fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        locked = False
    except BlockingIOError:
        locked = True
    finally:
        os.close(probe)
    return locked, host.stat().st_mtime


def _host_file(tmp_path: Path) -> Path:
    host = tmp_path / "host.txt"
    host.write_text("the host's own file")
    os.utime(host, (1_000_000, 1_000_000))
    return host


def test_a_slot_file_linked_to_a_host_file_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Red team: a symbolic link planted as a slot file is neither followed, locked nor
    touched: the start goes without a slot, naming the file."""
    host, folder = _host_file(tmp_path), tmp_path / "slots"
    folder.mkdir()
    (folder / "0").symlink_to(host)
    with Starts(folder, 1).slot(threading.Event()) as wait:
        assert _touched(host) == (False, 1_000_000)
    assert f"{folder / '0'}:" in wait.note
    assert "not followed" in wait.note
    assert host.read_text() == "the host's own file"
    # control: a slot opened following links takes its lock and sets its time on the host's file
    monkeypatch.setattr(starts, "NOFOLLOW", 0)
    with Starts(folder, 1).slot(threading.Event()) as wait:
        locked, mtime = _touched(host)
    assert locked
    assert mtime > 1_000_000
    assert wait.note == ""


def test_a_slot_file_hard_linked_to_a_host_file_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Red team: a second name of a host's file planted as a slot file is not used (a link
    needs no following): the slot file must be this user's plain file with one name."""
    host, folder = _host_file(tmp_path), tmp_path / "slots"
    folder.mkdir()
    os.link(host, folder / "0")
    with Starts(folder, 1).slot(threading.Event()) as wait:
        assert _touched(host) == (False, 1_000_000)
    assert "not a plain file of this user's with one name" in wait.note
    # control: without the identity check the slot is taken on the host's file
    monkeypatch.setattr(starts, "_plain", lambda fd, path: os.fstat(fd))
    with Starts(folder, 1).slot(threading.Event()) as wait:
        locked, mtime = _touched(host)
    assert locked
    assert mtime > 1_000_000
    assert wait.note == ""


@pytest.mark.parametrize("linked", ["starts/host", "starts"])
def test_a_slots_folder_linked_elsewhere_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, linked: str
) -> None:
    """Red team: the slots' folder (or the `starts` folder holding it) replaced by a link to
    a host folder: nothing is made there."""
    elsewhere = tmp_path / "host-folder"
    elsewhere.mkdir()
    (tmp_path / linked).parent.mkdir(exist_ok=True)
    (tmp_path / linked).symlink_to(elsewhere)
    with Starts(tmp_path / "starts" / "host", 1).slot(threading.Event()) as wait:
        pass
    assert "cannot be used" in wait.note
    assert list(elsewhere.iterdir()) == []
    monkeypatch.setattr(starts, "NOFOLLOW", 0)  # control: followed, the slot is made there
    with Starts(tmp_path / "starts" / "host", 1).slot(threading.Event()) as wait:
        pass
    assert wait.note == ""
    assert "0" in {p.name for p in elsewhere.rglob("*")}


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
        assert waited.seconds < 0.5


def test_the_cli_does_not_inherit_the_slot(tmp_path: Path) -> None:
    """A CLI that lives on (or leaves a process behind) does not hold the slot: the lock's file
    is not inherited, even by a child that keeps every inheritable descriptor."""
    keep = {"close_fds": False, "stdin": subprocess.DEVNULL}
    with Starts(tmp_path, 1).slot(threading.Event()):
        child = subprocess.Popen(["sleep", "30"], **keep)  # type: ignore[call-overload]
    try:
        with Starts(tmp_path, 1).slot(threading.Event()) as waited:
            assert waited.seconds < 0.5
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
        assert waited.seconds == 0
    assert "cannot be used" in waited.note
