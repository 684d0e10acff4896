"""A judge through the Anthropic SDK: a forced `submit_verdict` tool call, via the gateway."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from pytest_scylla.core import pricing
from pytest_scylla.formats.rubric import RubricItem
from pytest_scylla.judging import service, verdict
from pytest_scylla.judging.judges import MAX_ATTEMPTS, JudgeResult, JudgeSpec
from pytest_scylla.judging.prompt import Prompt

DUMMY_KEY = "sk-ant-scylla-judge-dummy-key-the-gateway-holds-the-real-one"
MAX_TOKENS = 4096


def _add_usage(result: JudgeResult, usage: Any, model: str) -> None:
    counts = {
        k: int(getattr(usage, k, 0) or 0)
        for k in (
            "input_tokens",
            "output_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
        )
    }
    for key, value in counts.items():
        result.usage[key] = result.usage.get(key, 0) + value
    result.cost_usd += pricing.cost(model, counts)


def ask(
    spec: JudgeSpec, prompt: Prompt, items: Sequence[RubricItem], base_url: str, result: JudgeResult
) -> None:
    """Through the session's judge service when this process has one, else here."""
    if not service.ask_remote(spec, prompt, items, base_url, result):
        ask_here(spec, prompt, items, base_url, result)


def _client(base_url: str) -> Any:
    import anthropic

    return anthropic.Anthropic(base_url=base_url, api_key=DUMMY_KEY, max_retries=2, timeout=300.0)


def ask_here(
    spec: JudgeSpec, prompt: Prompt, items: Sequence[RubricItem], base_url: str, result: JudgeResult
) -> None:
    # a client per call (the URL names the call's gateway route), closed after it: its pooled
    # connections would otherwise stay open until the garbage collector finds it
    with _client(base_url) as client:
        _converse(client, spec, prompt, items, result)


class SharedClient:
    """One SDK client for every call of a process that asks many (the judge service): each call
    takes it with its own route's URL (`with_options` keeps the one connection pool). A client
    made per call spent ~20 ms of CPU loading its TLS trust store (profiled)."""

    def __init__(self) -> None:
        self._client: Any = None
        self._lock = threading.Lock()

    def __call__(
        self,
        spec: JudgeSpec,
        prompt: Prompt,
        items: Sequence[RubricItem],
        base_url: str,
        result: JudgeResult,
    ) -> None:
        with self._lock:
            if self._client is None:
                self._client = _client(base_url)
        _converse(self._client.with_options(base_url=base_url), spec, prompt, items, result)

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()


def _converse(
    client: Any, spec: JudgeSpec, prompt: Prompt, items: Sequence[RubricItem], result: JudgeResult
) -> None:
    messages: list[dict[str, Any]] = [_question(prompt)]
    create: Any = client.messages.create  # plain dicts, as the API documents them
    for _ in range(MAX_ATTEMPTS):
        result.attempts += 1
        response = create(
            model=spec.model,
            max_tokens=MAX_TOKENS,
            system=prompt.system,
            tools=[verdict.tool(items)],
            tool_choice={"type": "tool", "name": verdict.TOOL_NAME},
            messages=messages,
        )
        result.response_model = response.model
        _add_usage(result, response.usage, response.model or spec.model)
        call = next((b for b in response.content if b.type == "tool_use"), None)
        found = (
            ["no submit_verdict call in the answer"]
            if call is None
            else verdict.problems(call.input, items)
        )
        if not found and call is not None:
            result.valid, result.verdict = True, dict(call.input)
            return
        result.errors.append("; ".join(found))
        messages += _rejection(response, call, found)


def _question(prompt: Prompt) -> dict[str, Any]:
    """The first message: the cacheable prefix (task and rubric), then the run's material."""
    return {
        "role": "user",
        "content": [
            {"type": "text", "text": prompt.prefix, "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": prompt.material},
        ],
    }


def _rejection(response: Any, call: Any, found: list[str]) -> list[dict[str, Any]]:
    """The judge's rejected answer and the reply that asks for a valid verdict again."""
    feedback = (
        "The verdict was not accepted: "
        + "; ".join(found)
        + ". Call submit_verdict again with a complete, valid verdict."
    )
    return [
        {
            "role": "assistant",
            "content": [b.model_dump(exclude_none=True) for b in response.content],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": call.id,
                    "is_error": True,
                    "content": feedback,
                }
            ]
            if call is not None
            else feedback,
        },
    ]
