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

from pytest_scylla.core import pricing
from pytest_scylla.core.tempdirs import claim_private, release_private
from pytest_scylla.run.gateway import (
    gemini_wire,
    limits,
    refusals,
    replay,
    replay_upstream,
    upstreams,
)
from pytest_scylla.run.gateway.handler import Handler, UnixHandler
from pytest_scylla.run.gateway.oracle import model as oracle
from pytest_scylla.run.gateway.oracle import upstream as oracle_upstream
from pytest_scylla.run.gateway.recorder import Recorder
from pytest_scylla.run.gateway.recorder import quiet_error as _quiet_error
from pytest_scylla.run.gateway.routes import RetryPolicy, Route, now, retry_after_seconds
from pytest_scylla.run.gateway.sse import UsageReader

DEFAULT_UPSTREAM = "https://api.anthropic.com"
# how long closing a route waits for its calls in flight to be priced and logged
SETTLE_SECONDS = 10.0


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
        self.upstream_url = (
            upstream_url or os.environ.get("SCYLLA_UPSTREAM_URL") or DEFAULT_UPSTREAM
        ).rstrip("/")
        self.routes: dict[str, Route] = {}
        self._servers: list[socketserver.BaseServer] = []
        self._client: Any = None
        self.socket_dir = claim_private("scylla-gw-")  # cleaned at the next start if killed
        self.socket_path = self.socket_dir / "gateway.sock"
        self.port = 0
        self.retry = RetryPolicy()
        self.limited: tuple[float, str] | None = None  # (until, why): a usage-window limit

    def start(self) -> Gateway:
        tcp = _TCPServer(("127.0.0.1", 0), Handler)
        unix = _UnixServer(str(self.socket_path), UnixHandler)
        for server in (tcp, unix):
            server.gateway = self
            # a short poll: `stop` (shutdown) waits for the loop to notice, at every session end
            threading.Thread(
                target=server.serve_forever,
                kwargs={"poll_interval": 0.05},
                name="scylla-gateway",
                daemon=True,
            ).start()
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

    def settle(self, route: Route, timeout: float = 10.0) -> bool:
        """Wait until every call the route admitted is priced and logged (its client has the
        answer a moment before: what the route spent is read after this); False if `timeout`
        seconds passed first."""
        with route.settled:
            return route.settled.wait_for(lambda: route.in_flight == 0, timeout)

    def close(self, key: str) -> Route | None:
        """End a route: calls waiting on it are woken and refused, and those in flight are
        waited for (`settle`, at most SETTLE_SECONDS) so that what it spent is whole when the
        caller reads it right after."""
        route = self.routes.pop(key, None)
        if route is not None:
            route.closed.set()
            self.settle(route, SETTLE_SECONDS)
            refusals.finish(route)  # the ablation check's end: a server that never connected
        return route

    # one call --------------------------------------------------------------------------------
    def handle(self, route: Route, path: str, query: str, client: Handler, body: bytes) -> None:
        """One call: refused, or answered within the run's budget; logged either way."""
        start = time.monotonic()
        with route.lock:
            route.calls += 1
            seq = route.calls
        route.called.set()
        try:
            request = json.loads(body) if body else {}
        except ValueError:
            request = {}
        entry = _entry(route, seq, path, request, body)
        if route.bodies_dir is not None:
            route.bodies_dir.mkdir(parents=True, exist_ok=True)
            (route.bodies_dir / f"{seq:04d}.request.json").write_bytes(body)
        status, refusal = refusals.refusal(route, path, request)
        estimate = limits.worst_case_usd(entry["model_requested"], request, len(body))
        if refusal is None:
            refusal = limits.reserve(route, estimate)
        if refusal is not None:
            self._refuse(route, client, entry, status, refusal, start)
            return
        if self._paused(route, client, entry, estimate, start):
            return
        try:  # settled (released) only once priced and logged: see `settle`
            result = self._answer(route, seq, path, query, request, body, client, start)
            reader = result.pop("reader", None)
            if isinstance(reader, UsageReader) and (result.get("status") or 0) < 300:
                route.said.add(reader.answer, agent=entry["role"] == "main")
            self._log(
                route,
                {
                    **entry,
                    **result,
                    "reserved_usd": round(estimate, 6),
                    "latency_s": result.get("latency_s", round(time.monotonic() - start, 4)),
                },
            )
        finally:
            limits.release(route, estimate)

    def _refuse(
        self,
        route: Route,
        client: Handler,
        entry: dict[str, Any],
        status: int,
        refusal: str,
        start: float,
    ) -> None:
        """Answer a refused call with its reason, and log it."""
        route.refused += 1
        client.send_json(
            status,
            {
                "type": "error",
                "error": {
                    "type": "permission_error" if status == 403 else "invalid_request_error",
                    "message": refusal,
                },
            },
        )
        self._log(
            route,
            {
                **entry,
                "status": status,
                "refused": refusal,
                "latency_s": round(time.monotonic() - start, 4),
            },
        )

    def _paused(
        self, route: Route, client: Handler, entry: dict[str, Any], estimate: float, start: float
    ) -> bool:
        """Whether an upstream usage-window limit holds the call back (then answered 429 and
        logged, its budget reservation released)."""
        limit = self.limited
        if limit is None or limit[0] <= time.time():
            return False
        limits.release(route, estimate)  # (held, a waiting call of the run would wait on)
        wait = limit[0] - time.time()
        message = (
            f"pytest-scylla gateway: upstream usage limit ({limit[1]}); it resets in "
            f"{wait:.0f}s and new runs are paused until then"
        )
        self.infra(route, 429, None, message)
        client.send_json(
            429, {"type": "error", "error": {"type": "rate_limit_error", "message": message}}
        )
        self._log(
            route,
            {
                **entry,
                "status": 429,
                "limited": True,
                "latency_s": round(time.monotonic() - start, 4),
            },
        )
        return True

    def _answer(
        self,
        route: Route,
        seq: int,
        path: str,
        query: str,
        request: dict[str, Any],
        body: bytes,
        client: Handler,
        start: float,
    ) -> dict[str, Any]:
        """The call answered: from the recording, the oracle or the real upstream."""
        if route.replay is not None:
            result = replay_upstream.from_recording(self, route, seq, request, client)
        else:
            sink = Recorder(client) if route.bodies_dir is not None else client
            if route.upstream == "oracle":
                result = oracle_upstream.from_oracle(self, route, path, request, body, sink, start)
            else:
                result = upstreams.forward(self, route, path, query, sink, body, start)
            if isinstance(sink, Recorder) and route.bodies_dir is not None:
                replay.record(
                    route.bodies_dir,
                    seq,
                    sink.status,
                    sink.content_type,
                    bytes(sink.data),
                    {
                        "private": route.private,
                        **{k: result.get(k) for k in ("model", "usage", "stop_reason")},
                    },
                )
        return result

    def refused_early(self, route: Route, path: str, status: int, why: str) -> None:
        """Log a call refused before its body was read (too large, malformed, too many)."""
        with route.lock:
            route.calls += 1
            route.refused += 1
            seq = route.calls
        route.called.set()
        self._log(
            route,
            {
                "ts": now(),
                "run": route.key,
                "seq": seq,
                "endpoint": path,
                "upstream": route.upstream,
                "status": status,
                "refused": why,
            },
        )

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

    def infra(
        self,
        route: Route,
        status: int | None,
        retry_after: str | None,
        detail: str,
        retried: bool = False,
    ) -> dict[str, Any]:
        event = {
            "ts": now(),
            "status": status,
            "retry_after": retry_after,
            "detail": detail,
            "retried_by_gateway": retried,
        }
        with route.lock:
            route.infra.append(event)
        return event

    def again(
        self,
        route: Route,
        attempt: int,
        waited: float,
        status: int | None,
        retry_after: str | None,
        detail: str,
    ) -> float | None:
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

            self._client = httpx.Client(
                timeout=httpx.Timeout(600.0, connect=15.0), follow_redirects=False
            )
        return self._client

    def _log(self, route: Route, entry: dict[str, Any]) -> None:
        line = (json.dumps(entry, separators=(",", ":")) + "\n").encode()
        fd = os.open(route.log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)


def _entry(
    route: Route, seq: int, path: str, request: dict[str, Any], body: bytes
) -> dict[str, Any]:
    """The start of a call's log entry: what was asked, of which model, by whom."""
    return {
        "ts": now(),
        "run": route.key,
        "seq": seq,
        "endpoint": path,
        "upstream": route.upstream,
        "model_requested": request.get("model") or (gemini_wire.match(path) or [None])[0],
        "role": "main" if oracle.is_main_agent(request) else "side",
        "stream": bool(request.get("stream") or (gemini_wire.match(path) or ("", 0))[1]),
        "request_bytes": len(body),
    }
