"""The oracle as the upstream: its scripted reply, its errors retried as a real upstream's are,
sent in the call's wire format and counted (usage, price) as a real answer is."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

from pytest_scylla.run.gateway import gemini_wire, latency, openai_wire
from pytest_scylla.run.gateway.oracle import model as oracle
from pytest_scylla.run.gateway.oracle import wire as oracle_wire
from pytest_scylla.run.gateway.routes import Route, retryable
from pytest_scylla.run.gateway.sse import UsageReader
from pytest_scylla.run.gateway.upstreams import Client, Gate

STALL_LIMIT_SECONDS = 24 * 3600


def from_oracle(
    gw: Gate,
    route: Route,
    path: str,
    request: dict[str, Any],
    body: bytes,
    client: Client,
    start: float,
) -> dict[str, Any]:
    """The call answered by the oracle; the call log's entry."""
    if path.startswith("/v1/messages/count_tokens"):
        client.send_json(200, {"input_tokens": max(1, len(body) // 4)})
        return {"status": 200, "latency_s": round(time.monotonic() - start, 4)}
    assert route.script is not None, "oracle route without a script"
    if route.script.faults:  # simulated model latency (not for the harness's baseline probe)
        route.closed.wait(latency.seconds(route.key.rsplit("-", 1)[0], route.calls))
    reply, attempt, waited = _reply(gw, route, route.script, request)
    tries = {"attempts": attempt + 1, "retry_wait_s": round(waited, 3)} if attempt else {}
    if reply.stall:
        route.closed.wait(STALL_LIMIT_SECONDS)
        client.close_connection = True
        return {"status": None, "stalled": True, "latency_s": round(time.monotonic() - start, 4)}
    if reply.error is not None:
        return _error(gw, route, client, reply, reply.error, tries, start)
    return _answered(gw, route, path, request, body, client, reply, tries, start)


def _reply(
    gw: Gate, route: Route, script: oracle.Script, request: dict[str, Any]
) -> tuple[oracle.Reply, int, float]:
    """(the oracle's reply, retries, seconds waited): asked again while it is an error worth
    retrying and the gateway's retry rule allows another attempt."""
    attempt, waited = 0, 0.0
    while True:
        reply = oracle.answer(script, request, attempt)
        if reply.error is None or not retryable(reply.status):
            return reply, attempt, waited
        retry_after = dict(reply.headers).get("retry-after")
        delay = gw.again(
            route, attempt, waited, reply.status, retry_after, reply.error.get("message", "")
        )
        if delay is None:
            return reply, attempt, waited
        attempt, waited = attempt + 1, waited + delay


def _error(
    gw: Gate,
    route: Route,
    client: Client,
    reply: oracle.Reply,
    error: dict[str, Any],
    tries: dict[str, Any],
    start: float,
) -> dict[str, Any]:
    """The oracle's error passed on as an upstream's (noted as trouble when not retryable)."""
    retry_after = dict(reply.headers).get("retry-after")
    if not retryable(reply.status):
        gw.infra(route, reply.status, retry_after, error.get("message", ""))
    client.send_json(reply.status, {"type": "error", "error": error}, gw.to_client(reply.headers))
    return {
        "status": reply.status,
        "retry_after": retry_after,
        "error": error.get("type"),
        **tries,
        "latency_s": round(time.monotonic() - start, 4),
    }


def _answered(
    gw: Gate,
    route: Route,
    path: str,
    request: dict[str, Any],
    body: bytes,
    client: Client,
    reply: oracle.Reply,
    tries: dict[str, Any],
    start: float,
) -> dict[str, Any]:
    """The oracle's reply sent in the call's wire format, its usage priced and counted."""
    gemini = gemini_wire.match(path)  # Gemini names the model, and streaming, in the path
    model = gemini[0] if gemini else str(request.get("model") or "oracle")
    usage = oracle_wire.usage_for(len(body), reply, first_call=not route.usage)
    msg_id = f"msg_oracle_{route.key}_{route.calls:04d}"
    stream = gemini[1] if gemini else bool(request.get("stream"))
    pieces = oracle_wire.render(reply, msg_id, model, usage, stream, request, path)
    if gemini or path.endswith((openai_wire.PATH, "/responses")):  # priced as OpenAI and
        # Google bill: no cache writes
        usage = openai_wire.billed(usage)
    reader = UsageReader()  # what the oracle said, read as a real upstream's answer is
    first_byte, size = _send(client, pieces, stream, reader)
    dollars = gw.account(route, model, usage)
    return {
        "status": 200,
        "reader": reader,
        "model": model,
        "usage": usage,
        "cost_usd": round(dollars, 6),
        "stop_reason": reply.stop_reason,
        "response_bytes": size,
        **tries,
        "ttft_s": round((first_byte or time.monotonic()) - start, 4),
        "latency_s": round(time.monotonic() - start, 4),
    }


def _send(
    client: Client, pieces: Iterator[bytes], stream: bool, reader: UsageReader
) -> tuple[float | None, int]:
    """Write the reply to the client, streamed or as one JSON body, `reader` reading it; (the
    time of its first byte, its size)."""
    if not stream:
        data = client.send_json(200, json.loads(b"".join(pieces)))
        reader.read_json(data)
        return time.monotonic(), len(data)
    first_byte: float | None = None
    size = 0
    client.start_chunks(200, [("content-type", "text/event-stream"), ("cache-control", "no-cache")])
    for piece in pieces:
        first_byte = first_byte or time.monotonic()
        client.chunk(piece)
        reader.feed(piece)
        size += len(piece)
    client.end_chunks()
    return first_byte, size
