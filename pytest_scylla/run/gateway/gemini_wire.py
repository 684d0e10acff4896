"""Google's Gemini API (what Gemini CLI and `gemini:` judges speak): as the oracle answers it,
`generateContent` as one `GenerateContentResponse` (text parts, `functionCall` parts),
`streamGenerateContent` as its server-sent chunks (`alt=sse`), with `usageMetadata` (cached prompt
tokens inside `promptTokenCount`); as the gateway relays it to Google (`base_url`, usage read by
`billed`). The model is named in the path, not the body. A request for JSON output
(`generationConfig.responseMimeType`) on a judge's route is answered with the verdict's JSON."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from typing import Any

from pytest_scylla.run.gateway import openai_wire

PATH = re.compile(
    r"^/v1(?:beta|alpha)?/models/(?P<model>[A-Za-z0-9._-]+):"
    r"(?P<method>generateContent|streamGenerateContent)$"
)
FINISH = {"tool_use": "STOP", "end_turn": "STOP", "max_tokens": "MAX_TOKENS"}
BASE_URL = "https://generativelanguage.googleapis.com"
BASE_URL_ENV = "GOOGLE_GEMINI_BASE_URL"  # the variable Gemini CLI reads for the same purpose
# the keys of a GenerateContentResponse (a whole answer, or one streamed chunk)
RESPONSE_KEYS = ("candidates", "usageMetadata", "modelVersion", "promptFeedback")


def base_url(environ: dict[str, str] | None = None) -> str:
    """Where real Gemini calls go: GOOGLE_GEMINI_BASE_URL, else Google's Gemini API."""
    env = os.environ if environ is None else environ
    return (env.get(BASE_URL_ENV) or BASE_URL).rstrip("/")


def match(path: str) -> tuple[str, bool] | None:
    """(the model, whether it streams) of a Gemini model endpoint; None for other paths."""
    found = PATH.match(path)
    if found is None:
        return None
    return found["model"], found["method"] == "streamGenerateContent"


def wants_json(request: dict[str, Any]) -> bool:
    config = request.get("generationConfig")
    return isinstance(config, dict) and config.get("responseMimeType") == "application/json"


def is_response(data: dict[str, Any]) -> bool:
    """Whether a JSON object is Gemini's: a GenerateContentResponse, or Google's error shape
    (`{"error": {"code", "message", "status"}}`)."""
    error = data.get("error")
    return any(k in data for k in RESPONSE_KEYS) or (
        isinstance(error, dict) and "status" in error and "type" not in error
    )


def billed(metadata: Any) -> dict[str, int]:
    """What the gateway prices of a `usageMetadata`: uncached input (`promptTokenCount`, which
    includes the cached part, less `cachedContentTokenCount`, plus any `toolUsePromptTokenCount`),
    cached input, and output (`candidatesTokenCount` plus `thoughtsTokenCount`: thinking is
    billed as output). Empty when it holds no counts."""
    if not isinstance(metadata, dict) or not any(
        isinstance(metadata.get(k), int) for k in ("promptTokenCount", "candidatesTokenCount")
    ):
        return {}

    def n(key: str) -> int:
        value = metadata.get(key)
        return value if isinstance(value, int) and value > 0 else 0

    cached = n("cachedContentTokenCount")
    return {
        "input_tokens": max(0, n("promptTokenCount") + n("toolUsePromptTokenCount") - cached),
        "cache_read_input_tokens": cached,
        "output_tokens": n("candidatesTokenCount") + n("thoughtsTokenCount"),
    }


def usage(counts: dict[str, int]) -> dict[str, int]:
    chat = openai_wire.usage(counts)
    out = {
        "promptTokenCount": chat["prompt_tokens"],
        "candidatesTokenCount": chat["completion_tokens"],
        "totalTokenCount": chat["total_tokens"],
    }
    cached = chat["prompt_tokens_details"]["cached_tokens"]
    return {**out, "cachedContentTokenCount": cached} if cached else out


def _parts(blocks: list[dict[str, Any]], structured: bool) -> list[dict[str, Any]]:
    calls = [b for b in blocks if b["type"] == "tool_use"]
    if structured and calls:
        return [{"text": json.dumps(calls[0]["input"])}]
    return [
        {"text": b["text"]}
        if b["type"] == "text"
        else {"functionCall": {"id": b["id"], "name": b["name"], "args": b["input"]}}
        for b in blocks
    ]


def response(
    msg_id: str,
    model: str,
    blocks: list[dict[str, Any]],
    stop_reason: str,
    counts: dict[str, int],
    structured: bool,
) -> dict[str, Any]:
    return {
        "candidates": [
            {
                "content": {"role": "model", "parts": _parts(blocks, structured)},
                "finishReason": FINISH.get(stop_reason, "STOP"),
                "index": 0,
            }
        ],
        "usageMetadata": usage(counts),
        "modelVersion": model,
        "responseId": msg_id,
    }


def chunks(
    msg_id: str,
    model: str,
    blocks: list[dict[str, Any]],
    stop_reason: str,
    counts: dict[str, int],
    structured: bool,
) -> Iterator[bytes]:
    """One SSE chunk a part, the last with the finish reason and the usage."""
    parts = _parts(blocks, structured) or [{"text": ""}]
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        body: dict[str, Any] = {
            "candidates": [{"content": {"role": "model", "parts": [part]}, "index": 0}],
            "modelVersion": model,
            "responseId": msg_id,
        }
        if last:
            body["candidates"][0]["finishReason"] = FINISH.get(stop_reason, "STOP")
            body["usageMetadata"] = usage(counts)
        yield f"data: {json.dumps(body, separators=(',', ':'))}\r\n\r\n".encode()
