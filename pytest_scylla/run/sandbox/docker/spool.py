"""The host's room for copy-backs (`docker_copy.pull`): a copy-back past its free bytes holds
one of `SLOTS` slots while it lands, so that however many sessions and xdist workers of this
user copy back at once, at most `SLOTS` of them hold more than those bytes on this host's disk.

A slot is a file in a folder of the user's own under the temp folder (made 0700; one that is a
link, or another user's, or open to others, is refused), held with `flock`: a killed process
holds none. A copy-back waits for a slot at most `WAIT` seconds (the others land meanwhile);
past that, or when the folder cannot be used, SandboxError says what to do.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from pytest_scylla.run.sandbox.base import SandboxError

SLOTS = 2  # copy-backs over their free bytes at once on this host
WAIT = 900.0  # most seconds a copy-back waits for a slot
POLL = 0.05  # seconds between tries while every slot is held
FLAGS = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC


class Spool:
    """`slots` slots in `folder` (0: no limit)."""

    def __init__(self, folder: Path, slots: int = SLOTS, wait: float = WAIT) -> None:
        self.folder, self.slots, self.wait = folder, slots, wait

    @classmethod
    def for_host(cls) -> Spool:
        """This user's slots on this host."""
        return cls(Path(tempfile.gettempdir()) / f"scylla-spool-{os.getuid()}")

    @contextlib.contextmanager
    def slot(self) -> Iterator[None]:
        """Hold a slot while the block runs (waiting for one while all are held)."""
        if self.slots <= 0:
            yield
            return
        fd = self._take()
        try:
            yield
        finally:
            os.close(fd)  # the lock goes with the file

    def _take(self) -> int:
        folder = self._open_folder()
        deadline = time.monotonic() + self.wait
        try:
            while True:
                for index in range(self.slots):
                    fd = self._try(folder, index)
                    if fd is not None:
                        return fd
                if time.monotonic() >= deadline:
                    raise SandboxError(
                        f"waited {self.wait:g} s for a copy-back slot in {self.folder} (each held "
                        "by a copy-back over its free bytes; a stopped process holding one?)"
                    )
                time.sleep(POLL)
        finally:
            os.close(folder)

    def _try(self, folder: int, index: int) -> int | None:
        try:
            fd = os.open(str(index), FLAGS, 0o600, dir_fd=folder)
        except OSError as exc:
            raise self._unusable(exc) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        except OSError as exc:  # a file system without flock
            os.close(fd)
            raise self._unusable(exc) from None
        return fd

    def _open_folder(self) -> int:
        """The slots' folder, made if need be, opened without following a link there; refused
        unless it is this user's and closed to others."""
        try:
            with contextlib.suppress(FileExistsError):
                self.folder.mkdir(mode=0o700, parents=True)
            fd = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as exc:
            raise self._unusable(exc) from None
        found = os.fstat(fd)
        if found.st_uid != os.getuid() or found.st_mode & 0o077:
            os.close(fd)
            raise SandboxError(
                f"{self.folder}: the copy-back slots' folder is not this user's own with mode "
                "0700: remove it (it is made again)"
            )
        return fd

    def _unusable(self, exc: OSError) -> SandboxError:
        return SandboxError(
            f"{self.folder} cannot hold the copy-back slots ({exc.strerror or exc}; a link "
            "there is not followed): remove it, or set TMPDIR to a folder of your own"
        )
