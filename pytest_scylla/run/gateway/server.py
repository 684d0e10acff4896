"""The gateway's HTTP servers, routes and call log (see the package docstring)."""

from __future__ import annotations

import http.server
import json
import os
import socketserver
import threading
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from pytest_scylla.core import pricing
from pytest_scylla.core.tempdirs import claim_private, release_private
from pytest_scylla.run.gateway import (
    ablation,
    allowlist,
    gemini_wire,
    limits,
    oracle,
    replay,
    upstreams,
)
from pytest_scylla.run.gateway.recorder import Recorder
from pytest_scylla.run.gateway.recorder import quiet_error as _quiet_error
from pytest_scylla.run.gateway.routes import (
    RetryPolicy,
    Route,
    allowed,
    now,
    retry_after_seconds,
)
from pytest_scylla.run.gateway.sse import UsageReader

DEFAULT_UPSTREAM = "https://api.anthropic.com"
# the agent's model calls, whose first one the ablation check reads (by wire format)
MODEL_CALLS = frozenset({"/v1/messages", "/responses", "/chat/completions"})


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
        parts = urlsplit(self.path)
        segments = parts.path.split("/", 3)  # '', 'run', key, rest
        gateway: Gateway = self.server.gateway
        route = gateway.routes.get(segments[2]) if len(segments) == 4 and \
            segments[1] == "run" else None
        status, length, why = limits.body_length(self.headers.get("content-length"))
        if route is None or length is None:  # refused before a byte of the body is read
            self.close_connection = True
            if route is not None:
                gateway.refused_early(route, "/" + segments[3], status, str(why))
            self.send_json(404 if route is None else status, {"type": "error", "error": {
                "type": "not_found_error" if route is None else "request_too_large"
                if status == 413 else "invalid_request_error",
                "message": why or f"pytest-scylla gateway: no run at {parts.path}"}})
            return
        with route.lock:
            crowded = route.open_calls >= limits.MAX_OPEN_CALLS
            route.open_calls += 0 if crowded else 1
        if crowded:
            self.close_connection = True
            message = (f"pytest-scylla gateway: this run already has {limits.MAX_OPEN_CALLS} "
                       "calls open; no more at once")
            gateway.refused_early(route, "/" + segments[3], 429, message)
            self.send_json(429, {"type": "error", "error": {"type": "rate_limit_error",
                                                            "message": message}})
            return
        try:
            body = self.rfile.read(length)
            gateway.handle(route, "/" + segments[3], parts.query, self, body)
        finally:
            with route.lock:
                route.open_calls -= 1

    # responses -------------------------------------------------------------------------------
    def send_json(self, status: int, payload: dict[str, Any],
                  headers: Sequence[tuple[str, str]] = ()) -> bytes:
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
        self.socket_dir = claim_private("scylla-gw-")  # cleaned at the next start if killed
        self.socket_path = self.socket_dir / "gateway.sock"
        self.port = 0
        self.retry = RetryPolicy()
        self.limited: tuple[float, str] | None = None  # (until, why): a usage-window limit

    def start(self) -> Gateway:
        tcp = _TCPServer(("127.0.0.1", 0), _Handler)
        unix = _UnixServer(str(self.socket_path), _UnixHandler)
        for server in (tcp, unix):
            server.gateway = self
            # a short poll: `stop` (shutdown) waits for the loop to notice, at every session end
            threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                             name="scylla-gateway", daemon=True).start()
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
        release_private(self.socket_dir)

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
            "ts": now(), "run": route.key, "seq": seq, "endpoint": path,
            "upstream": route.upstream,
            "model_requested": request.get("model") or (gemini_wire.match(path) or [None])[0],
            "role": "main" if oracle.is_main_agent(request) else "side",
            "stream": bool(request.get("stream") or (gemini_wire.match(path) or ("", 0))[1]),
            "request_bytes": len(body)}
        if route.bodies_dir is not None:
            route.bodies_dir.mkdir(parents=True, exist_ok=True)
            (route.bodies_dir / f"{seq:04d}.request.json").write_bytes(body)

        refusal: str | None
        if not allowed(route.upstream, path):
            status, refusal = 403, f"pytest-scylla gateway: {path} is not a model endpoint"
        else:
            status, refusal = 400, self._refusal(route, path, request)
        estimate = limits.worst_case_usd(entry["model_requested"], request, len(body))
        if refusal is None:
            refusal = limits.reserve(route, estimate)
        if refusal is not None:
            route.refused += 1
            client.send_json(status, {"type": "error", "error": {
                "type": "permission_error" if status == 403 else "invalid_request_error",
                "message": refusal}})
            self._log(route, {**entry, "status": status, "refused": refusal,
                              "latency_s": round(time.monotonic() - start, 4)})
            return
        limit = self.limited
        if limit is not None and limit[0] > time.time():
            limits.release(route, estimate)  # (held, a waiting call of the run would wait on)
            wait = limit[0] - time.time()
            message = (f"pytest-scylla gateway: upstream usage limit ({limit[1]}); it resets in "
                       f"{wait:.0f}s and new runs are paused until then")
            self.infra(route, 429, None, message)
            client.send_json(429, {"type": "error", "error": {"type": "rate_limit_error",
                                                              "message": message}})
            self._log(route, {**entry, "status": 429, "limited": True,
                              "latency_s": round(time.monotonic() - start, 4)})
            return
        try:
            result = self._answer(route, seq, path, query, request, body, client, start)
        finally:
            limits.release(route, estimate)
        reader = result.pop("reader", None)
        if isinstance(reader, UsageReader) and (result.get("status") or 0) < 300:
            route.said.add(reader.answer, agent=entry["role"] == "main")
        self._log(route, {**entry, **result, "reserved_usd": round(estimate, 6),
                          "latency_s": result.get("latency_s",
                                                  round(time.monotonic() - start, 4))})

    def _answer(self, route: Route, seq: int, path: str, query: str, request: dict[str, Any],
                body: bytes, client: _Handler, start: float) -> dict[str, Any]:
        """The call answered: from the recording, the oracle or the real upstream."""
        if route.replay is not None:
            result = self._replayed(route, seq, request, client)
        else:
            sink = Recorder(client) if route.bodies_dir is not None else client
            if route.upstream == "oracle":
                result = upstreams.from_oracle(self, route, path, request, body, sink, start)
            else:
                result = upstreams.forward(self, route, path, query, sink, body, start)
            if isinstance(sink, Recorder) and route.bodies_dir is not None:
                replay.record(route.bodies_dir, seq, sink.status, sink.content_type,
                              bytes(sink.data), {"private": route.private, **{
                                  k: result.get(k) for k in ("model", "usage", "stop_reason")}})
        return result

    def _replayed(self, route: Route, seq: int, request: dict[str, Any],
                  client: _Handler) -> dict[str, Any]:
        """The call answered from the recording (`--scylla-replay`), or refused as diverged."""
        assert route.replay is not None
        recorded, why = route.replay.match(request)
        if recorded is None:
            message = f"replay diverged at call {seq}: {why}"
            with route.lock:
                route.replay_diverged = route.replay_diverged or message
            client.send_json(400, {"type": "error", "error": {
                "type": "invalid_request_error", "message": f"pytest-scylla {message}"}})
            return {"status": 400, "error": "replay diverged", "refused": message}
        status, kind, counted, data = route.replay.answer(recorded, route.private)
        client.start_chunks(status, [("content-type", kind)])
        client.chunk(data)
        client.end_chunks()
        result: dict[str, Any] = {"status": status, "replayed": recorded, "response_bytes":
                                  len(data), "reader": UsageReader.of(  # what the model said
                                      data, kind == "text/event-stream")}
        if counted["usage"]:
            dollars = self.account(route, counted["model"], counted["usage"])
            result.update(counted, cost_usd=round(dollars, 6))
        return result

    def _refusal(self, route: Route, path: str, request: dict[str, Any]) -> str | None:
        """Why this call is refused before it reaches the upstream (None: let it through)."""
        model = request.get("model") or (gemini_wire.match(path) or [None])[0]
        refused = allowlist.model_refusal(route.models, str(model) if model else None)
        if refused is not None:
            with route.lock:
                route.models_refused.add(str(model)[:80])
            return refused
        if (path in MODEL_CALLS or gemini_wire.match(path)) and oracle.is_main_agent(request):
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

    def refused_early(self, route: Route, path: str, status: int, why: str) -> None:
        """Log a call refused before its body was read (too large, malformed, too many)."""
        with route.lock:
            route.calls += 1
            route.refused += 1
            seq = route.calls
        self._log(route, {"ts": now(), "run": route.key, "seq": seq, "endpoint": path,
                          "upstream": route.upstream, "status": status, "refused": why})

    def account(self, route: Route, model: str | None, usage: dict[str, int]) -> float:
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

    def infra(self, route: Route, status: int | None, retry_after: str | None,
               detail: str, retried: bool = False) -> dict[str, Any]:
        event = {"ts": now(), "status": status, "retry_after": retry_after, "detail": detail,
                 "retried_by_gateway": retried}
        with route.lock:
            route.infra.append(event)
        return event

    def again(self, route: Route, attempt: int, waited: float, status: int | None,
               retry_after: str | None, detail: str) -> float | None:
        """After a failed attempt: the seconds to wait before the next one, or None to pass
        the failure on (attempts or waiting used up, a usage-window limit, the run closed)."""
        policy = self.retry
        delay = policy.delay(attempt, retry_after)
        hinted = retry_after_seconds(retry_after)
        if status == 429 and hinted is not None and hinted > policy.max_wait:
            self.limited = (time.time() + hinted, detail or "rate limit")
            if policy.on_long_limit is not None:
                policy.on_long_limit(hinted, detail or "rate limit")
            self.infra(route, status, retry_after, f"usage-window limit: {detail}")
            return None
        if attempt + 1 >= policy.attempts or waited + delay > policy.max_wait:
            self.infra(route, status, retry_after, detail)
            return None
        self.infra(route, status, retry_after, detail, retried=True)
        if route.closed.wait(delay):
            return None
        return delay

    def to_client(self, headers: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
        """The headers of an upstream error passed on to the CLI. Under a usage-window limit its
        retry-after is dropped: the CLI would sleep out a window of hours inside the run and end
        as a timeout (a scored failure); without it, its own short retries fail, and the run is
        an infra_error that the next session runs again."""
        if self.limited is None or self.limited[0] <= time.time():
            return list(headers)
        return [(k, v) for k, v in headers if k.lower() != "retry-after"]

    def http(self) -> Any:
        if self._client is None:
            import httpx

            self._client = httpx.Client(timeout=httpx.Timeout(600.0, connect=15.0),
                                        follow_redirects=False)
        return self._client

    def _log(self, route: Route, entry: dict[str, Any]) -> None:
        line = (json.dumps(entry, separators=(",", ":")) + "\n").encode()
        fd = os.open(route.log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
