"""Runs inside a container whose run folder travels by copy (a remote engine): listens on the
unix socket the bridge connects to and carries every connection over its stdin and stdout, as
frames, to the harness, which connects each to the gateway. No socket of the host is bound
into the container.

Standard library only; started as `python3 -c <this file> SOCKET`. A frame is a connection id
and a length (two big-endian 32-bit numbers), then that many bytes; length 0 closes the
connection. The first frame out, (0, 0), says the socket is listening.
"""

import contextlib
import os
import socket
import struct
import sys
import threading

HEADER = struct.Struct(">II")


def main(path: str) -> None:
    out, lock = sys.stdout.buffer, threading.Lock()
    conns: dict[int, socket.socket] = {}

    def send(cid: int, data: bytes) -> None:
        with lock:
            out.write(HEADER.pack(cid, len(data)) + data)
            out.flush()

    def pump(cid: int, conn: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := conn.recv(65536):
                send(cid, data)
        with contextlib.suppress(OSError):
            send(cid, b"")

    def inbound() -> None:
        source = sys.stdin.buffer
        while len(head := source.read(HEADER.size)) == HEADER.size:
            cid, size = HEADER.unpack(head)
            data = source.read(size) if size else b""
            conn = conns.get(cid)
            if conn is None:
                continue
            with contextlib.suppress(OSError):
                if data:
                    conn.sendall(data)
                else:
                    conns.pop(cid, None)
                    conn.shutdown(socket.SHUT_RDWR)
                    conn.close()
        os._exit(0)  # the harness went away: so does the relay

    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(64)
    threading.Thread(target=inbound, daemon=True).start()
    send(0, b"")
    cid = 0
    while True:
        conn, _ = server.accept()
        cid += 1
        conns[cid] = conn
        threading.Thread(target=pump, args=(cid, conn), daemon=True).start()


if __name__ == "__main__":
    main(sys.argv[1])
