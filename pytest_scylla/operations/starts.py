"""At most N agents starting at once on this machine (`--scylla-starts`).

An agent CLI's start, from its process to its first model call, is most of the CPU it spends
on a short task (Claude Code 2.1.197: ~0.85 of ~1.1 CPU-s on test-001). xdist workers begin
their runs together, so without a limit their CLIs share the cores for seconds, then all wait
on the model together while the cores idle, and stay in step run after run. With a limit the
first ones reach the model while the next ones start (bench/scaling.py, -n 16, 5 s a call,
64 runs: 101-104 s -> 87-91 s a session).

A start takes one of N slots: files in `<cache>/starts/<host>/` held with `flock`, so every
process of every session on the host shares them, and a killed process holds none (the lock
goes with its file). A slot is given back at the run's first model call, when the CLI ends,
or after `HOLD_LIMIT` seconds, whichever comes first: a CLI that never calls the model (a
hostile one, a hung one) holds it no longer than that. The lock's file is never inherited by
the CLI (it is opened close-on-exec).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

HOLD_LIMIT = 20.0  # most seconds one start holds its slot without calling the model
POLL = 0.02  # seconds between tries while every slot is held
FOLDER = "starts"


def machine_cores() -> int:
    """The cores this process may run on (its CPU affinity), the default number of slots."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


class Starts:
    """The machine's start slots: `count` of them (0: no limit) in `folder`."""

    def __init__(self, folder: Path, count: int, hold_limit: float = HOLD_LIMIT) -> None:
        self.folder, self.count, self.hold_limit = folder, count, hold_limit

    @classmethod
    def unlimited(cls) -> Starts:
        """No limit: every start goes at once."""
        return cls(Path(), 0)

    @classmethod
    def for_cache(cls, cache_dir: Path, count: int | None) -> Starts:
        """The slots of this host in a cache folder (a folder shared by several hosts keeps
        each host's apart); `count` None: one per core."""
        count = machine_cores() if count is None else count
        return cls(cache_dir / FOLDER / socket.gethostname(), count)

    @contextlib.contextmanager
    def slot(self, started: threading.Event) -> Iterator[float]:
        """Wait for a slot, and hold it while the block starts the agent: until `started` is
        set (its first model call), the block ends, or `hold_limit` seconds pass. Yields the
        seconds waited. Without slots (0, or a folder that cannot be written) it waits for
        nothing."""
        began = time.monotonic()
        fd = self._take() if self.count > 0 else None
        waited = round(time.monotonic() - began, 3)
        if fd is None:
            yield waited
            return
        done = threading.Event()
        holder = threading.Thread(
            target=self._hold, args=(fd, started, done), name="scylla-start-slot", daemon=True
        )
        holder.start()
        try:
            yield waited
        finally:
            done.set()
            holder.join()

    def _hold(self, fd: int, started: threading.Event, done: threading.Event) -> None:
        deadline = time.monotonic() + self.hold_limit
        try:
            while not started.is_set() and not done.is_set() and time.monotonic() < deadline:
                started.wait(min(POLL, max(0.0, deadline - time.monotonic())))
        finally:
            os.close(fd)  # the lock goes with the file

    def _take(self) -> int | None:
        """A held slot's file descriptor, waiting while every one is held; None when the
        folder cannot be used (the runs go on without a limit)."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError:
            return None
        order = list(range(self.count))
        while True:
            random.shuffle(order)  # no slot is everyone's first try
            for index in order:
                try:
                    fd = os.open(self.folder / str(index), os.O_RDWR | os.O_CREAT, 0o600)
                except OSError:
                    return None
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    continue
                except OSError:  # a file system without flock
                    os.close(fd)
                    return None
                return fd
            time.sleep(POLL)
