"""A judge on any OpenAI-compatible endpoint (vLLM, llama.cpp, Ollama, …): chat completions
with a JSON-schema response format, validated like the Anthropic judge's tool input. Its calls
go to the gateway, which relays them to the endpoint (adding `OPENAI_API_KEY` when set), so they
are logged, priced and budgeted like every other model call."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytest_scylla.core import pricing
from pytest_scylla.formats.rubric import RubricItem
from pytest_scylla.judging import verdict
from pytest_scylla.judging.judges import MAX_ATTEMPTS, JudgeResult, JudgeSpec
from pytest_scylla.judging.prompt import Prompt


def ask(
    spec: JudgeSpec, prompt: Prompt, items: Sequence[RubricItem], base_url: str, result: JudgeResult
) -> None:
    import httpx

    url = base_url.rstrip("/") + "/chat/completions"
    headers = {"content-type": "application/json"}
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": prompt.system},
        {
            "role": "user",
            "content": prompt.prefix
            + "\n\n"
            + prompt.material
            + "\n\nAnswer with the verdict as JSON matching the given schema.",
        },
    ]
    response_format = {
        "type": "json_schema",
        "json_schema": {"name": verdict.TOOL_NAME, "strict": True, "schema": verdict.schema(items)},
    }
    with httpx.Client(timeout=300.0) as client:
        for _ in range(MAX_ATTEMPTS):
            result.attempts += 1
            reply = client.post(
                url,
                headers=headers,
                json={
                    "model": spec.model,
                    "messages": messages,
                    "response_format": response_format,
                    "temperature": 0,
                },
            )
            reply.raise_for_status()
            data = reply.json()
            usage = data.get("usage") or {}
            cached = int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
            counts = {
                "input_tokens": int(usage.get("prompt_tokens", 0)) - cached,
                "output_tokens": int(usage.get("completion_tokens", 0)),
                **({"cache_read_input_tokens": cached} if cached else {}),
            }
            for key, value in counts.items():
                result.usage[key] = result.usage.get(key, 0) + value
            result.cost_usd += pricing.cost(spec.model, counts)  # as the gateway prices it
            text = data["choices"][0]["message"].get("content") or ""
            answer, found = verdict.from_json(text, items)
            if not found:
                result.valid, result.verdict = True, answer
                return
            result.errors.append("; ".join(found))
            messages += [
                {"role": "assistant", "content": text},
                {"role": "user", "content": verdict.again(found)},
            ]
