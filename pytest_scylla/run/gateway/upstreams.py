"""Where a gateway call goes: the oracle, which answers in the gateway itself, or a real upstream
(Anthropic's API for agents and judges, an OpenAI-compatible server for Codex, opencode and
`openai:` judges, Google's Gemini API for Gemini CLI and `gemini:` judges), reached with the
harness's own credential, retried on rate limits and outages, and streamed back unchanged while
its usage is read for the call log and the budget."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from typing import Any, Protocol

from pytest_scylla.run.gateway import (
    allowlist,
    gemini_wire,
    latency,
    openai_wire,
    oracle,
    oracle_wire,
)
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

    def send_json(self, status: int, payload: dict[str, Any],
                  headers: Sequence[tuple[str, str]] = ()) -> bytes: ...
    def start_chunks(self, status: int, headers: list[tuple[str, str]]) -> None: ...
    def chunk(self, data: bytes) -> None: ...
    def end_chunks(self) -> None: ...


class Gate(Protocol):
    """What an upstream needs of the gateway: its retry rule, accounting and HTTP client."""

    upstream_url: str

    def again(self, route: Route, attempt: int, waited: float, status: int | None,
              retry_after: str | None, detail: str) -> float | None: ...
    def infra(self, route: Route, status: int | None, retry_after: str | None,
              detail: str, retried: bool = False) -> dict[str, Any]: ...
    def to_client(self, headers: Sequence[tuple[str, str]]) -> list[tuple[str, str]]: ...
    def account(self, route: Route, model: str | None, usage: dict[str, int]) -> float: ...
    def http(self) -> Any: ...

HOP_HEADERS = frozenset({"connection", "keep-alive", "transfer-encoding", "content-length",
                         "content-encoding", "host", "proxy-connection", "upgrade", "te",
                         "trailer"})
CLIENT_AUTH = frozenset({"x-api-key", "authorization", "x-goog-api-key"})
CLIENT_AUTH_QUERY = frozenset({"key", "access_token"})  # Google also takes these in the URL
STALL_LIMIT_SECONDS = 24 * 3600


def from_oracle(gw: Gate, route: Route, path: str, request: dict[str, Any], body: bytes,
            client: Client, start: float) -> dict[str, Any]:
    gemini = gemini_wire.match(path)  # Gemini names the model, and streaming, in the path
    model = gemini[0] if gemini else str(request.get("model") or "oracle")
    if path.startswith("/v1/messages/count_tokens"):
        client.send_json(200, {"input_tokens": max(1, len(body) // 4)})
        return {"status": 200, "latency_s": round(time.monotonic() - start, 4)}
    assert route.script is not None, "oracle route without a script"
    if route.script.faults:  # simulated model latency (not for the harness's baseline probe)
        route.closed.wait(latency.seconds(route.key.rsplit("-", 1)[0], route.calls))
    attempt, waited = 0, 0.0
    while True:
        reply = oracle.answer(route.script, request, attempt)
        if reply.error is None or not retryable(reply.status):
            break
        retry_after = dict(reply.headers).get("retry-after")
        delay = gw.again(route, attempt, waited, reply.status, retry_after,
                            reply.error.get("message", ""))
        if delay is None:
            break
        attempt, waited = attempt + 1, waited + delay
    tries = {"attempts": attempt + 1, "retry_wait_s": round(waited, 3)} if attempt else {}
    if reply.stall:
        route.closed.wait(STALL_LIMIT_SECONDS)
        client.close_connection = True
        return {"status": None, "stalled": True,
                "latency_s": round(time.monotonic() - start, 4)}
    if reply.error is not None:
        retry_after = dict(reply.headers).get("retry-after")
        if not retryable(reply.status):
            gw.infra(route, reply.status, retry_after, reply.error.get("message", ""))
        client.send_json(reply.status, {"type": "error", "error": reply.error},
                         gw.to_client(reply.headers))
        return {"status": reply.status, "retry_after": retry_after,
                "error": reply.error.get("type"), **tries,
                "latency_s": round(time.monotonic() - start, 4)}
    usage = oracle_wire.usage_for(len(body), reply, first_call=not route.usage)
    msg_id = f"msg_oracle_{route.key}_{route.calls:04d}"
    stream = gemini[1] if gemini else bool(request.get("stream"))
    first_byte: float | None = None
    size = 0
    pieces = oracle_wire.render(reply, msg_id, model, usage, stream, request, path)
    if gemini or path.endswith((openai_wire.PATH, "/responses")):  # priced as OpenAI and
        # Google bill: no cache writes
        usage = openai_wire.billed(usage)
    reader = UsageReader()  # what the oracle said, read as a real upstream's answer is
    if stream:
        client.start_chunks(200, [("content-type", "text/event-stream"),
                                  ("cache-control", "no-cache")])
        for piece in pieces:
            first_byte = first_byte or time.monotonic()
            client.chunk(piece)
            reader.feed(piece)
            size += len(piece)
        client.end_chunks()
    else:
        data = client.send_json(200, json.loads(b"".join(pieces)))
        reader.read_json(data)
        first_byte, size = time.monotonic(), len(data)
    dollars = gw.account(route, model, usage)
    return {"status": 200, "reader": reader, "model": model, "usage": usage,
            "cost_usd": round(dollars, 6),
            "stop_reason": reply.stop_reason, "response_bytes": size, **tries,
            "ttft_s": round((first_byte or time.monotonic()) - start, 4),
            "latency_s": round(time.monotonic() - start, 4)}


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
    base = route.upstream_url or (gemini_wire.base_url() if route.upstream == "gemini"
                                  else gw.upstream_url)
    kept, _ = allowlist.query(query)
    return base + path + (f"?{kept}" if kept else "")


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


def forward(gw: Gate, route: Route, path: str, query: str, client: Client, body: bytes,
            start: float) -> dict[str, Any]:
    """Pass the call to the real upstream, retrying what may be retried; the call log's entry."""
    import httpx

    try:
        headers = _headers(route, client)
    except UpstreamSetupError as exc:
        client.send_json(401, {"type": "error", "error": {
            "type": "authentication_error", "message": f"pytest-scylla: {exc}"}})
        return {"status": 401, "error": "no credential",
                "latency_s": round(time.monotonic() - start, 4)}
    url = _url(gw, route, path, query)
    stripped = [h for h in allowlist.headers(client.headers.items())[1]  # but the expected:
                if h not in CLIENT_AUTH | HOP_HEADERS | allowlist.QUIET] + [  # key, framing
        f"?{name}" for name in allowlist.query(query)[1] if name not in CLIENT_AUTH_QUERY]
    noted = {"stripped": stripped} if stripped else {}
    attempt, waited = 0, 0.0
    while True:
        tries = {**noted, **({"attempts": attempt + 1, "retry_wait_s": round(waited, 3)}
                             if attempt else {})}
        reader = UsageReader()
        first_byte: float | None = None
        size = 0
        answered = False  # the status line went to the client: this call cannot be retried
        try:
            with gw.http().stream("POST", url, content=body, headers=headers) as response:
                status = response.status_code
                retry_after = response.headers.get("retry-after")
                if retryable(status):  # small error bodies: read, then retry or pass on
                    data = response.read()
                    reader.read_json(data)
                    detail = (reader.error or {}).get("message", "") or f"HTTP {status}"
                    delay = gw.again(route, attempt, waited, status, retry_after, detail)
                    if delay is not None:
                        attempt, waited = attempt + 1, waited + delay
                        continue
                    client.start_chunks(status, gw.to_client(
                        [(k, v) for k, v in response.headers.items()
                         if k.lower() not in HOP_HEADERS]))
                    client.chunk(data)
                    client.end_chunks()
                    return {"status": status, "retry_after": retry_after,
                            "error": (reader.error or {}).get("type"), **tries,
                            "response_bytes": len(data),
                            "latency_s": round(time.monotonic() - start, 4)}
                client.start_chunks(status, [(k, v) for k, v in response.headers.items()
                                             if k.lower() not in HOP_HEADERS])
                answered = True
                first_byte, size = _relay(response, client, reader)
        except httpx.HTTPError as exc:
            detail = f"{type(exc).__name__}: {exc}"
            if not answered:  # nothing reached the client yet: it may be retried
                delay = gw.again(route, attempt, waited, None, None, detail)
                if delay is not None:
                    attempt, waited = attempt + 1, waited + delay
                    continue
                client.send_json(502, {"type": "error", "error": {
                    "type": "api_error", "message": f"pytest-scylla gateway: upstream "
                                                    f"unreachable ({detail})"}})
            else:
                gw.infra(route, None, None, detail)
                client.close_connection = True
            return {"status": None, "error": detail, **tries,
                    "latency_s": round(time.monotonic() - start, 4)}
        break
    result: dict[str, Any] = {"status": status, "reader": reader, "response_bytes": size, **tries,
                              "latency_s": round(time.monotonic() - start, 4),
                              "ttft_s": round((first_byte or time.monotonic()) - start, 4)}
    if reader.usage:  # Gemini names the model in the path (its answer's modelVersion if sent)
        model = reader.model or (gemini_wire.match(path) or (None, False))[0]
        dollars = gw.account(route, model, reader.usage)
        result.update(model=model, usage=reader.usage, cost_usd=round(dollars, 6),
                      stop_reason=reader.stop_reason)
    return result
