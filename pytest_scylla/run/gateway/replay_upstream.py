"""The recording as the upstream (`--scylla-replay`): a call answered with the recorded answer
it matches, or refused as diverged."""

from __future__ import annotations

from typing import Any

from pytest_scylla.run.gateway.routes import Route
from pytest_scylla.run.gateway.sse import UsageReader
from pytest_scylla.run.gateway.upstreams import Client, Gate


def from_recording(
    gw: Gate, route: Route, seq: int, request: dict[str, Any], client: Client
) -> dict[str, Any]:
    """The call answered from the recording, or refused as diverged; the call log's entry."""
    assert route.replay is not None
    recorded, why = route.replay.match(request)
    if recorded is None:
        message = f"replay diverged at call {seq}: {why}"
        with route.lock:
            route.replay_diverged = route.replay_diverged or message
        client.send_json(
            400,
            {
                "type": "error",
                "error": {"type": "invalid_request_error", "message": f"pytest-scylla {message}"},
            },
        )
        return {"status": 400, "error": "replay diverged", "refused": message}
    status, kind, counted, data = route.replay.answer(recorded, route.private)
    client.start_chunks(status, [("content-type", kind)])
    client.chunk(data)
    client.end_chunks()
    result: dict[str, Any] = {
        "status": status,
        "replayed": recorded,
        "response_bytes": len(data),
        "reader": UsageReader.of(  # what the model said
            data, kind == "text/event-stream"
        ),
    }
    if counted["usage"]:
        dollars = gw.account(route, counted["model"], counted["usage"])
        result.update(counted, cost_usd=round(dollars, 6))
    return result
