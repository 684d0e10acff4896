"""The agent CLI's standard output and error as the harness keeps them: its own copy, capped.

The CLI writes into one end of a unix socket pair; a thread of the harness reads the other end
and writes the run folder's file itself. A process the agent starts cannot reopen a socket
through `/proc/<pid>/fd/1` (the kernel refuses with ENXIO, where a pipe or a file would open
for writing), and the file in the run folder is outside every sandbox's reach. What is kept is
bounded: the first `head` bytes and the last `tail` bytes, with a note of how much was dropped
between them; reading never stops, so the CLI never blocks on a full buffer.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections import deque
from pathlib import Path
from types import TracebackType

HEAD = 8 << 20  # bytes kept from the start of each stream
TAIL = 2 << 20  # bytes kept from its end
NOTE = b"\n[pytest-scylla: %d bytes dropped here; the first %d and the last %d are kept]\n"


class Kept:
    """A stream written to `path`, at most `head` + `tail` bytes of it (and a note)."""

    def __init__(self, path: Path, head: int = HEAD, tail: int = TAIL) -> None:
        self.path, self.head, self.tail = path, head, tail
        # unbuffered: the file grows as the CLI writes (a user tails it; a test sees it start)
        self._file = open(path, "wb", buffering=0)  # noqa: SIM115 - closed by close()
        self._written = 0  # bytes written to the head
        self._last: deque[bytes] = deque()
        self._last_size = 0
        self.total = 0  # bytes the stream held
        self._lock = threading.Lock()

    def write(self, data: bytes) -> int:
        size = len(data)  # all of it is taken, kept or counted as dropped
        with self._lock:
            self.total += size
            room = self.head - self._written
            if room > 0:
                self._file.write(data[:room])
                self._written += min(room, len(data))
                data = data[room:]
            if data and self.tail > 0:
                self._last.append(data[-self.tail :])
                self._last_size += len(self._last[-1])
                while self._last_size - len(self._last[0]) >= self.tail:
                    self._last_size -= len(self._last.popleft())
        return size

    @property
    def dropped(self) -> int:
        return max(0, self.total - self._written - min(self.tail, self._last_size))

    def close(self) -> None:
        with self._lock:
            if self._file.closed:
                return
            end = b"".join(self._last)[-self.tail :] if self.tail else b""
            if self.dropped:
                self._file.write(NOTE % (self.dropped, self.head, self.tail))
            self._file.write(end)
            self._file.close()


class Capture:
    """One stream of the CLI: give `self` as its stdout/stderr (`fileno()` for a process the
    harness starts, `write()` for a stream an engine hands over, as docker's), then `close()`."""

    def __init__(self, path: Path, head: int = HEAD, tail: int = TAIL) -> None:
        self.kept = Kept(path, head, tail)
        self._ours, self._theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._ours.shutdown(socket.SHUT_WR)  # nothing flows towards the CLI
        self._theirs.shutdown(socket.SHUT_RD)
        self._reader = threading.Thread(
            target=self._read, daemon=True, name=f"scylla-capture-{path.name}"
        )
        self._reader.start()

    def fileno(self) -> int:
        return self._theirs.fileno()

    def write(self, data: bytes) -> int:
        return self.kept.write(data)

    def _read(self) -> None:
        with contextlib.suppress(OSError):
            while chunk := self._ours.recv(1 << 16):
                self.kept.write(chunk)

    def close(self, grace: float = 5.0) -> None:
        """Stop taking output: what the CLI (and anything it left holding the socket) wrote
        until now is kept; the reader is given `grace` seconds to drain."""
        self._theirs.close()
        self._reader.join(grace)
        with contextlib.suppress(OSError):
            self._ours.shutdown(socket.SHUT_RDWR)
        self._reader.join(1)
        self._ours.close()
        self.kept.close()

    def __enter__(self) -> Capture:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
