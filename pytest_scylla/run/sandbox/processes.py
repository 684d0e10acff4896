"""The processes of a command a sandbox runs: started in a group of their own, waited for up to
the timeout, and whatever they left behind (the group, processes that detached) killed and
reaped, with this process as their subreaper."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO


@dataclass(frozen=True)
class Finished:
    exit_code: int | None  # None: killed at the timeout
    timed_out: bool
    seconds: float
    leftovers: int = 0  # processes still running after the command ended (killed)
    refused: tuple[str, ...] = ()  # docker copy: what the run left that was not copied back
    # docker copy: the bounds of the harness's channels the run broke (its relay dropped, its
    # folder over the copy-back's bounds): the run's failure, each an integrity finding
    violations: tuple[str, ...] = ()


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _processes() -> dict[int, tuple[int, int]]:
    """{pid: (parent pid, process group)} of every process this user can see."""
    found = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as handle:
                    fields = handle.read().rpartition(b")")[2].split()
            except OSError:
                continue
            found[int(entry.name)] = (int(fields[1]), int(fields[2]))
    return found


def subreaper(on: bool) -> None:
    """Make this process the reaper of its orphaned descendants (Linux) while a command runs,
    so that a process the agent detached is reparented here, where it can be found and stopped;
    switched off again after, so that no other orphan is left here unreaped."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(36, int(on), 0, 0, 0)  # PR_SET_CHILD_SUBREAPER


def hide_environment() -> None:
    """Make this process non-dumpable (Linux): its /proc entries, the credential in its initial
    environment among them, become unreadable to the agent under `local` (unless the agent runs
    as root, which no setting here can stop)."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE


def children(pid: int) -> set[int] | None:
    """The children of `pid`, from the kernel's own lists (/proc/PID/task/*/children): no scan
    of every process on the machine, whose cost grows with every other worker's runs. None
    where the kernel keeps no such lists (then `_processes` is scanned)."""
    found: set[int] = set()
    try:
        tasks = os.scandir(f"/proc/{pid}/task")
    except OSError:
        return None if pid == os.getpid() else found  # ours always exists; another has ended
    with tasks:
        for task in tasks:
            try:
                with open(f"{task.path}/children", "rb") as handle:
                    found.update(int(p) for p in handle.read().split())
            except FileNotFoundError:
                if pid == os.getpid():
                    return None  # no CONFIG_PROC_CHILDREN
            except OSError:
                continue  # the task ended meanwhile
    return found


def own_children() -> set[int]:
    """This process's children."""
    me = os.getpid()
    found = children(me)
    if found is None:
        return {pid for pid, (ppid, _) in _processes().items() if ppid == me}
    return found


def _left(group: int, before: set[int]) -> set[int]:
    """What a command left running: this process's children since `before` (the command's
    orphans are reparented here, its subreaper) and everything under them; where the kernel
    keeps no child lists, every process of its group or reparented here since `before`."""
    me = os.getpid()
    mine = children(me)
    if mine is None:
        return {
            pid
            for pid, (ppid, pgrp) in _processes().items()
            if pid != me and (pgrp == group or (ppid == me and pid not in before))
        }
    found, todo = set[int](), list(mine - before)
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo.extend(children(pid) or ())
    return found


def sweep(group: int, before: set[int]) -> int:
    """Kill what is left of the process group `group` and every process reparented to this one
    since `before` (this process's children then), and reap them; returns how many there were."""
    killed = set[int]()
    for _ in range(100):  # a killed parent's children are reparented a moment later
        new = _left(group, before) - killed
        if not new:
            break
        for pid in new:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        killed |= new
        time.sleep(0.01)
    waiting, deadline = set(killed), time.monotonic() + 2
    while waiting and time.monotonic() < deadline:  # no zombie of ours is left behind
        for pid in list(waiting):
            try:
                if os.waitpid(pid, os.WNOHANG)[0]:
                    waiting.discard(pid)
            except ChildProcessError:  # not (or no longer) ours: done once it is gone
                if not os.path.exists(f"/proc/{pid}"):
                    waiting.discard(pid)
        if waiting:
            time.sleep(0.02)
    return len(killed)


def start(
    argv: Sequence[str],
    cwd: Path,
    env: dict[str, str],
    stdin: str | None,
    stdout: IO[bytes] | int,
    stderr: IO[bytes] | int,
) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=env,
        start_new_session=True,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=stdout,
        stderr=stderr,
    )
    if stdin is not None:
        assert proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):  # it may exit before it reads its input
            proc.stdin.write(stdin.encode())
        with contextlib.suppress(BrokenPipeError):  # the flush in close() may find it gone too
            proc.stdin.close()
    return proc


def exited(proc: subprocess.Popen[bytes], seconds: float) -> bool:
    """Whether `proc` ends within `seconds`: woken by its exit (a pidfd; poll, as select fails
    past fd 1023), not by the standard library's timed wait (it looks every 50 ms)."""
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # no pidfd (an old kernel): the polling wait
        with contextlib.suppress(subprocess.TimeoutExpired):
            return proc.wait(timeout=seconds) is not None
        return False
    poller = select.poll()
    try:
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(max(0.0, seconds) * 1000))
    finally:
        os.close(fd)


def wait(proc: subprocess.Popen[bytes], timeout: float, began: float) -> Finished:
    try:
        timed_out = not exited(proc, timeout - (time.monotonic() - began))
        if timed_out:
            _kill_group(proc)
        code: int | None = None if timed_out else proc.wait()
        proc.wait()
    except BaseException:  # interrupted (Ctrl-C): the agent runs in its own session, stop it too
        _kill_group(proc)
        proc.wait()
        raise
    return Finished(exit_code=code, timed_out=timed_out, seconds=round(time.monotonic() - began, 3))
