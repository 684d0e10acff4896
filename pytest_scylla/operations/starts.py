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

A process that cannot give its slot back (stopped with SIGSTOP, frozen by a debugger) would
hold it forever, so nobody waits past `WAIT_LIMIT`: a slot held longer than that since it was
taken (its file's time, set by its taker) is not waited for, and a waiter that has waited that
long starts without a slot; `Wait.note` says so, for the run's record. The folder and the slot
files are opened without following links, and a slot file that is not a plain file of this
user's with one name is not used: a link planted there (to a file of the host's) is never
opened, locked or touched.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import socket
import stat
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

HOLD_LIMIT = 20.0  # most seconds one start holds its slot without calling the model
WAIT_LIMIT = HOLD_LIMIT + 10.0  # most seconds a slot is waited for (its holder is stuck)
POLL = 0.02  # seconds between tries while every slot is held
STEADY = 1.0  # seconds a held slot's time must stay the same before it is called stuck
FOLDER = "starts"
NOFOLLOW = os.O_NOFOLLOW  # a test turns it off for its positive control
FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


def machine_cores() -> int:
    """The cores this process may run on (its CPU affinity), the default number of slots."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


@dataclass(frozen=True)
class Wait:
    """How a start got going: after `seconds` waiting, with a slot, or without one and `note`
    saying why (every slot held too long, a folder that cannot be used)."""

    seconds: float
    note: str = ""


class NoSlot(Exception):
    """No slot can be had: start without one; the message says why."""


class Starts:
    """The machine's start slots: `count` of them (0: no limit) in `folder`."""

    def __init__(
        self,
        folder: Path,
        count: int,
        hold_limit: float = HOLD_LIMIT,
        wait_limit: float = WAIT_LIMIT,
    ) -> None:
        self.folder, self.count = folder, count
        self.hold_limit, self.wait_limit = hold_limit, wait_limit

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
    def slot(self, started: threading.Event) -> Iterator[Wait]:
        """Wait for a slot, and hold it while the block starts the agent: until `started` is
        set (its first model call), the block ends, or `hold_limit` seconds pass. Yields how
        long it waited, and a note when it goes on without a slot. Without slots (0) it waits
        for nothing."""
        began = time.monotonic()
        fd, note = None, ""
        if self.count > 0:
            try:
                fd = self._take(began)
            except NoSlot as exc:
                note = f"started without a start slot: {exc}"
        waited = Wait(round(time.monotonic() - began, 3), note)
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

    def _take(self, began: float) -> int:
        """A held slot's file descriptor, waiting while every one is held by a live taker;
        NoSlot when the folder cannot be used, or once every slot is stuck or the wait has
        lasted `wait_limit` seconds."""
        folder = self._open_folder()
        try:
            return _Waiter(self, folder).take(began)
        finally:
            os.close(folder)

    def _open_folder(self) -> int:
        """The slots' folder and the one holding it (`starts/<host>`), made if need be, each
        opened without following a link there (the cache folder itself may be one)."""
        top = self.folder.parent.parent
        try:
            top.mkdir(parents=True, exist_ok=True)
            fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            for name in (self.folder.parent.name, self.folder.name):
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o700, dir_fd=fd)
                try:
                    inner = os.open(name, FOLDER_FLAGS | NOFOLLOW, dir_fd=fd)
                finally:
                    os.close(fd)
                fd = inner
            return fd
        except OSError as exc:
            raise NoSlot(
                f"{self.folder} cannot be used as the start slots' folder "
                f"({exc.strerror or exc}; a link there is not followed)"
            ) from None


class _Waiter:
    """One wait for a slot: each held slot's taking time as this waiter first saw it, so
    that a slot is called stuck only when its time has stayed put for `STEADY` seconds."""

    def __init__(self, starts: Starts, folder: int) -> None:
        self.starts, self.folder = starts, folder
        self.seen: dict[int, tuple[float, float]] = {}  # slot -> (its time, seen since)

    def take(self, began: float) -> int:
        order = list(range(self.starts.count))
        limit = self.starts.wait_limit
        while True:
            random.shuffle(order)  # no slot is everyone's first try
            held: dict[int, float] = {}  # slot -> its taking time, this round
            for index in order:
                fd = self._try(index, held)
                if fd is not None:
                    return fd
            if all([self._stuck(index, taken) for index, taken in held.items()]):
                raise NoSlot(
                    f"every slot in {self.starts.folder} has been held over {limit:g} s "
                    "(a stopped process holding it?)"
                )
            if time.monotonic() - began >= limit:
                raise NoSlot(f"waited {limit:g} s for one of {self.starts.folder}")
            time.sleep(POLL)

    def _try(self, index: int, held: dict[int, float]) -> int | None:
        """Slot `index` taken (its descriptor), else None with its taking time in `held`."""
        path = self.starts.folder / str(index)
        flags = os.O_RDWR | os.O_CREAT | NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(path.name, flags, 0o600, dir_fd=self.folder)
        except OSError as exc:
            raise NoSlot(f"{path}: {exc.strerror or exc} (a link there is not followed)") from None
        try:
            taken = _plain(fd, path).st_mtime
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            held[index] = taken
            return None
        except OSError as exc:  # a file system without flock
            os.close(fd)
            raise NoSlot(f"{path}: {exc.strerror or exc}") from None
        except NoSlot:
            os.close(fd)
            raise
        os.utime(fd)  # taken now: the time a waiter reads to tell a stuck holder
        return fd

    def _stuck(self, index: int, taken: float) -> bool:
        """Whether slot `index`, taken at `taken` (its file's time), has been held over the
        wait limit, that time unchanged (no new taker) for `STEADY` seconds of this wait."""
        now = time.monotonic()
        seen = self.seen.get(index)
        if seen is None or seen[0] != taken:
            self.seen[index] = seen = (taken, now)
        steady = now - seen[1] >= min(STEADY, self.starts.wait_limit / 2)
        return steady and time.time() - taken > self.starts.wait_limit


def _plain(fd: int, path: Path) -> os.stat_result:
    """The slot file's status, if it is a plain file of this user's with no other name (never
    a file of the host's linked there); else NoSlot."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1 or info.st_uid != os.geteuid():
        raise NoSlot(
            f"{path} is not a plain file of this user's with one name (a link planted "
            "there?); it is not used: remove it"
        )
    return info
