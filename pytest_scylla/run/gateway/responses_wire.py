"""OpenAI's Responses API (what Codex speaks), as the oracle answers it: one reply's blocks as a
`response` object with its `output` items (a message's `output_text`, or `function_call`s), or
as the event stream that builds it (`response.created` ... `response.completed`, each event
numbered). A block answering a JSON-schema text format (a judge's verdict) is the message's
text. Usage in the Responses shape (cached input inside `input_tokens`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from pytest_scylla.run.gateway import openai_wire

PATH = "/responses"


def schema_name(request: dict[str, Any]) -> str | None:
    """The name of the JSON schema the request's text format asks for, if any."""
    form = (
        (request.get("text") or {}).get("format") if isinstance(request.get("text"), dict) else None
    )
    if not isinstance(form, dict) or form.get("type") != "json_schema":
        return None
    return str(form.get("name"))


def usage(counts: dict[str, int]) -> dict[str, Any]:
    chat = openai_wire.usage(counts)
    return {
        "input_tokens": chat["prompt_tokens"],
        "input_tokens_details": {
            "cached_tokens": chat["prompt_tokens_details"]["cached_tokens"],
            "cache_write_tokens": 0,
        },  # no cache writes billed
        "output_tokens": chat["completion_tokens"],
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": chat["total_tokens"],
    }


def _items(msg_id: str, blocks: list[dict[str, Any]], structured: bool) -> list[dict[str, Any]]:
    texts = [b["text"] for b in blocks if b["type"] == "text"]
    calls = [b for b in blocks if b["type"] == "tool_use"]
    if structured and calls:
        texts, calls = [json.dumps(calls[0]["input"])], []
    items: list[dict[str, Any]] = []
    if texts:
        items.append(
            {
                "type": "message",
                "id": f"{msg_id}_m",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "".join(texts), "annotations": []}],
            }
        )
    items += [
        {
            "type": "function_call",
            "id": f"{msg_id}_f{i}",
            "call_id": b["id"],
            "name": b["name"],
            "arguments": json.dumps(b["input"]),
            "status": "completed",
        }
        for i, b in enumerate(calls)
    ]
    return items


def response(
    msg_id: str,
    model: str,
    blocks: list[dict[str, Any]],
    counts: dict[str, int],
    structured: bool,
    status: str = "completed",
) -> dict[str, Any]:
    done = status == "completed"
    return {
        "id": msg_id,
        "object": "response",
        "created_at": 0,
        "model": model,
        "status": status,
        "output": _items(msg_id, blocks, structured) if done else [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": usage(counts) if done else None,
    }


def events(
    msg_id: str, model: str, blocks: list[dict[str, Any]], counts: dict[str, int], structured: bool
) -> Iterator[bytes]:
    """The stream: created, then each output item added, its text or arguments in one delta,
    done, then completed with the whole response and its usage."""
    number = 0

    def event(kind: str, **data: Any) -> bytes:
        nonlocal number
        number += 1
        body = {"type": kind, "sequence_number": number, **data}
        return f"event: {kind}\ndata: {json.dumps(body, separators=(',', ':'))}\n\n".encode()

    yield event(
        "response.created",
        response=response(msg_id, model, blocks, counts, structured, status="in_progress"),
    )
    for index, item in enumerate(_items(msg_id, blocks, structured)):
        steps = _text_steps if item["type"] == "message" else _call_steps
        for kind, data in steps(item, index):
            yield event(kind, **data)
        yield event("response.output_item.done", output_index=index, item=item)
    yield event("response.completed", response=response(msg_id, model, blocks, counts, structured))


def _text_steps(item: dict[str, Any], index: int) -> list[tuple[str, dict[str, Any]]]:
    """The events of a message item up to its done: added, then its text in one delta."""
    text = item["content"][0]["text"]
    part = {"type": "output_text", "text": "", "annotations": []}
    at = {"item_id": item["id"], "output_index": index, "content_index": 0}
    return [
        (
            "response.output_item.added",
            {"output_index": index, "item": {**item, "status": "in_progress", "content": []}},
        ),
        ("response.content_part.added", {**at, "part": part}),
        ("response.output_text.delta", {**at, "delta": text, "logprobs": []}),
        ("response.output_text.done", {**at, "text": text, "logprobs": []}),
        ("response.content_part.done", {**at, "part": {**part, "text": text}}),
    ]


def _call_steps(item: dict[str, Any], index: int) -> list[tuple[str, dict[str, Any]]]:
    """The events of a function_call item up to its done: added, then its arguments in one
    delta."""
    at = {"item_id": item["id"], "output_index": index}
    return [
        (
            "response.output_item.added",
            {"output_index": index, "item": {**item, "arguments": "", "status": "in_progress"}},
        ),
        ("response.function_call_arguments.delta", {**at, "delta": item["arguments"]}),
        ("response.function_call_arguments.done", {**at, "arguments": item["arguments"]}),
    ]
