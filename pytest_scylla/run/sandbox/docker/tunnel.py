"""The harness's end of `relay.py`: one exec in the run's container whose stdin and stdout carry
the connections the agent's bridge makes, each connected here to the gateway's unix socket. The
gateway is then reached without binding a host socket into the container (what a remote engine
needs); what the frames carry is still only HTTP to the gateway, which enforces everything.

The relay runs as the agent's user in the agent's container: whatever comes out of it is the
agent's and is read as hostile. A frame is at most `Bounds.frame` bytes (relay.py never sends
more), at most `Bounds.open` connections are open at once and `Bounds.connections` made in a run;
a frame over a bound, or one that breaks the protocol, drops the relay (every connection closed,
nothing more read), leaves `violation` saying why and calls `on_violation` (the sandbox ends
the run's processes: its calls could only hang now).
The engine's stream is read as it comes, never by the length a header announces, and without
a read timeout (`untimed`: a run may be quiet for minutes).
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_scylla.run.sandbox import SandboxError

RELAY = Path(__file__).parents[1] / "relay.py"  # the script started in the container
MARK = "scylla-gateway-relay"  # in its argv: not one of the agent's leftovers (still killed)
HEADER = struct.Struct(">II")  # connection id, length (0: closed)
DOCKER_FRAME = struct.Struct(">BxxxL")  # the engine's stream header: stream, size
CHUNK = 1 << 16  # what relay.py reads from a connection at once: its largest frame


@dataclass(frozen=True)
class Bounds:
    """What one run's relay may carry: a frame's bytes, connections open at once (relay.py
    listens with a backlog of 64; the CLI keeps a few), connections made in the run."""

    frame: int = CHUNK
    open: int = 64
    connections: int = 4096


BOUNDS = Bounds()


class Violation(Exception):
    """The relay broke its protocol or a bound: it is dropped."""


class Relay:
    """The harness's end of one run's relay, on `raw` (the exec's socket): frames in, each
    connection id connected to `gateway`; what the gateway answers framed back."""

    def __init__(
        self,
        raw: socket.socket,
        gateway: Path,
        bounds: Bounds | None = None,
        on_violation: Callable[[], object] = lambda: None,
    ) -> None:
        self.raw, self.gateway, self.bounds = raw, gateway, bounds or BOUNDS
        self.on_violation = on_violation  # called once the relay is dropped for a violation
        self.lock = threading.Lock()
        self.conns: dict[int, socket.socket] = {}
        self.made: set[int] = set()  # the ids of the connections made in the run
        self.ready = threading.Event()
        self.ended = threading.Event()  # the reader stopped (end of stream or dropped)
        self.violation: str | None = None
        self.stream = _Stream(raw)
        threading.Thread(target=self._inbound, name="scylla-relay", daemon=True).start()

    @classmethod
    def start(
        cls,
        engine: Any,
        container_id: str,
        python: str,
        inside: str,
        gateway: Path,
        user: str,
        on_violation: Callable[[], object] = lambda: None,
    ) -> Relay:
        """relay.py started in the container, listening on `inside`."""
        api = engine.api
        handle = api.exec_create(
            container_id,
            [python, "-c", RELAY.read_text(), inside, MARK],
            stdin=True,
            stdout=True,
            stderr=False,
            user=user,
        )
        raw = untimed(api.exec_start(handle["Id"], socket=True)._sock)
        relay = cls(raw, gateway, on_violation=on_violation)
        if not relay.ready.wait(30):
            relay.close()
            raise SandboxError(
                "the gateway relay did not start in the container (is python3 in its image?)"
            )
        return relay

    def _inbound(self) -> None:
        try:
            while True:
                cid, size = HEADER.unpack(self.stream.read(HEADER.size))
                if size > self.bounds.frame:
                    raise Violation(
                        f"a frame of {size} bytes on connection {cid} "
                        f"(relay.py sends at most {self.bounds.frame})"
                    )
                self._route(cid, self.stream.read(size) if size else b"")
        except Violation as exc:
            self.violation = f"gateway relay dropped: {exc}"
        except (OSError, EOFError):
            pass
        finally:
            self.close()
            if self.violation:
                self.on_violation()
            self.ended.set()

    def _route(self, cid: int, data: bytes) -> None:
        if cid == 0 or not self.ready.is_set():
            if cid != 0 or data or self.ready.is_set():
                raise Violation(f"frame ({cid}, {len(data)} bytes) where only (0, 0) may be")
            self.ready.set()
            return
        conn = self.conns.get(cid)
        if conn is None:
            if not data or cid in self.made:  # a late frame of a connection closed here
                return
            conn = self._connect(cid)
            if conn is None:
                return
        with contextlib.suppress(OSError):
            if data:
                conn.sendall(data)
            else:
                conn.shutdown(socket.SHUT_WR)

    def _connect(self, cid: int) -> socket.socket | None:
        """A new connection `cid` to the gateway, within the bounds."""
        if len(self.made) >= self.bounds.connections:
            raise Violation(f"more than {self.bounds.connections} connections in one run")
        if len(self.conns) >= self.bounds.open:
            raise Violation(f"more than {self.bounds.open} connections open at once")
        self.made.add(cid)
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.connect(str(self.gateway))
        except OSError:
            conn.close()
            self._send(cid, b"")
            return None
        self.conns[cid] = conn
        threading.Thread(target=self._back, args=(cid, conn), daemon=True).start()
        return conn

    def _back(self, cid: int, conn: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := conn.recv(CHUNK):
                self._send(cid, data)
        with contextlib.suppress(OSError):
            self._send(cid, b"")
        self.conns.pop(cid, None)
        with contextlib.suppress(OSError):
            conn.close()

    def _send(self, cid: int, data: bytes) -> None:
        with self.lock:
            self.raw.sendall(HEADER.pack(cid, len(data)) + data)

    def close(self) -> None:
        """Drop the relay: its stream and every connection shut (a blocked send wakes)."""
        for sock in (self.raw, *list(self.conns.values())):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()


def untimed(raw: socket.socket) -> socket.socket:
    """The exec's socket without the SDK's read timeout (the client's 60 s): with it, the
    first quiet spell that long (a long build, a CLI slow to start on a loaded machine) ended
    the relay, and every later call of the run hung to its timeout."""
    raw.settimeout(None)
    return raw


class _Stream:
    """The relay's stdout out of the engine's stream: its headers taken off, read as needed
    (a header's length is never what is allocated)."""

    def __init__(self, raw: socket.socket) -> None:
        self.raw, self.left, self.buffer = raw, 0, bytearray()

    def read(self, size: int) -> bytes:
        while len(self.buffer) < size:
            if self.left == 0:
                _stream, self.left = DOCKER_FRAME.unpack(self._recv(DOCKER_FRAME.size, exact=True))
                continue
            chunk = self._recv(min(self.left, size - len(self.buffer), CHUNK))
            self.left -= len(chunk)
            self.buffer += chunk
        data = bytes(self.buffer[:size])
        del self.buffer[:size]
        return data

    def _recv(self, size: int, exact: bool = False) -> bytes:
        data = b""
        while not data or (exact and len(data) < size):
            chunk = self.raw.recv(size - len(data))
            if not chunk:
                raise EOFError
            data += chunk
        return data
