"""A judge on Google's Gemini API (`gemini:<model>`): `generateContent` with a JSON response
schema, validated like the Anthropic judge's tool input. Its calls go to the gateway's `gemini`
upstream, which relays them to Google (or GOOGLE_GEMINI_BASE_URL) with the harness's
GEMINI_API_KEY (the judge holds a dummy key), so they are logged, priced and budgeted like every
other model call; under --scylla-oracle the oracle answers them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytest_scylla.core import pricing
from pytest_scylla.formats.rubric import RubricItem
from pytest_scylla.judging import verdict
from pytest_scylla.judging.judges import MAX_ATTEMPTS, JudgeResult, JudgeSpec
from pytest_scylla.judging.prompt import Prompt
from pytest_scylla.run.gateway import gemini_wire

DUMMY_KEY = "scylla-judge-dummy-key-the-gateway-holds-the-real-one"
# the JSON Schema keywords Gemini's `responseJsonSchema` takes (Google's documentation); the
# verdict schema's others are rewritten (`const`) or left to `verdict.problems` (`minLength`)
SUPPORTED = frozenset(
    {
        "$id",
        "$defs",
        "$ref",
        "$anchor",
        "type",
        "format",
        "title",
        "description",
        "enum",
        "items",
        "prefixItems",
        "minItems",
        "maxItems",
        "minimum",
        "maximum",
        "anyOf",
        "oneOf",
        "properties",
        "additionalProperties",
        "required",
        "propertyOrdering",
    }
)


def response_schema(node: Any) -> Any:
    """The verdict schema in the keywords Gemini supports: `const` as a one-value `enum`."""
    if isinstance(node, list):
        return [response_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "const":
            out["enum"] = [value]
            if isinstance(value, str):
                out.setdefault("type", "string")
        elif key in ("properties", "$defs"):  # names, then schemas
            out[key] = {name: response_schema(v) for name, v in value.items()}
        elif key in SUPPORTED:
            out[key] = response_schema(value)
    return out


def _text(data: dict[str, Any]) -> tuple[str, str | None]:
    """The answer's text (its thought parts left out), or why there is none."""
    candidates = data.get("candidates")
    first = (
        candidates[0]
        if isinstance(candidates, list) and candidates and isinstance(candidates[0], dict)
        else {}
    )
    parts = (first.get("content") or {}).get("parts") or []
    text = "".join(
        str(p.get("text") or "") for p in parts if isinstance(p, dict) and not p.get("thought")
    )
    if text:
        return text, None
    blocked = (data.get("promptFeedback") or {}).get("blockReason")
    return "", (
        f"no answer text (finishReason {first.get('finishReason')}"
        + (f", blockReason {blocked}" if blocked else "")
        + ")"
    )


def ask(
    spec: JudgeSpec, prompt: Prompt, items: Sequence[RubricItem], base_url: str, result: JudgeResult
) -> None:
    import httpx

    url = f"{base_url.rstrip('/')}/v1beta/models/{spec.model}:generateContent"
    headers = {"content-type": "application/json", "x-goog-api-key": DUMMY_KEY}
    contents: list[dict[str, Any]] = [
        {
            "role": "user",
            "parts": [
                {
                    "text": prompt.prefix
                    + "\n\n"
                    + prompt.material
                    + "\n\nAnswer with the verdict as JSON matching the given schema."
                }
            ],
        }
    ]
    config = {
        "responseMimeType": "application/json",
        "responseJsonSchema": response_schema(verdict.schema(items)),
        "temperature": 0,
    }
    with httpx.Client(timeout=300.0) as client:
        for _ in range(MAX_ATTEMPTS):
            result.attempts += 1
            reply = client.post(
                url,
                headers=headers,
                json={
                    "systemInstruction": {"parts": [{"text": prompt.system}]},
                    "contents": contents,
                    "generationConfig": config,
                },
            )
            if reply.is_error:  # the gateway's message (no key, budget spent) or Google's
                raise RuntimeError(f"HTTP {reply.status_code}: {reply.text[:500]}")
            data = reply.json()
            model = str(data.get("modelVersion") or spec.model)
            result.response_model = model
            counts = gemini_wire.billed(data.get("usageMetadata"))
            for key, value in counts.items():
                result.usage[key] = result.usage.get(key, 0) + value
            result.cost_usd += pricing.cost(model, counts)  # as the gateway prices it
            text, missing = _text(data)
            answer, found = verdict.from_json(text, items) if missing is None else (None, [missing])
            if not found:
                result.valid, result.verdict = True, answer
                return
            result.errors.append("; ".join(found))
            contents += [
                {"role": "model", "parts": [{"text": text or "(no answer)"}]},
                {"role": "user", "parts": [{"text": verdict.again(found)}]},
            ]
