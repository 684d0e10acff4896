"""The oracle speaks each vendor's wire format, checked with each vendor's own client: OpenAI
Chat Completions (an `openai:` judge is answered offline under `--scylla-oracle`), OpenAI's
Responses API (Codex) and Google's generateContent (Gemini CLI) — whole and streamed, each
vendor's usage shape, every call through its gateway route: logged, priced from the dated
table, budgeted.

Here the in-process tests; the sessions are in `tests/e2e/test_wire_formats.py`."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import openai  # a dev dependency: OpenAI's own client reads the Responses API
import pytest

from pytest_scylla.core import pricing
from pytest_scylla.run.gateway import Gateway, Route
from pytest_scylla.run.gateway.oracle.model import Script

VERDICT = {"items": {"Q1": {"achieved": 1, "reason": "fine"}}, "reasoning": "ok"}
SCHEMA = {
    "type": "json_schema",
    "json_schema": {"name": "submit_verdict", "strict": True, "schema": {"type": "object"}},
}


def _sse(data: bytes) -> list[dict[str, object]]:
    events = [line[6:] for line in data.decode().split("\n\n") if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    return [json.loads(e) for e in events[:-1]]


def test_chat_completions_whole_and_streamed(tmp_path: Path) -> None:
    gateway = Gateway().start()
    try:
        gateway.open(
            Route(
                key="j",
                log_path=tmp_path / "calls.jsonl",
                upstream="oracle",
                script=Script(mode="judge", workspace=tmp_path, files=(), verdict=VERDICT),
            )
        )
        url = gateway.base_url("j") + "/chat/completions"
        request = {
            "model": "gpt-5-mini",
            "response_format": SCHEMA,
            "messages": [{"role": "user", "content": "judge this " * 50}],
        }
        with httpx.Client(timeout=30) as client:
            whole = client.post(url, json=request).json()
            streamed = client.post(
                url, json={**request, "stream": True, "stream_options": {"include_usage": True}}
            )
            refused = client.post(gateway.base_url("j") + "/embeddings", json=request)
    finally:
        gateway.stop()
    assert whole["object"] == "chat.completion"
    choice = whole["choices"][0]
    assert (choice["finish_reason"], json.loads(choice["message"]["content"])) == ("stop", VERDICT)
    usage = whole["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"] > 0
    assert usage["prompt_tokens_details"]["cached_tokens"] == 0  # the route's first call
    chunks = _sse(streamed.content)
    text = "".join(
        str(c["choices"][0]["delta"].get("content") or "")  # type: ignore[index]
        for c in chunks
        if c["choices"]
    )
    assert json.loads(text) == VERDICT
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"]["prompt_tokens_details"]["cached_tokens"] > 0  # type: ignore
    assert refused.status_code == 403  # only the model endpoints are open
    calls = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert [c["endpoint"] for c in calls[:2]] == ["/chat/completions"] * 2
    first = calls[0]
    assert first["usage"] == {
        "input_tokens": usage["prompt_tokens"],
        "cache_read_input_tokens": 0,
        "output_tokens": usage["completion_tokens"],
    }
    assert first["cost_usd"] == pytest.approx(pricing.cost("gpt-5-mini", first["usage"]), abs=1e-6)
    assert pricing.price("gpt-5-mini").known


def test_tool_calls_in_the_chat_completions_shape() -> None:
    """A reply of tool calls (an agent's turn) is `tool_calls` with JSON arguments and the
    finish reason `tool_calls`, whole and streamed; text is the content."""
    from pytest_scylla.run.gateway import openai_wire

    blocks = [
        {"type": "text", "text": "Writing."},
        {
            "type": "tool_use",
            "id": "c1",
            "name": "Write",
            "input": {"file_path": "a.py", "content": "x = 1\n"},
        },
    ]
    counts = {"input_tokens": 10, "cache_read_input_tokens": 90, "output_tokens": 5}
    whole = openai_wire.completion("m", "gpt-5", blocks, "tool_use", counts, structured=False)
    choice = whole["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] == "Writing."
    call = choice["message"]["tool_calls"][0]
    assert (call["id"], call["function"]["name"], json.loads(call["function"]["arguments"])) == (
        "c1",
        "Write",
        {"file_path": "a.py", "content": "x = 1\n"},
    )
    assert whole["usage"] == {
        "prompt_tokens": 100,
        "completion_tokens": 5,
        "total_tokens": 105,
        "prompt_tokens_details": {"cached_tokens": 90},
    }
    assert openai_wire.billed(counts) == {
        "input_tokens": 10,
        "cache_read_input_tokens": 90,
        "output_tokens": 5,
    }
    streamed = _sse(
        b"".join(openai_wire.chunks("m", "gpt-5", blocks, "tool_use", counts, structured=False))
    )
    deltas = [c["choices"][0] for c in streamed if c["choices"]]  # type: ignore[index]
    assert [d["finish_reason"] for d in deltas][-1] == "tool_calls"  # type: ignore[index]
    streamed_call = next(
        d["delta"]["tool_calls"][0]
        for d in deltas  # type: ignore[index]
        if "tool_calls" in d["delta"]
    )  # type: ignore[operator]
    assert streamed_call["function"]["name"] == "Write"


def test_the_responses_api_read_by_the_openai_sdk(tmp_path: Path) -> None:
    """The Responses API (Codex's) as OpenAI's own SDK reads it, streamed and whole: a judge's
    structured verdict as the output text, usage with the cached input, the call logged and
    priced; a turn of tool calls as `function_call` items."""
    gateway = Gateway().start()
    try:
        gateway.open(
            Route(
                key="j",
                log_path=tmp_path / "calls.jsonl",
                upstream="oracle",
                script=Script(mode="judge", workspace=tmp_path, files=(), verdict=VERDICT),
            )
        )
        client = openai.OpenAI(base_url=gateway.base_url("j"), api_key="dummy", max_retries=0)
        form = {
            "format": {
                "type": "json_schema",
                "name": "submit_verdict",
                "schema": {"type": "object"},
                "strict": True,
            }
        }
        whole = client.responses.create(model="gpt-5", input="judge this " * 40, text=form)
        with client.responses.stream(model="gpt-5", input="judge this " * 40, text=form) as stream:
            kinds = [event.type for event in stream]
            final = stream.get_final_response()
    finally:
        gateway.stop()
    assert json.loads(whole.output_text) == VERDICT
    assert whole.usage is not None
    assert whole.usage.input_tokens_details.cached_tokens == 0
    assert json.loads(final.output_text) == VERDICT
    assert final.usage is not None
    assert final.usage.input_tokens_details.cached_tokens > 0  # the route's second call
    assert kinds[0] == "response.created"
    assert kinds[-1] == "response.completed"
    assert "response.output_text.delta" in kinds
    calls = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert [c["endpoint"] for c in calls] == ["/responses"] * 2
    assert all(c["cost_usd"] > 0 for c in calls)
    from pytest_scylla.run.gateway import responses_wire

    turn = responses_wire.response(
        "r",
        "gpt-5",
        [{"type": "tool_use", "id": "c1", "name": "shell", "input": {"command": ["ls"]}}],
        {"input_tokens": 5, "output_tokens": 2},
        structured=False,
    )
    parsed = openai.types.responses.Response.model_validate(turn)
    call = parsed.output[0]
    assert (call.type, call.call_id, json.loads(call.arguments)) == (  # type: ignore[union-attr]
        "function_call",
        "c1",
        {"command": ["ls"]},
    )
    # every event of a streamed turn (text and a tool call) is valid as the SDK types it
    from pydantic import TypeAdapter

    adapter = TypeAdapter(openai.types.responses.ResponseStreamEvent)
    raw = b"".join(
        responses_wire.events(
            "r",
            "gpt-5",
            [
                {"type": "text", "text": "Listing."},
                {"type": "tool_use", "id": "c1", "name": "shell", "input": {"command": ["ls"]}},
            ],
            {"input_tokens": 5, "output_tokens": 2},
            structured=False,
        )
    ).decode()
    typed = [
        adapter.validate_python(json.loads(chunk.split("\ndata: ", 1)[1]))
        for chunk in raw.strip().split("\n\n")
    ]
    assert [e.sequence_number for e in typed] == list(range(1, len(typed) + 1))
    assert typed[-1].type == "response.completed"


def test_gemini_generate_content_read_by_googles_sdk(tmp_path: Path) -> None:
    """Gemini's generateContent (Gemini CLI's wire format) as Google's own SDK reads it, whole
    and streamed: the model from the path, a judge's JSON verdict as the text, usage with the
    cached prompt, logged and priced (cached input at Gemini's 0.25x); a turn of tool calls as
    `functionCall` parts."""
    from google import genai
    from google.genai import types

    from pytest_scylla.run.gateway import gemini_wire

    gateway = Gateway().start()
    try:
        gateway.open(
            Route(
                key="j",
                log_path=tmp_path / "calls.jsonl",
                upstream="oracle",
                script=Script(mode="judge", workspace=tmp_path, files=(), verdict=VERDICT),
            )
        )
        client = genai.Client(
            api_key="dummy",
            http_options=types.HttpOptions(base_url=gateway.base_url("j"), api_version="v1beta"),
        )
        config = types.GenerateContentConfig(response_mime_type="application/json")
        whole = client.models.generate_content(
            model="gemini-2.5-pro", contents="judge this " * 40, config=config
        )
        pieces = list(
            client.models.generate_content_stream(
                model="gemini-2.5-pro", contents="judge this " * 40, config=config
            )
        )
    finally:
        gateway.stop()
    assert json.loads(whole.text or "") == VERDICT
    assert whole.usage_metadata is not None
    assert whole.usage_metadata.cached_content_token_count is None  # the first call
    assert json.loads("".join(p.text or "" for p in pieces)) == VERDICT
    last = pieces[-1]
    assert last.usage_metadata is not None
    assert (last.usage_metadata.cached_content_token_count or 0) > 0
    assert last.candidates is not None
    assert last.candidates[0].finish_reason == types.FinishReason.STOP
    calls = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert [(c["endpoint"], c["model"]) for c in calls] == [
        ("/v1beta/models/gemini-2.5-pro:generateContent", "gemini-2.5-pro"),
        ("/v1beta/models/gemini-2.5-pro:streamGenerateContent", "gemini-2.5-pro"),
    ]
    read = calls[1]["usage"]["cache_read_input_tokens"]
    assert read > 0
    assert calls[1]["cost_usd"] == pytest.approx(
        pricing.cost("gemini-2.5-pro", calls[1]["usage"]), abs=1e-6
    )
    assert pricing.price("gemini-2.5-pro").cache_read == 0.25
    turn = types.GenerateContentResponse.model_validate(
        gemini_wire.response(
            "r",
            "gemini-2.5-pro",
            [
                {
                    "type": "tool_use",
                    "id": "c1",
                    "name": "run_shell_command",
                    "input": {"command": "ls"},
                }
            ],
            "tool_use",
            {"input_tokens": 5, "output_tokens": 2},
            structured=False,
        )
    )
    assert turn.function_calls is not None
    assert (turn.function_calls[0].name, turn.function_calls[0].args) == (
        "run_shell_command",
        {"command": "ls"},
    )
