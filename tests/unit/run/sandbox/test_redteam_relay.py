"""Red team (issue 44): the docker copy mode's gateway relay as a weapon. relay.py runs as the
agent's user in the agent's container, so the agent can write frames of its own into the
relay's stdout (`/proc/<relay>/fd/1`): thousands of connection ids (a thread and a gateway
connection each on the host), a frame announcing 192 MiB (buffered whole, every other
connection stalled until the run's timeout). The harness's reader bounds frames and
connections and drops the relay on a violation; each attack's positive control is the same
frames with the bounds lifted.

Here the harness's reader fed hostile frames directly (a socket pair stands for the exec's
stream, a unix socket in the test's folder for the gateway), and one relay in a real container;
the sessions are in `tests/e2e/test_redteam_copy.py`."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pytest_scylla.run.sandbox.docker.tunnel import DOCKER_FRAME, HEADER, Bounds, Relay

from ....conftest import needs_docker

LIFTED = Bounds(frame=1 << 32, open=1 << 30, connections=1 << 30)  # the positive control


class Gateway:
    """A unix socket that accepts every connection and holds it (no thread per connection):
    what it took, and what it was sent."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(path))
        self.server.listen(4096)
        self.taken: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                self.taken.append(self.server.accept()[0])

    def close(self) -> None:
        for sock in (self.server, *self.taken):
            sock.close()


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[Gateway]:
    found = Gateway(tmp_path / "gateway.sock")
    yield found
    found.close()


@contextlib.contextmanager
def relay_on(
    gateway: Gateway, bounds: Bounds | None = None
) -> Iterator[tuple[Relay, socket.socket]]:
    """A relay whose exec stream is one end of a socket pair; the other end, the container's
    side, already said (0, 0)."""
    ours, theirs = socket.socketpair()
    relay = Relay(ours, gateway.path, bounds)
    try:
        send(theirs, frame(0, b""))
        assert relay.ready.wait(5)
        yield relay, theirs
    finally:
        relay.close()
        theirs.close()


def frame(cid: int, data: bytes, announced: int | None = None) -> bytes:
    return HEADER.pack(cid, len(data) if announced is None else announced) + data


def send(theirs: socket.socket, payload: bytes) -> None:
    """`payload` as the engine carries the relay's stdout (its stream headers on); a relay
    dropped meanwhile takes no more."""
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        theirs.sendall(DOCKER_FRAME.pack(1, len(payload)) + payload)


def wait_for(condition: Callable[[], object], seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return False


def taken_or_ended(gateway: Gateway, relay: Relay, count: int) -> Callable[[], bool]:
    return lambda: len(gateway.taken) >= count or relay.ended.is_set()


def dropped(relay: Relay, theirs: socket.socket) -> bool:
    """The relay ended, and the container's side reads the end of its stdin."""
    if not relay.ended.wait(5):
        return False
    theirs.settimeout(5)
    with contextlib.suppress(ConnectionResetError):
        while theirs.recv(65536):
            pass
    return True


def test_the_relay_carries_a_connection_both_ways(gateway: Gateway) -> None:
    """The ground every attack stands on: a well-formed connection reaches the gateway and its
    answer comes back framed."""
    with relay_on(gateway) as (relay, theirs):
        send(theirs, frame(1, b"GET / HTTP/1.1\r\n\r\n"))
        assert wait_for(lambda: gateway.taken)
        gateway.taken[0].sendall(b"HTTP/1.1 200 OK\r\n\r\n")
        theirs.settimeout(5)
        head = theirs.recv(HEADER.size, socket.MSG_WAITALL)
        cid, size = HEADER.unpack(head)
        assert (cid, theirs.recv(size, socket.MSG_WAITALL)) == (1, b"HTTP/1.1 200 OK\r\n\r\n")
        assert relay.violation is None


@pytest.mark.parametrize("bounded", [True, False], ids=["bounded", "lifted-control"])
def test_a_flood_of_connection_ids_is_cut_at_the_bound(gateway: Gateway, bounded: bool) -> None:
    flood = 600
    before = threading.active_count()
    with relay_on(gateway, None if bounded else LIFTED) as (relay, theirs):
        send(theirs, b"".join(frame(cid, b"x") for cid in range(1, flood + 1)))
        if bounded:
            assert dropped(relay, theirs)
            assert relay.violation == (
                "gateway relay dropped: more than 64 connections open at once"
            )
            assert len(gateway.taken) <= 64
            assert wait_for(lambda: threading.active_count() <= before + 1)
        else:  # the control: a host thread and a gateway connection for every id
            assert wait_for(lambda: len(gateway.taken) == flood, 20)
            assert threading.active_count() >= before + flood
            assert relay.violation is None


@pytest.mark.parametrize("bounded", [True, False], ids=["bounded", "lifted-control"])
def test_connections_over_the_run_total_drop_the_relay(gateway: Gateway, bounded: bool) -> None:
    """Opened and closed one after another (never many at once): the run's total is bounded."""
    bounds = Bounds(connections=40) if bounded else LIFTED
    with relay_on(gateway, bounds) as (relay, theirs):
        for cid in range(1, 61):
            send(theirs, frame(cid, b"x") + frame(cid, b""))
            wait_for(taken_or_ended(gateway, relay, min(cid, 40)))
            for conn in gateway.taken:
                conn.close()
        if bounded:
            assert dropped(relay, theirs)
            assert relay.violation == "gateway relay dropped: more than 40 connections in one run"
            assert len(gateway.taken) == 40
        else:
            assert wait_for(lambda: len(gateway.taken) == 60)
            assert relay.violation is None


@pytest.mark.parametrize("bounded", [True, False], ids=["bounded", "lifted-control"])
def test_a_frame_announcing_192_mib_drops_the_relay(gateway: Gateway, bounded: bool) -> None:
    """Read whole, the frame is held in memory and every connection behind it waits for the
    rest (the run hung to its timeout); bounded, the relay is dropped at its header."""
    with relay_on(gateway, None if bounded else LIFTED) as (relay, theirs):
        piece = b"\0" * (1 << 20)
        send(theirs, frame(1, b"", announced=192 << 20) + piece * 4)
        send(theirs, frame(2, b"GET / HTTP/1.1\r\n\r\n"))  # a call of the agent's, behind it
        if bounded:
            assert dropped(relay, theirs)
            assert relay.violation == (
                "gateway relay dropped: a frame of 201326592 bytes on connection 1 "
                "(relay.py sends at most 65536)"
            )
            assert len(relay.stream.buffer) <= 1 << 16
        else:  # the control: 4 MiB held and counting, the next call never reaches the gateway
            assert wait_for(lambda: len(relay.stream.buffer) >= 4 << 20)
            assert not wait_for(lambda: gateway.taken, 0.5)
            assert not relay.ended.is_set()
        assert not gateway.taken


@pytest.mark.parametrize(
    "frames",
    [frame(0, b""), frame(0, b"spoof")],
    ids=["a-second-start", "data-on-id-0"],
)
def test_a_frame_that_breaks_the_protocol_drops_the_relay(gateway: Gateway, frames: bytes) -> None:
    with relay_on(gateway) as (relay, theirs):
        send(theirs, frames + frame(1, b"GET / HTTP/1.1\r\n\r\n"))
        assert dropped(relay, theirs)
        assert relay.violation is not None
        assert relay.violation.startswith("gateway relay dropped: frame (0, ")
        assert not gateway.taken


def test_a_frame_before_the_start_drops_the_relay(gateway: Gateway) -> None:
    ours, theirs = socket.socketpair()
    relay = Relay(ours, gateway.path)
    try:
        send(theirs, frame(1, b"GET / HTTP/1.1\r\n\r\n"))
        assert dropped(relay, theirs)
        assert not relay.ready.is_set()
        assert (
            relay.violation == "gateway relay dropped: frame (1, 18 bytes) where only (0, 0) may be"
        )
    finally:
        relay.close()
        theirs.close()


@pytest.mark.parametrize("hostile", [True, False], ids=["violation", "end-of-stream-control"])
def test_a_dropped_relay_ends_the_runs_processes(gateway: Gateway, hostile: bool) -> None:
    """Dropped, the relay has the sandbox end the run's processes (their calls could only hang
    until the run's timeout); a relay whose stream simply ends (the run is over) does not."""
    ended: list[bool] = []
    ours, theirs = socket.socketpair()
    relay = Relay(ours, gateway.path, on_violation=lambda: ended.append(True))
    try:
        send(theirs, frame(0, b""))
        assert relay.ready.wait(5)
        if hostile:
            send(theirs, frame(1, b"", announced=192 << 20))
        else:
            theirs.shutdown(socket.SHUT_WR)
        assert relay.ended.wait(5)
        assert ended == ([True] if hostile else [])
    finally:
        relay.close()
        theirs.close()


@pytest.mark.parametrize("timeout", [None, 0.3], ids=["no-timeout", "sdk-timeout-control"])
def test_a_quiet_run_keeps_its_relay(gateway: Gateway, timeout: float | None) -> None:
    """The agent may not call the model for minutes (a long build): its relay waits. The
    control, a read timeout on the exec's socket (the docker SDK's, the client's 60 s), ends
    the relay at the first quiet spell, and every later call of the run hangs."""
    ours, theirs = socket.socketpair()
    ours.settimeout(timeout)
    relay = Relay(ours, gateway.path)
    try:
        send(theirs, frame(0, b""))
        assert relay.ready.wait(5)
        time.sleep(0.8)
        send(theirs, frame(1, b"GET / HTTP/1.1\r\n\r\n"))
        if timeout is None:
            assert wait_for(lambda: gateway.taken)
            assert not relay.ended.is_set()
        else:
            assert relay.ended.is_set()
            assert not gateway.taken
    finally:
        relay.close()
        theirs.close()


def test_the_relay_of_a_copy_mode_container_has_no_read_timeout(tmp_path: Path) -> None:
    """The relay started in a real container reads without a timeout; the SDK's exec socket,
    as it comes, has the client's (the control: what the relay had before)."""
    needs_docker()
    from pytest_scylla.run.gateway import Gateway as RealGateway
    from pytest_scylla.run.sandbox.docker.sandbox import Docker

    gw = RealGateway().start()
    box = Docker(gw.port, gw.socket_dir, copy=True)
    private = tmp_path / "private"
    (private / "work").mkdir(parents=True)
    try:
        container = box.container(private)
        assert box._relays[private].raw.gettimeout() is None
        handle = box.engine.api.exec_create(container.id, ["true"], stdin=True)
        raw = box.engine.api.exec_start(handle["Id"], socket=True)._sock
        assert raw.gettimeout() == 60  # the control
        raw.close()
    finally:
        box.close(private)
        gw.stop()
