"""The oracle's replies on the wire: the scripted reply (`oracle.Reply`) in the format of the
endpoint the CLI or judge called (Anthropic Messages, OpenAI Chat Completions or Responses,
Gemini's generateContent), streamed or whole, with token counts shaped like the real API's."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from pytest_scylla.run.gateway import gemini_wire, openai_wire, responses_wire, sse
from pytest_scylla.run.gateway.oracle.model import Reply


def usage_for(request_bytes: int, reply: Reply, first_call: bool) -> dict[str, int]:
    """Token counts shaped like the real API's: ~4 bytes a token, a cached stable prefix."""
    total_in = max(1, request_bytes // 4)
    prefix = int(total_in * 0.85)
    return {
        "input_tokens": total_in - prefix,
        "cache_creation_input_tokens": prefix if first_call else 0,
        "cache_read_input_tokens": 0 if first_call else prefix,
        "output_tokens": max(1, len(json.dumps(reply.blocks)) // 4 + 8),
    }


def render(
    reply: Reply,
    msg_id: str,
    model: str,
    usage: dict[str, int],
    stream: bool,
    request: dict[str, Any] | None = None,
    path: str = "/v1/messages",
) -> Iterator[bytes]:
    """The reply in the wire format of the endpoint called: Anthropic Messages, or OpenAI Chat
    Completions or Responses, or Gemini's generateContent (`path`), streamed or whole."""
    gemini = gemini_wire.match(path)
    if gemini is not None and reply.error is None:
        structured = gemini_wire.wants_json(request or {})
        if gemini[1]:
            yield from gemini_wire.chunks(
                msg_id, model, reply.blocks, reply.stop_reason, usage, structured
            )
        else:
            yield json.dumps(
                gemini_wire.response(
                    msg_id, model, reply.blocks, reply.stop_reason, usage, structured
                )
            ).encode()
    elif path.endswith(responses_wire.PATH) and reply.error is None:
        structured = responses_wire.schema_name(request or {}) is not None
        if stream:
            yield from responses_wire.events(msg_id, model, reply.blocks, usage, structured)
        else:
            yield json.dumps(
                responses_wire.response(msg_id, model, reply.blocks, usage, structured)
            ).encode()
    elif path.endswith(openai_wire.PATH) and reply.error is None:
        structured = openai_wire.schema_name(request or {}) is not None
        if stream:
            yield from openai_wire.chunks(
                msg_id, model, reply.blocks, reply.stop_reason, usage, structured
            )
        else:
            yield json.dumps(
                openai_wire.completion(
                    msg_id, model, reply.blocks, reply.stop_reason, usage, structured
                )
            ).encode()
    elif reply.error is not None:
        yield json.dumps({"type": "error", "error": reply.error}).encode()
    elif stream:
        yield from sse.message_events(msg_id, model, reply.blocks, reply.stop_reason, usage)
    else:
        yield json.dumps(
            sse.message_json(msg_id, model, reply.blocks, reply.stop_reason, usage)
        ).encode()
