"""The workspace by copy (`--scylla-docker-copy`): a run's private folder (workspace, HOME,
prompt) goes into its container as a tar through the engine's API, and comes back the same way,
for engines that cannot bind-mount the host's folders. Neither way is the tar held whole: it is
made as the engine reads it, and extracted as it comes.

What comes back was written by the agent and is extracted as hostile data, member by member
by descriptor (`docker_extract`; never by tarfile's own extraction, whose `data` filter alone
lets a chain of links out on Pythons without the fix of CVE-2025-4517): nothing is written
outside the private folder (names with `..` or absolute names, writes through a link, hard
links to files outside are refused member by member), links are made as links and never
followed, FIFOs and device files are refused and set-uid bits dropped. The archive is
extracted as it streams (no spool file) into a landing folder in the private folder, and cut at
`Bounds.bytes` bytes or `Bounds.members` members: then `OverLimit` (the run's failure, not the
harness's), the landing removed and the host's copy left as it was. A copy-back past
`Bounds.free` bytes waits for one of the host's spool slots (`spool`), so that the copy-backs
of every session and worker on the host hold at most `slots x bytes + workers x free` on its
disk at once.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import tarfile
import tempfile
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_scylla.run.sandbox import SandboxError
from pytest_scylla.run.sandbox.docker import extract as docker_extract
from pytest_scylla.run.sandbox.docker.spool import Spool

CHUNK = 1 << 16  # bytes of a tar going in, at a time
KEEP = ("owner.pid",)  # host-side files of the private folder that stay as they are


@dataclass(frozen=True)
class Bounds:
    """What a run's folder may weigh when it comes back: bytes of its archive, members in it;
    `free`: bytes a copy-back holds before it needs a spool slot."""

    bytes: int = 2 << 30
    members: int = 500_000  # as many entries as the integrity scan walks (hostile.MAX_ENTRIES)
    free: int = 256 << 20


BOUNDS = Bounds()


class OverLimit(SandboxError):
    """What the run left is over a bound: not copied back (the run's failure)."""


def push(container: Any, private: Path, clear: bool = True) -> None:
    """Replace the container's copy of `private` with the host's (the folder itself owned by
    this user, as on the host); `clear=False`: into an empty place (a cache, once). The tar is
    made as the engine reads it (`_tar_stream`): never held whole, however big the folder."""
    if clear:
        code, said = container.exec_run(
            ["sh", "-c", 'test ! -d "$0" || find "$0" -mindepth 1 -delete', str(private)]
        )
        if code != 0:
            raise SandboxError(
                f"could not clear the run's folder in its container: "
                f"{bytes(said).decode(errors='replace')[-300:]}"
            )
    where = private.parent if clear else private
    if not container.put_archive(str(where), _tar_stream(private, clear)):
        raise SandboxError(f"the engine refused the copy of {private}")


def _tar_stream(private: Path, clear: bool) -> Iterator[bytes]:
    """`private` as a tar, in pieces of at most CHUNK bytes, written by a thread into a pipe
    (the pipe's few pages are all that is held); what the thread met raised at the end."""
    source, sink = os.pipe()
    failed: list[BaseException] = []

    def write() -> None:
        top = f"{private.name}/" if clear else ""  # the run's folder is made; a cache's exists
        try:
            with os.fdopen(sink, "wb") as out, tarfile.open(fileobj=out, mode="w|") as tar:
                if clear:
                    tar.add(str(private), arcname=private.name, recursive=False)
                for entry in sorted(private.iterdir()):
                    if entry.name not in KEEP:  # links stay links (no dereference)
                        tar.add(str(entry), arcname=f"{top}{entry.name}")
        except BrokenPipeError:  # the engine stopped reading: its error is the one told
            pass
        except BaseException as exc:
            failed.append(exc)

    writer = threading.Thread(target=write, name="scylla-push", daemon=True)
    writer.start()
    with os.fdopen(source, "rb") as pieces:
        while chunk := pieces.read(CHUNK):
            yield chunk
    writer.join()
    if failed:
        raise failed[0]


def pull(
    container: Any, private: Path, bounds: Bounds | None = None, spool: Spool | None = None
) -> list[str]:
    """Replace the host's `private` with what the container holds; returns the members that
    were refused (as `name: why`). OverLimit, with the host's copy untouched, when what the
    container holds is over `bounds` (None: `BOUNDS`)."""
    bounds = bounds or BOUNDS
    stream, _stat = container.get_archive(str(private) + "/.")
    landing = Path(tempfile.mkdtemp(prefix=".pull-", dir=private))
    try:
        with contextlib.ExitStack() as held:
            source = _Capped(stream, bounds, spool or Spool.for_host(), held)
            refused = _extract(source, landing, bounds.members)
        for entry in list(private.iterdir()):
            if entry != landing and entry.name not in KEEP:
                _remove(entry)
        for entry in list(landing.iterdir()):
            if entry.name not in KEEP:
                os.rename(entry, private / entry.name)
    finally:
        shutil.rmtree(landing, ignore_errors=True)
        with contextlib.suppress(Exception):
            stream.close()  # the rest of an archive cut short is not read
    return refused


class _Capped(io.RawIOBase):
    """The engine's archive stream as a file, cut at `bounds.bytes`; past `bounds.free` bytes
    it holds one of `spool`'s slots (on `held`) before it reads on."""

    def __init__(
        self, chunks: Iterable[bytes], bounds: Bounds, spool: Spool, held: contextlib.ExitStack
    ) -> None:
        self.chunks: Iterator[bytes] = iter(chunks)
        self.bounds, self.spool, self.held = bounds, spool, held
        self.size, self.slot, self.rest = 0, False, memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self.rest:
            chunk = next(self.chunks, None)
            if chunk is None:
                return 0
            self._count(len(chunk))
            self.rest = memoryview(chunk)
        taken, self.rest = self.rest[: len(buffer)], self.rest[len(buffer) :]
        buffer[: len(taken)] = taken
        return len(taken)

    def _count(self, size: int) -> None:
        self.size += size
        if self.size > self.bounds.bytes:
            raise OverLimit(
                f"the run's folder in its container is over {_amount(self.bounds.bytes)}: "
                "not copied back"
            )
        if self.size > self.bounds.free and not self.slot:
            self.held.enter_context(self.spool.slot())
            self.slot = True


def _amount(size: int) -> str:
    return f"{size >> 30} GiB" if size >= 1 << 30 else f"{size >> 20} MiB"


def _extract(source: Any, landing: Path, members: int = Bounds.members) -> list[str]:
    """The archive `source` extracted into `landing` as hostile data (`docker_extract`); the
    members refused, as `name: why`. OverLimit past `members` members."""
    refused: list[str] = []
    placed = docker_extract.Landing(landing)
    with tarfile.open(fileobj=source, mode="r|") as tar:
        for count, member in enumerate(tar, 1):
            if count > members:
                raise OverLimit(
                    f"the run's folder in its container holds over {members} entries: "
                    "not copied back"
                )
            if why := placed.place(tar, member):
                refused.append(f"{docker_extract.normal(member.name)}: {why}")
    return refused


def _remove(entry: Path) -> None:
    if entry.is_dir() and not entry.is_symlink():
        shutil.rmtree(entry)
    else:
        entry.unlink()
