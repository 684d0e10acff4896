"""The harness's end of `relay.py`: one exec in the run's container whose stdin and stdout carry
the connections the agent's bridge makes, each connected here to the gateway's unix socket. The
gateway is then reached without binding a host socket into the container (what a remote engine
needs); what the frames carry is still only HTTP to the gateway, which enforces everything.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from pathlib import Path
from typing import Any

from pytest_scylla.run.sandbox import SandboxError

RELAY = Path(__file__).with_name("relay.py")
MARK = "scylla-gateway-relay"  # in its argv: not one of the agent's leftovers (still killed)
HEADER = struct.Struct(">II")  # connection id, length (0: closed)
DOCKER_FRAME = struct.Struct(">BxxxL")  # the engine's stream header: stream, size


class Relay:
    def __init__(
        self, engine: Any, container_id: str, python: str, inside: str, gateway: Path, user: str
    ) -> None:
        self.gateway = gateway
        api = engine.api
        handle = api.exec_create(
            container_id,
            [python, "-c", RELAY.read_text(), inside, MARK],
            stdin=True,
            stdout=True,
            stderr=False,
            user=user,
        )
        self.raw: socket.socket = api.exec_start(handle["Id"], socket=True)._sock
        self.lock = threading.Lock()
        self.conns: dict[int, socket.socket] = {}
        self.ready = threading.Event()
        self.buffer = b""
        threading.Thread(target=self._inbound, daemon=True).start()
        if not self.ready.wait(30):
            self.close()
            raise SandboxError(
                "the gateway relay did not start in the container (is python3 in its image?)"
            )

    def _read(self, size: int) -> bytes:
        """`size` bytes of the relay's stdout, the engine's stream headers taken off."""
        while len(self.buffer) < size:
            head = _exactly(self.raw, DOCKER_FRAME.size)
            _stream, length = DOCKER_FRAME.unpack(head)
            self.buffer += _exactly(self.raw, length)
        data, self.buffer = self.buffer[:size], self.buffer[size:]
        return data

    def _inbound(self) -> None:
        with contextlib.suppress(OSError, EOFError):
            while True:
                cid, size = HEADER.unpack(self._read(HEADER.size))
                data = self._read(size) if size else b""
                if cid == 0:
                    self.ready.set()
                    continue
                conn = self.conns.get(cid)
                if conn is None and data:
                    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    try:
                        conn.connect(str(self.gateway))
                    except OSError:
                        self._send(cid, b"")
                        continue
                    self.conns[cid] = conn
                    threading.Thread(target=self._back, args=(cid, conn), daemon=True).start()
                if conn is None:
                    continue
                with contextlib.suppress(OSError):
                    if data:
                        conn.sendall(data)
                    else:
                        conn.shutdown(socket.SHUT_WR)
        for conn in list(self.conns.values()):
            with contextlib.suppress(OSError):
                conn.close()

    def _back(self, cid: int, conn: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := conn.recv(65536):
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
        with contextlib.suppress(OSError):
            self.raw.close()


def _exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data
