"""OpenAI Chat Completions, as the oracle answers it: one reply's blocks as a `chat.completion`
(or its `chat.completion.chunk` stream ending in `data: [DONE]`), with OpenAI's usage shape
(cached prompt tokens are part of `prompt_tokens`, named in `prompt_tokens_details`). A block
answering a JSON-schema `response_format` (a judge's verdict) is the message's content; other
tool calls are `tool_calls`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

PATH = "/chat/completions"
FINISH = {"tool_use": "tool_calls", "end_turn": "stop", "max_tokens": "length"}


def schema_name(request: dict[str, Any]) -> str | None:
    """The name of the JSON schema the request asks its answer to follow, if any."""
    form = request.get("response_format")
    if not isinstance(form, dict) or form.get("type") != "json_schema":
        return None
    schema = form.get("json_schema")
    return str(schema.get("name")) if isinstance(schema, dict) else None


def usage(anthropic_usage: dict[str, int]) -> dict[str, Any]:
    """OpenAI's usage from the oracle's counts (a cache write is plain input there)."""
    cached = anthropic_usage.get("cache_read_input_tokens", 0)
    prompt = (
        anthropic_usage.get("input_tokens", 0)
        + cached
        + anthropic_usage.get("cache_creation_input_tokens", 0)
    )
    completion = anthropic_usage.get("output_tokens", 0)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached},
    }


def billed(anthropic_usage: dict[str, int]) -> dict[str, int]:
    """What the gateway prices: uncached input, cached input (read), output."""
    cached = anthropic_usage.get("cache_read_input_tokens", 0)
    return {
        "input_tokens": usage(anthropic_usage)["prompt_tokens"] - cached,
        "cache_read_input_tokens": cached,
        "output_tokens": anthropic_usage.get("output_tokens", 0),
    }


def _message(blocks: list[dict[str, Any]], structured: bool) -> dict[str, Any]:
    texts = [b["text"] for b in blocks if b["type"] == "text"]
    calls = [b for b in blocks if b["type"] == "tool_use"]
    if structured and calls:  # the verdict itself, as the schema's JSON
        return {"role": "assistant", "content": json.dumps(calls[0]["input"])}
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
    if calls:
        message["tool_calls"] = [
            {
                "id": b["id"],
                "type": "function",
                "function": {"name": b["name"], "arguments": json.dumps(b["input"])},
            }
            for b in calls
        ]
    return message


def completion(
    msg_id: str,
    model: str,
    blocks: list[dict[str, Any]],
    stop_reason: str,
    counts: dict[str, int],
    structured: bool,
) -> dict[str, Any]:
    message = _message(blocks, structured)
    finish = "stop" if structured else FINISH.get(stop_reason, "stop")
    return {
        "id": msg_id,
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": usage(counts),
    }


def chunks(
    msg_id: str,
    model: str,
    blocks: list[dict[str, Any]],
    stop_reason: str,
    counts: dict[str, int],
    structured: bool,
) -> Iterator[bytes]:
    """The streamed form: the role, the content (or each tool call), the finish reason, a last
    chunk with the usage (as `stream_options.include_usage` asks), then `[DONE]`."""
    whole = completion(msg_id, model, blocks, stop_reason, counts, structured)
    message, finish = whole["choices"][0]["message"], whole["choices"][0]["finish_reason"]

    def chunk(
        delta: dict[str, Any], reason: str | None = None, extra: dict[str, Any] | None = None
    ) -> bytes:
        body = {
            "id": msg_id,
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": reason}],
            **(extra or {}),
        }
        return f"data: {json.dumps(body, separators=(',', ':'))}\n\n".encode()

    yield chunk({"role": "assistant", "content": ""})
    if message.get("content"):
        yield chunk({"content": message["content"]})
    for index, call in enumerate(message.get("tool_calls") or []):
        yield chunk({"tool_calls": [{"index": index, **call}]})
    yield chunk({}, finish)
    final = {
        "id": msg_id,
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
        "choices": [],
        "usage": whole["usage"],
    }
    yield f"data: {json.dumps(final, separators=(',', ':'))}\n\n".encode()
    yield b"data: [DONE]\n\n"
