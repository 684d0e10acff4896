"""Where a gateway call goes: the oracle (`oracle_upstream`) or the recording (`replay_upstream`),
which answer in the gateway itself, or a real upstream (Anthropic's API for agents and judges, an
OpenAI-compatible server for Codex, opencode and `openai:` judges, Google's Gemini API for Gemini
CLI and `gemini:` judges), reached with the harness's own credential, retried on rate limits and
outages, and streamed back unchanged while its usage is read for the call log and the budget."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pytest_scylla.run.gateway import allowlist, gemini_wire
from pytest_scylla.run.gateway.routes import (
    Route,
    UpstreamSetupError,
    credential_headers,
    gemini_credential,
    retryable,
)
from pytest_scylla.run.gateway.sse import UsageReader


class Client(Protocol):
    """The connection of the caller (the CLI or a judge), as the gateway's handler offers it."""

    headers: Any
    close_connection: bool

    def send_json(
        self, status: int, payload: dict[str, Any], headers: Sequence[tuple[str, str]] = ()
    ) -> bytes: ...
    def start_chunks(self, status: int, headers: list[tuple[str, str]]) -> None: ...
    def chunk(self, data: bytes) -> None: ...
    def end_chunks(self) -> None: ...


class Gate(Protocol):
    """What an upstream needs of the gateway: its retry rule, accounting and HTTP client."""

    upstream_url: str

    def again(
        self,
        route: Route,
        attempt: int,
        waited: float,
        status: int | None,
        retry_after: str | None,
        detail: str,
    ) -> float | None: ...
    def infra(
        self,
        route: Route,
        status: int | None,
        retry_after: str | None,
        detail: str,
        retried: bool = False,
    ) -> dict[str, Any]: ...
    def to_client(self, headers: Sequence[tuple[str, str]]) -> list[tuple[str, str]]: ...
    def account(self, route: Route, model: str | None, usage: dict[str, int]) -> float: ...
    def http(self) -> Any: ...


HOP_HEADERS = frozenset(
    {
        "connection",
        "keep-alive",
        "transfer-encoding",
        "content-length",
        "content-encoding",
        "host",
        "proxy-connection",
        "upgrade",
        "te",
        "trailer",
    }
)
CLIENT_AUTH = frozenset({"x-api-key", "authorization", "x-goog-api-key"})
CLIENT_AUTH_QUERY = frozenset({"key", "access_token"})  # Google also takes these in the URL


def _headers(route: Route, client: Client) -> dict[str, str]:
    """The request headers for the upstream: the client's that `allowlist.HEADERS` names, with
    its (dummy) credential replaced by the harness's own. Raises UpstreamSetupError when there
    is none to send."""
    headers, _ = allowlist.headers(client.headers.items())
    if route.upstream == "gemini":  # Google's key, in the header Google's clients send it in
        headers.update(gemini_credential())
        return headers
    if route.upstream == "openai":  # a local server needs none; a hosted one takes a bearer key
        if os.environ.get("OPENAI_API_KEY"):
            headers["authorization"] = f"Bearer {os.environ['OPENAI_API_KEY']}"
        return headers
    try:
        headers.update(credential_headers())
    except UpstreamSetupError:
        if not route.pass_auth:
            raise
        headers.update({k: v for k, v in client.headers.items() if k.lower() in CLIENT_AUTH})
    return headers


def _url(gw: Gate, route: Route, path: str, query: str) -> str:
    """The upstream's URL of the call: the route's upstream (a `gemini` route without one goes to
    Google's, never to another vendor's), the query kept but for a credential in it (the client
    holds a dummy one; the gateway adds the real one as a header), and only what
    `allowlist.QUERY` names."""
    base = route.upstream_url or (
        gemini_wire.base_url() if route.upstream == "gemini" else gw.upstream_url
    )
    kept, _ = allowlist.query(query)
    return base + path + (f"?{kept}" if kept else "")


def _stripped(client: Client, query: str) -> list[str]:
    """The client's headers and query parameters (`?name`) not passed on, but for the expected
    ones (its credential, the framing), for the call log."""
    headers = [
        h
        for h in allowlist.headers(client.headers.items())[1]
        if h not in CLIENT_AUTH | HOP_HEADERS | allowlist.QUIET
    ]
    return headers + [
        f"?{name}" for name in allowlist.query(query)[1] if name not in CLIENT_AUTH_QUERY
    ]


def _relay(response: Any, client: Client, reader: UsageReader) -> tuple[float | None, int]:
    """Stream the body of a successful answer (its headers are out) to the client unchanged,
    reading its usage on the way."""
    streamed = "text/event-stream" in response.headers.get("content-type", "")
    first_byte: float | None = None
    size = 0
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
    return first_byte, size


@dataclass(frozen=True)
class _Call:
    """A call on its way to the real upstream."""

    gw: Gate
    route: Route
    path: str
    client: Client
    body: bytes
    start: float
    url: str
    headers: dict[str, str]


def forward(
    gw: Gate, route: Route, path: str, query: str, client: Client, body: bytes, start: float
) -> dict[str, Any]:
    """Pass the call to the real upstream, retrying what may be retried; the call log's entry."""
    try:
        headers = _headers(route, client)
    except UpstreamSetupError as exc:
        client.send_json(
            401,
            {
                "type": "error",
                "error": {"type": "authentication_error", "message": f"pytest-scylla: {exc}"},
            },
        )
        return {
            "status": 401,
            "error": "no credential",
            "latency_s": round(time.monotonic() - start, 4),
        }
    call = _Call(gw, route, path, client, body, start, _url(gw, route, path, query), headers)
    stripped = _stripped(client, query)
    noted = {"stripped": stripped} if stripped else {}
    attempt, waited = 0, 0.0
    while True:
        tries = {
            **noted,
            **({"attempts": attempt + 1, "retry_wait_s": round(waited, 3)} if attempt else {}),
        }
        outcome = _attempt(call, attempt, waited, tries)
        if isinstance(outcome, dict):
            return outcome
        attempt, waited = attempt + 1, waited + outcome


def _attempt(
    call: _Call, attempt: int, waited: float, tries: dict[str, Any]
) -> float | dict[str, Any]:
    """One try: the seconds to wait before the next, or the call log's entry."""
    import httpx

    reader = UsageReader()
    answered = False  # the status line went to the client: this call cannot be retried
    try:
        with call.gw.http().stream(
            "POST", call.url, content=call.body, headers=call.headers
        ) as response:
            status = response.status_code
            if retryable(status):  # small error bodies: read, then retry or pass on
                return _error_status(call, response, reader, attempt, waited, tries)
            call.client.start_chunks(
                status,
                [(k, v) for k, v in response.headers.items() if k.lower() not in HOP_HEADERS],
            )
            answered = True
            first_byte, size = _relay(response, call.client, reader)
    except httpx.HTTPError as exc:
        return _broken(call, f"{type(exc).__name__}: {exc}", answered, attempt, waited, tries)
    return _relayed(call, status, reader, first_byte, size, tries)


def _error_status(
    call: _Call,
    response: Any,
    reader: UsageReader,
    attempt: int,
    waited: float,
    tries: dict[str, Any],
) -> float | dict[str, Any]:
    """A retryable status: the seconds to wait before the next try, or the error passed on."""
    status = response.status_code
    retry_after = response.headers.get("retry-after")
    data = response.read()
    reader.read_json(data)
    detail = (reader.error or {}).get("message", "") or f"HTTP {status}"
    delay = call.gw.again(call.route, attempt, waited, status, retry_after, detail)
    if delay is not None:
        return delay
    call.client.start_chunks(
        status,
        call.gw.to_client(
            [(k, v) for k, v in response.headers.items() if k.lower() not in HOP_HEADERS]
        ),
    )
    call.client.chunk(data)
    call.client.end_chunks()
    return {
        "status": status,
        "retry_after": retry_after,
        "error": (reader.error or {}).get("type"),
        **tries,
        "response_bytes": len(data),
        "latency_s": round(time.monotonic() - call.start, 4),
    }


def _broken(
    call: _Call, detail: str, answered: bool, attempt: int, waited: float, tries: dict[str, Any]
) -> float | dict[str, Any]:
    """A failed connection: the seconds to wait before the next try (when nothing reached the
    client yet), or the failure passed on."""
    if not answered:  # nothing reached the client yet: it may be retried
        delay = call.gw.again(call.route, attempt, waited, None, None, detail)
        if delay is not None:
            return delay
        call.client.send_json(
            502,
            {
                "type": "error",
                "error": {
                    "type": "api_error",
                    "message": f"pytest-scylla gateway: upstream unreachable ({detail})",
                },
            },
        )
    else:
        call.gw.infra(call.route, None, None, detail)
        call.client.close_connection = True
    return {
        "status": None,
        "error": detail,
        **tries,
        "latency_s": round(time.monotonic() - call.start, 4),
    }


def _relayed(
    call: _Call,
    status: int,
    reader: UsageReader,
    first_byte: float | None,
    size: int,
    tries: dict[str, Any],
) -> dict[str, Any]:
    """The call log's entry of an answer relayed whole, its usage priced and counted."""
    result: dict[str, Any] = {
        "status": status,
        "reader": reader,
        "response_bytes": size,
        **tries,
        "latency_s": round(time.monotonic() - call.start, 4),
        "ttft_s": round((first_byte or time.monotonic()) - call.start, 4),
    }
    if reader.usage:  # Gemini names the model in the path (its answer's modelVersion if sent)
        model = reader.model or (gemini_wire.match(call.path) or (None, False))[0]
        dollars = call.gw.account(call.route, model, reader.usage)
        result.update(
            model=model,
            usage=reader.usage,
            cost_usd=round(dollars, 6),
            stop_reason=reader.stop_reason,
        )
    return result
