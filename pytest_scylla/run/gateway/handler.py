"""The gateway's HTTP handler: one connection's call, refused before its body is read (no run,
a body too large or malformed, too many calls open) or passed to the gateway, and the writers of
its answer (whole, or in chunks as they come)."""

from __future__ import annotations

import http.server
import json
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from pytest_scylla.run.gateway import limits


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # stream events go out as they come, not 40 ms later
    server: Any

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def address_string(self) -> str:
        return "cli"

    def do_HEAD(self) -> None:  # the CLI probes the base URL with HEAD /
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    do_GET = do_HEAD

    def do_POST(self) -> None:
        parts = urlsplit(self.path)
        segments = parts.path.split("/", 3)  # '', 'run', key, rest
        gateway = self.server.gateway
        route = (
            gateway.routes.get(segments[2]) if len(segments) == 4 and segments[1] == "run" else None
        )
        status, length, why = limits.body_length(self.headers.get("content-length"))
        if route is None or length is None:  # refused before a byte of the body is read
            self.close_connection = True
            if route is not None:
                gateway.refused_early(route, "/" + segments[3], status, str(why))
            self.send_json(
                404 if route is None else status,
                {
                    "type": "error",
                    "error": {
                        "type": "not_found_error"
                        if route is None
                        else "request_too_large"
                        if status == 413
                        else "invalid_request_error",
                        "message": why or f"pytest-scylla gateway: no run at {parts.path}",
                    },
                },
            )
            return
        with route.lock:
            crowded = route.open_calls >= limits.MAX_OPEN_CALLS
            route.open_calls += 0 if crowded else 1
        if crowded:
            self.close_connection = True
            message = (
                f"pytest-scylla gateway: this run already has {limits.MAX_OPEN_CALLS} "
                "calls open; no more at once"
            )
            gateway.refused_early(route, "/" + segments[3], 429, message)
            self.send_json(
                429, {"type": "error", "error": {"type": "rate_limit_error", "message": message}}
            )
            return
        try:
            body = self.rfile.read(length)
            gateway.handle(route, "/" + segments[3], parts.query, self, body)
        finally:
            with route.lock:
                route.open_calls -= 1

    # responses -------------------------------------------------------------------------------
    def send_json(
        self, status: int, payload: dict[str, Any], headers: Sequence[tuple[str, str]] = ()
    ) -> bytes:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        return data

    def start_chunks(self, status: int, headers: list[tuple[str, str]]) -> None:
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()

    def chunk(self, data: bytes) -> None:
        if data:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def end_chunks(self) -> None:
        self.wfile.write(b"0\r\n\r\n")


class UnixHandler(Handler):
    disable_nagle_algorithm = False  # not a TCP socket
