"""Server-sent events of the Messages API: build them (oracle); read usage from them and from the
other vendors' answers (proxy): OpenAI's chat completions and Responses, Google's Gemini."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from pytest_scylla.run.gateway import gemini_wire
from pytest_scylla.run.gateway.said import Answer

USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
)
# the events that end an OpenAI Responses stream, each carrying the whole response
RESPONSE_ENDS = ("response.completed", "response.incomplete", "response.failed")


def event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def message_events(
    msg_id: str, model: str, blocks: list[dict[str, Any]], stop_reason: str, usage: dict[str, int]
) -> Iterator[bytes]:
    """The stream of one assistant message holding `blocks` (text or tool_use)."""
    start_usage = {**usage, "output_tokens": 1}
    yield event(
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": msg_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": start_usage,
            },
        },
    )
    for index, block in enumerate(blocks):
        yield from _block_events(index, block)
    yield event(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": usage["output_tokens"]},
        },
    )
    yield event("message_stop", {"type": "message_stop"})


def _block_events(index: int, block: dict[str, Any]) -> Iterator[bytes]:
    """The start, one delta and the stop of content block `index` (text or tool_use)."""
    if block["type"] == "text":
        yield event(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "text", "text": ""},
            },
        )
        yield event(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "text_delta", "text": block["text"]},
            },
        )
    else:
        yield event(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {**block, "input": {}},
            },
        )
        yield event(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])},
            },
        )
    yield event("content_block_stop", {"type": "content_block_stop", "index": index})


def message_json(
    msg_id: str, model: str, blocks: list[dict[str, Any]], stop_reason: str, usage: dict[str, int]
) -> dict[str, Any]:
    return {
        "id": msg_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage,
    }


class UsageReader:
    """Feed it the bytes of a streamed response as they pass; it keeps model, usage and stop."""

    def __init__(self) -> None:
        self._buffer = b""
        self.model: str | None = None
        self.usage: dict[str, int] = {}
        self.stop_reason: str | None = None
        self.error: dict[str, Any] | None = None
        self.answer = Answer()  # what the model said (Anthropic's wire), for `said.Said`

    def feed(self, chunk: bytes) -> None:
        # events end at a blank line; Google's streams end their lines with \r\n (a pair that a
        # chunk may split: the buffer is normalised whole, so its halves meet again)
        self._buffer = (self._buffer + chunk).replace(b"\r\n", b"\n")
        while True:
            cut = self._buffer.find(b"\n\n")
            if cut < 0:
                return
            raw, self._buffer = self._buffer[:cut], self._buffer[cut + 2 :]
            for line in raw.split(b"\n"):
                if line.startswith(b"data:"):
                    self._data(line[5:].strip())

    def _data(self, payload: bytes) -> None:
        try:
            data = json.loads(payload)
        except ValueError:
            return
        if not isinstance(data, dict):
            return
        kind = data.get("type")
        if kind is None and gemini_wire.is_response(data):  # one chunk of Gemini's stream
            self._gemini(data)
        elif kind is None and "choices" in data:  # one chunk of a Chat Completions stream
            self._chat(data)
        elif kind == "message_start":
            message = data.get("message", {})
            self.model = message.get("model")
            self._usage(message.get("usage"))
            self.answer.event(data)
        elif kind in ("content_block_start", "content_block_delta"):
            self.answer.event(data)
        elif kind == "message_delta":
            self._usage(data.get("usage"))
            self.stop_reason = data.get("delta", {}).get("stop_reason") or self.stop_reason
        elif kind in RESPONSE_ENDS and isinstance(data.get("response"), dict):
            self._response(data["response"])
        elif kind == "error":
            self.error = data.get("error")

    def _response(self, response: dict[str, Any]) -> None:
        """An OpenAI Responses `response` (Codex): cached input is part of `input_tokens`."""
        self.model = response.get("model") or self.model
        self.stop_reason = response.get("status") or self.stop_reason
        usage = response.get("usage")
        if isinstance(usage, dict) and isinstance(usage.get("input_tokens"), int):
            cached = (usage.get("input_tokens_details") or {}).get("cached_tokens") or 0
            self.usage = {
                "input_tokens": usage["input_tokens"] - int(cached),
                "cache_read_input_tokens": int(cached),
                "output_tokens": int(usage.get("output_tokens") or 0),
            }
        if isinstance(response.get("error"), dict):
            self.error = response["error"]

    def _gemini(self, data: dict[str, Any]) -> None:
        """A GenerateContentResponse (whole, or a streamed chunk: its `usageMetadata` is the
        running total, so the last one counts), or Google's error."""
        self.model = data.get("modelVersion") or self.model
        self.usage = gemini_wire.billed(data.get("usageMetadata")) or self.usage
        candidates = data.get("candidates")
        if isinstance(candidates, list) and candidates and isinstance(candidates[0], dict):
            self.stop_reason = candidates[0].get("finishReason") or self.stop_reason
        error = data.get("error")
        if isinstance(error, dict):  # Google names its kind `status` (e.g. RESOURCE_EXHAUSTED)
            self.error = {**error, "type": error.get("status") or "error"}

    def _chat(self, data: dict[str, Any]) -> None:
        """OpenAI Chat Completions, whole or a streamed chunk (the usage comes in the last one,
        asked for with `stream_options.include_usage`, as opencode does): cached prompt tokens
        are counted inside `prompt_tokens`."""
        self.model = data.get("model") or self.model
        usage = data.get("usage")
        if isinstance(usage, dict) and isinstance(usage.get("prompt_tokens"), int):
            details = usage.get("prompt_tokens_details")
            cached = int((details.get("cached_tokens") if isinstance(details, dict) else 0) or 0)
            self.usage = {
                "input_tokens": usage["prompt_tokens"] - cached,
                "output_tokens": int(usage.get("completion_tokens") or 0),
                **({"cache_read_input_tokens": cached} if cached else {}),
            }
        choices = data.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            self.stop_reason = choices[0].get("finish_reason") or self.stop_reason

    def _usage(self, usage: Any) -> None:
        if isinstance(usage, dict):
            for key in USAGE_FIELDS:
                if isinstance(usage.get(key), int):
                    self.usage[key] = usage[key]

    @classmethod
    def of(cls, data: bytes, streamed: bool) -> UsageReader:
        """A reader that has read a whole answer's bytes."""
        reader = cls()
        if streamed:
            reader.feed(data)
        else:
            reader.read_json(data)
        return reader

    def read_json(self, body: bytes) -> None:
        """A non-streamed response body (Gemini's streamGenerateContent without `alt=sse` is a
        JSON array of its chunks)."""
        try:
            data = json.loads(body)
        except ValueError:
            return
        for item in data if isinstance(data, list) else [data]:
            if isinstance(item, dict):
                self._whole(item)

    def _whole(self, data: dict[str, Any]) -> None:
        if data.get("object") == "response":
            self._response(data)
        elif gemini_wire.is_response(data):
            self._gemini(data)
        elif "choices" in data:
            self._chat(data)
        else:
            self.model = data.get("model")  # Anthropic's Messages
            self._usage(data.get("usage"))
            self.answer.whole(data)
            self.stop_reason = data.get("stop_reason")
            if data.get("type") == "error":
                self.error = data.get("error")
