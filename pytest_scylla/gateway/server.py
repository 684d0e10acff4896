"""The gateway's HTTP servers, routes and call log (see the package docstring)."""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import socketserver
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .. import pricing
from . import ablation, oracle
from .sse import UsageReader

DEFAULT_UPSTREAM = "https://api.anthropic.com"
INFRA_STATUSES = frozenset({408, 429, 500, 502, 503, 504, 529})
HOP_HEADERS = frozenset({"connection", "keep-alive", "transfer-encoding", "content-length",
                         "content-encoding", "host", "proxy-connection", "upgrade", "te",
                         "trailer"})
CLIENT_AUTH = frozenset({"x-api-key", "authorization"})
STALL_LIMIT_SECONDS = 24 * 3600


class UpstreamSetupError(RuntimeError):
    """The real upstream cannot be used (no credential)."""


def credential_headers(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The real credential for the upstream, from the harness's own environment."""
    env = os.environ if environ is None else environ
    if env.get("ANTHROPIC_API_KEY"):
        return {"x-api-key": env["ANTHROPIC_API_KEY"]}
    if env.get("ANTHROPIC_AUTH_TOKEN"):
        return {"authorization": f"Bearer {env['ANTHROPIC_AUTH_TOKEN']}"}
    raise UpstreamSetupError(
        "no model credential: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) in the environment "
        "pytest runs in, or run offline with --scylla-oracle (a SIMULATED model)")


@dataclass
class Route:
    """One run's path through the gateway, and what the gateway saw of it."""

    key: str
    log_path: Path
    upstream: str = "oracle"  # oracle | anthropic
    max_cost_usd: float = float("inf")
    bodies_dir: Path | None = None
    script: oracle.Script | None = None
    expected: ablation.Expected | None = None
    capture_first: bool = False
    pass_auth: bool = False  # without a credential of our own, forward the client's (CLI login)
    # what happened
    spent_usd: float = 0.0
    calls: int = 0
    refused: int = 0
    budget_exceeded: bool = False
    unpriced_models: set[str] = field(default_factory=set)
    infra: list[dict[str, Any]] = field(default_factory=list)
    ablation: dict[str, Any] | None = None
    first_request: dict[str, Any] | None = None
    usage: dict[str, dict[str, int]] = field(default_factory=dict)  # per model
    closed: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def ablation_failed(self) -> bool:
        return self.ablation is not None and bool(self.ablation.get("problems"))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class _Handler(http.server.BaseHTTPRequestHandler):
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
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        parts = urlsplit(self.path)
        segments = parts.path.split("/", 3)  # '', 'run', key, rest
        gateway: Gateway = self.server.gateway
        route = gateway.routes.get(segments[2]) if len(segments) == 4 and \
            segments[1] == "run" else None
        if route is None:
            self.send_json(404, {"type": "error", "error": {
                "type": "not_found_error", "message": f"pytest-scylla gateway: no run at "
                                                      f"{parts.path}"}})
            return
        gateway.handle(route, "/" + segments[3], parts.query, self, body)

    # responses -------------------------------------------------------------------------------
    def send_json(self, status: int, payload: dict[str, Any],
                  headers: tuple[tuple[str, str], ...] = ()) -> bytes:
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


class _UnixHandler(_Handler):
    disable_nagle_algorithm = False  # not a TCP socket


def _quiet_error(request: Any, client_address: Any) -> None:
    """One line instead of socketserver's traceback for a connection that broke."""
    import sys

    exc = sys.exc_info()[1]
    print(f"pytest-scylla gateway: connection error: {type(exc).__name__}: {exc}",
          file=sys.stderr)


class _TCPServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    gateway: Gateway

    def handle_error(self, request: Any, client_address: Any) -> None:
        _quiet_error(request, client_address)


class _UnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    gateway: Gateway

    def handle_error(self, request: Any, client_address: Any) -> None:
        _quiet_error(request, client_address)


class Gateway:
    """The per-process proxy. `start()` it once, `open()` a route per run, `close()` it after."""

    def __init__(self, upstream_url: str | None = None) -> None:
        self.upstream_url = (upstream_url or os.environ.get("SCYLLA_UPSTREAM_URL")
                             or DEFAULT_UPSTREAM).rstrip("/")
        self.routes: dict[str, Route] = {}
        self._servers: list[socketserver.BaseServer] = []
        self._client: Any = None
        self.socket_dir = Path(tempfile.mkdtemp(prefix="scylla-gw-"))
        self.socket_path = self.socket_dir / "gateway.sock"
        self.port = 0

    def start(self) -> Gateway:
        tcp = _TCPServer(("127.0.0.1", 0), _Handler)
        unix = _UnixServer(str(self.socket_path), _UnixHandler)
        for server in (tcp, unix):
            server.gateway = self
            threading.Thread(target=server.serve_forever, name="scylla-gateway",
                             daemon=True).start()
            self._servers.append(server)
        self.port = tcp.server_address[1]
        return self

    def stop(self) -> None:
        for route in list(self.routes.values()):
            route.closed.set()
        for server in self._servers:
            server.shutdown()
            server.server_close()
        if self._client is not None:
            self._client.close()
        with contextlib.suppress(OSError):
            self.socket_path.unlink()
            self.socket_dir.rmdir()

    def base_url(self, key: str, port: int | None = None) -> str:
        return f"http://127.0.0.1:{port or self.port}/run/{key}"

    def open(self, route: Route) -> Route:
        if route.key in self.routes:
            raise ValueError(f"run {route.key} already has a gateway route")
        route.log_path.parent.mkdir(parents=True, exist_ok=True)
        route.log_path.touch()
        self.routes[route.key] = route
        return route

    def close(self, key: str) -> Route | None:
        route = self.routes.pop(key, None)
        if route is not None:
            route.closed.set()
        return route

    # one call --------------------------------------------------------------------------------
    def handle(self, route: Route, path: str, query: str, client: _Handler, body: bytes) -> None:
        start = time.monotonic()
        with route.lock:
            route.calls += 1
            seq = route.calls
        try:
            request = json.loads(body) if body else {}
        except ValueError:
            request = {}
        entry: dict[str, Any] = {
            "ts": _now(), "run": route.key, "seq": seq, "endpoint": path,
            "upstream": route.upstream, "model_requested": request.get("model"),
            "role": "main" if oracle.is_main_agent(request) else "side",
            "stream": bool(request.get("stream")), "request_bytes": len(body)}
        if route.bodies_dir is not None:
            route.bodies_dir.mkdir(parents=True, exist_ok=True)
            (route.bodies_dir / f"{seq:04d}.request.json").write_bytes(body)

        refusal = self._refusal(route, path, request)
        if refusal is not None:
            route.refused += 1
            client.send_json(400, {"type": "error", "error": {
                "type": "invalid_request_error", "message": refusal}})
            self._log(route, {**entry, "status": 400, "refused": refusal,
                              "latency_s": round(time.monotonic() - start, 4)})
            return
        if route.upstream == "oracle":
            result = self._oracle(route, path, request, body, client, start)
        else:
            result = self._forward(route, path, query, client, body, start)
        self._log(route, {**entry, **result})

    def _refusal(self, route: Route, path: str, request: dict[str, Any]) -> str | None:
        """Why this call is refused before it reaches the upstream (None: let it through)."""
        if route.spent_usd >= route.max_cost_usd:
            route.budget_exceeded = True
            return (f"pytest-scylla: this run's budget of ${route.max_cost_usd:.2f} is spent "
                    f"(${route.spent_usd:.4f}); no further model calls")
        if path.startswith("/v1/messages") and not path.startswith("/v1/messages/count") \
                and oracle.is_main_agent(request):
            with route.lock:
                first = route.first_request is None
                if first:
                    route.first_request = request if route.capture_first else {}
            if first and route.expected is not None:
                seen = ablation.observe(request)
                problems = ablation.compare(route.expected, seen)
                route.ablation = {"checked": True, "problems": problems,
                                  "observed": seen.to_json(),
                                  "expected": route.expected.to_json()}
            if route.ablation_failed():
                assert route.ablation is not None
                return ("pytest-scylla ablation check failed: "
                        + "; ".join(route.ablation["problems"]))
        return None

    def _account(self, route: Route, model: str | None, usage: dict[str, int]) -> float:
        price = pricing.price(model)
        dollars = price.cost(usage)
        with route.lock:
            route.spent_usd += dollars
            if not price.known:
                route.unpriced_models.add(price.model)
            total = route.usage.setdefault(price.model or "unknown", {})
            for key, value in usage.items():
                total[key] = total.get(key, 0) + value
            total["calls"] = total.get("calls", 0) + 1
        return dollars

    def _infra(self, route: Route, status: int | None, retry_after: str | None,
               detail: str) -> dict[str, Any]:
        event = {"ts": _now(), "status": status, "retry_after": retry_after, "detail": detail}
        with route.lock:
            route.infra.append(event)
        return event

    def _oracle(self, route: Route, path: str, request: dict[str, Any], body: bytes,
                client: _Handler, start: float) -> dict[str, Any]:
        model = str(request.get("model") or "oracle")
        if path.startswith("/v1/messages/count_tokens"):
            client.send_json(200, {"input_tokens": max(1, len(body) // 4)})
            return {"status": 200, "latency_s": round(time.monotonic() - start, 4)}
        assert route.script is not None, "oracle route without a script"
        reply = oracle.answer(route.script, request)
        if reply.stall:
            route.closed.wait(STALL_LIMIT_SECONDS)
            client.close_connection = True
            return {"status": None, "stalled": True,
                    "latency_s": round(time.monotonic() - start, 4)}
        if reply.error is not None:
            retry_after = dict(reply.headers).get("retry-after")
            self._infra(route, reply.status, retry_after, reply.error.get("message", ""))
            client.send_json(reply.status, {"type": "error", "error": reply.error},
                             reply.headers)
            return {"status": reply.status, "retry_after": retry_after,
                    "error": reply.error.get("type"),
                    "latency_s": round(time.monotonic() - start, 4)}
        usage = oracle.usage_for(len(body), reply, first_call=not route.usage)
        msg_id = f"msg_oracle_{route.key}_{route.calls:04d}"
        stream = bool(request.get("stream"))
        first_byte: float | None = None
        size = 0
        pieces = oracle.render(reply, msg_id, model, usage, stream)
        if stream:
            client.start_chunks(200, [("content-type", "text/event-stream"),
                                      ("cache-control", "no-cache")])
            for piece in pieces:
                first_byte = first_byte or time.monotonic()
                client.chunk(piece)
                size += len(piece)
            client.end_chunks()
        else:
            data = client.send_json(200, json.loads(b"".join(pieces)))
            first_byte, size = time.monotonic(), len(data)
        dollars = self._account(route, model, usage)
        if route.bodies_dir is not None:
            (route.bodies_dir / f"{route.calls:04d}.response.txt").write_text(
                json.dumps(reply.blocks), encoding="utf-8")
        return {"status": 200, "model": model, "usage": usage, "cost_usd": round(dollars, 6),
                "stop_reason": reply.stop_reason, "response_bytes": size,
                "ttft_s": round((first_byte or time.monotonic()) - start, 4),
                "latency_s": round(time.monotonic() - start, 4)}

    def _http(self) -> Any:
        if self._client is None:
            import httpx

            self._client = httpx.Client(timeout=httpx.Timeout(600.0, connect=15.0),
                                        follow_redirects=False)
        return self._client

    def _forward(self, route: Route, path: str, query: str, client: _Handler, body: bytes,
                 start: float) -> dict[str, Any]:
        import httpx

        headers = {k: v for k, v in client.headers.items()
                   if k.lower() not in HOP_HEADERS and k.lower() not in CLIENT_AUTH}
        try:
            headers.update(credential_headers())
        except UpstreamSetupError as exc:
            if not route.pass_auth:
                client.send_json(401, {"type": "error", "error": {
                    "type": "authentication_error", "message": f"pytest-scylla: {exc}"}})
                return {"status": 401, "error": "no credential",
                        "latency_s": round(time.monotonic() - start, 4)}
            headers.update({k: v for k, v in client.headers.items()
                            if k.lower() in CLIENT_AUTH})
        url = self.upstream_url + path + (f"?{query}" if query else "")
        reader = UsageReader()
        first_byte: float | None = None
        size = 0
        try:
            with self._http().stream("POST", url, content=body, headers=headers) as response:
                status = response.status_code
                out_headers = [(k, v) for k, v in response.headers.items()
                               if k.lower() not in HOP_HEADERS]
                streamed = "text/event-stream" in response.headers.get("content-type", "")
                client.start_chunks(status, out_headers)
                kept = bytearray()
                for piece in response.iter_bytes():
                    first_byte = first_byte or time.monotonic()
                    size += len(piece)
                    if streamed:
                        reader.feed(piece)
                    elif len(kept) < 1_000_000:
                        kept += piece
                    client.chunk(piece)
                client.end_chunks()
                if not streamed:
                    reader.read_json(bytes(kept))
                if route.bodies_dir is not None:
                    (route.bodies_dir / f"{route.calls:04d}.status").write_text(str(status))
        except httpx.HTTPError as exc:
            event = self._infra(route, None, None, f"{type(exc).__name__}: {exc}")
            if first_byte is None:
                client.send_json(502, {"type": "error", "error": {
                    "type": "api_error", "message": f"pytest-scylla gateway: upstream "
                                                    f"unreachable ({event['detail']})"}})
            else:
                client.close_connection = True
            return {"status": None, "error": event["detail"],
                    "latency_s": round(time.monotonic() - start, 4)}
        result: dict[str, Any] = {"status": status, "latency_s": round(time.monotonic() - start,
                                                                        4),
                                  "ttft_s": round((first_byte or time.monotonic()) - start, 4),
                                  "response_bytes": size}
        retry_after = response.headers.get("retry-after")
        if status in INFRA_STATUSES or status >= 500:
            self._infra(route, status, retry_after, (reader.error or {}).get("message", ""))
            result.update(retry_after=retry_after, error=(reader.error or {}).get("type"))
        if reader.usage:
            dollars = self._account(route, reader.model, reader.usage)
            result.update(model=reader.model, usage=reader.usage, cost_usd=round(dollars, 6),
                          stop_reason=reader.stop_reason)
        return result

    def _log(self, route: Route, entry: dict[str, Any]) -> None:
        line = (json.dumps(entry, separators=(",", ":")) + "\n").encode()
        fd = os.open(route.log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
