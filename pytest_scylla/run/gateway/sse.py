"""Server-sent events of the Messages API: build them (oracle), read usage from them (proxy)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_creation_input_tokens",
                "cache_read_input_tokens")
# OpenAI-compatible chat completions (judges of kind `openai:`) name the same counts otherwise
OPENAI_USAGE = {"prompt_tokens": "input_tokens", "completion_tokens": "output_tokens"}
# the events that end an OpenAI Responses stream, each carrying the whole response
RESPONSE_ENDS = ("response.completed", "response.incomplete", "response.failed")


def event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def message_events(msg_id: str, model: str, blocks: list[dict[str, Any]], stop_reason: str,
                   usage: dict[str, int]) -> Iterator[bytes]:
    """The stream of one assistant message holding `blocks` (text or tool_use)."""
    start_usage = {**usage, "output_tokens": 1}
    yield event("message_start", {"type": "message_start", "message": {
        "id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": start_usage}})
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            yield event("content_block_start", {"type": "content_block_start", "index": index,
                                                "content_block": {"type": "text", "text": ""}})
            yield event("content_block_delta", {"type": "content_block_delta", "index": index,
                                                "delta": {"type": "text_delta",
                                                          "text": block["text"]}})
        else:
            yield event("content_block_start", {"type": "content_block_start", "index": index,
                                                "content_block": {**block, "input": {}}})
            yield event("content_block_delta", {"type": "content_block_delta", "index": index,
                                                "delta": {"type": "input_json_delta",
                                                          "partial_json": json.dumps(
                                                              block["input"])}})
        yield event("content_block_stop", {"type": "content_block_stop", "index": index})
    yield event("message_delta", {"type": "message_delta",
                                  "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                                  "usage": {"output_tokens": usage["output_tokens"]}})
    yield event("message_stop", {"type": "message_stop"})


def message_json(msg_id: str, model: str, blocks: list[dict[str, Any]], stop_reason: str,
                 usage: dict[str, int]) -> dict[str, Any]:
    return {"id": msg_id, "type": "message", "role": "assistant", "model": model,
            "content": blocks, "stop_reason": stop_reason, "stop_sequence": None, "usage": usage}


class UsageReader:
    """Feed it the bytes of a streamed response as they pass; it keeps model, usage and stop."""

    def __init__(self) -> None:
        self._buffer = b""
        self.model: str | None = None
        self.usage: dict[str, int] = {}
        self.stop_reason: str | None = None
        self.error: dict[str, Any] | None = None

    def feed(self, chunk: bytes) -> None:
        self._buffer += chunk
        while True:
            cut = self._buffer.find(b"\n\n")
            if cut < 0:
                return
            raw, self._buffer = self._buffer[:cut], self._buffer[cut + 2:]
            for line in raw.split(b"\n"):
                if line.startswith(b"data:"):
                    self._data(line[5:].strip())

    def _data(self, payload: bytes) -> None:
        try:
            data = json.loads(payload)
        except ValueError:
            return
        kind = data.get("type")
        if kind == "message_start":
            message = data.get("message", {})
            self.model = message.get("model")
            self._usage(message.get("usage"))
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
            self.usage = {"input_tokens": usage["input_tokens"] - int(cached),
                          "cache_read_input_tokens": int(cached),
                          "output_tokens": int(usage.get("output_tokens") or 0)}
        if isinstance(response.get("error"), dict):
            self.error = response["error"]

    def _usage(self, usage: Any) -> None:
        if isinstance(usage, dict):
            for key in USAGE_FIELDS:
                if isinstance(usage.get(key), int):
                    self.usage[key] = usage[key]
            for theirs, ours in OPENAI_USAGE.items():
                if isinstance(usage.get(theirs), int):
                    self.usage[ours] = usage[theirs]

    def read_json(self, body: bytes) -> None:
        """A non-streamed response body."""
        try:
            data = json.loads(body)
        except ValueError:
            return
        if isinstance(data, dict) and data.get("object") == "response":
            self._response(data)
        elif isinstance(data, dict):
            self.model = data.get("model")
            self._usage(data.get("usage"))
            choices = data.get("choices")
            self.stop_reason = data.get("stop_reason") or (
                choices[0].get("finish_reason") if isinstance(choices, list) and choices
                and isinstance(choices[0], dict) else None)
            if data.get("type") == "error":
                self.error = data.get("error")


