"""The client of a call whose answer is recorded (`--scylla-record-bodies`), and the one line a
broken connection is worth."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class Recorder:
    """The client, with what it is sent kept (status, content type, body bytes)."""

    def __init__(self, client: Any) -> None:
        self.client, self.status, self.content_type = client, 0, "application/json"
        self.data = bytearray()

    def __getattr__(self, name: str) -> Any:  # headers, close_connection, ...
        return getattr(self.client, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "close_connection":
            setattr(self.client, name, value)
        else:
            super().__setattr__(name, value)

    def send_json(
        self, status: int, payload: dict[str, Any], headers: Sequence[tuple[str, str]] = ()
    ) -> bytes:
        data: bytes = self.client.send_json(status, payload, headers)
        self.status, self.data = status, bytearray(data)
        return data

    def start_chunks(self, status: int, headers: list[tuple[str, str]]) -> None:
        self.status = status
        self.content_type = dict((k.lower(), v) for k, v in headers).get(
            "content-type", self.content_type
        )
        self.client.start_chunks(status, headers)

    def chunk(self, data: bytes) -> None:
        self.data += data
        self.client.chunk(data)

    def end_chunks(self) -> None:
        self.client.end_chunks()


def quiet_error(request: Any, client_address: Any) -> None:
    """One line instead of socketserver's traceback for a connection that broke."""
    import sys

    from pytest_scylla.core.terminal import safe

    exc = sys.exc_info()[1]  # its text may quote what the agent sent
    print(
        safe(f"pytest-scylla gateway: connection error: {type(exc).__name__}: {exc}"),
        file=sys.stderr,
    )
