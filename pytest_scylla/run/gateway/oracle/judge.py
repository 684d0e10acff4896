"""The oracle as a judge: the prepared verdict through the forced tool call, made malformed by
`SCYLLA_ORACLE_JUDGE_FAULT` or harsh by `SCYLLA_ORACLE_JUDGE_HARSH`."""

from __future__ import annotations

import hashlib
import json
import os
import time
from typing import Any

from pytest_scylla.run.gateway import gemini_wire, openai_wire, responses_wire, turns

JUDGE_TOOL = "submit_verdict"
STRUCTURED_TOOL = "StructuredOutput"  # how `claude -p --json-schema` asks for its answer


def asks_for_verdict(request: dict[str, Any], prepared: bool) -> bool:
    """Whether `request` is a judge's (`prepared`: the run's script holds a verdict)."""
    choice = request.get("tool_choice")  # an object (Anthropic), or a word like "auto"
    return (
        (isinstance(choice, dict) and choice.get("name") == JUDGE_TOOL)
        or (prepared and set(turns.tools(request)) == {STRUCTURED_TOOL})
        # an OpenAI judge's schema
        or JUDGE_TOOL in (openai_wire.schema_name(request), responses_wire.schema_name(request))
        or (prepared and gemini_wire.wants_json(request))
    )


def _last_results(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool results in the conversation's last message (Anthropic)."""
    content = (request.get("messages") or [{}])[-1].get("content")
    return (
        [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
        if isinstance(content, list)
        else []
    )


def judge_faults() -> dict[str, str]:
    """`SCYLLA_ORACLE_JUDGE_FAULT=malformed-once:<model>,never-valid:<model>` -> {model: kind}."""
    entries = (
        e.strip().partition(":") for e in os.environ.get("SCYLLA_ORACLE_JUDGE_FAULT", "").split(",")
    )
    return {
        model: kind
        for kind, _, model in entries
        if kind in ("malformed-once", "never-valid") and model
    }


def _harsh(model: str, run_key: str) -> bool:
    """`SCYLLA_ORACLE_JUDGE_HARSH=<model>:<share>,...`: that judge awards nothing on the share
    of runs its run key picks (the same runs every time): a panel that disagrees on purpose."""
    for entry in os.environ.get("SCYLLA_ORACLE_JUDGE_HARSH", "").split(","):
        name, _, share = entry.strip().partition(":")
        if name == model:
            bucket = int(hashlib.sha256(f"{model}/{run_key}".encode()).hexdigest()[:8], 16)
            return bucket % 1000 < float(share or 1) * 1000
    return False


def verdict_call(
    prepared: dict[str, Any] | None, run_key: str, request: dict[str, Any]
) -> dict[str, Any] | None:
    """The tool call submitting the verdict, which faults make malformed (missing items); None
    once the CLI accepted it."""
    delay = float(os.environ.get("SCYLLA_ORACLE_JUDGE_DELAY", "0") or 0)
    if delay > 0:
        time.sleep(delay)
    if any(
        not b.get("is_error") and str(b.get("tool_use_id", "")).startswith("toolu_oracle_verdict")
        for b in _last_results(request)
    ):
        return None
    kind = judge_faults().get(str(request.get("model")))
    retry = any(m.get("role") == "assistant" for m in request.get("messages", [])) or (
        "previous verdict was not accepted" in json.dumps(request.get("messages", []))
    )
    verdict = prepared or {"items": {}, "reasoning": "no verdict prepared"}
    if kind == "never-valid" or (kind == "malformed-once" and not retry):
        items = dict(list(verdict["items"].items())[:-1])  # one item missing
        verdict = {"items": items, "reasoning": "(oracle fault: incomplete verdict)"}
    elif _harsh(str(request.get("model")), run_key):
        verdict = {
            "items": {i: {**v, "achieved": 0} for i, v in verdict["items"].items()},
            "reasoning": "(oracle: a harsh judge, disagreeing on purpose)",
        }
    name = STRUCTURED_TOOL if STRUCTURED_TOOL in turns.tools(request) else JUDGE_TOOL
    history = request.get("messages") or request.get("input") or []  # Responses: `input`
    return {
        "type": "tool_use",
        "id": f"toolu_oracle_verdict_{len(history)}",
        "name": name,
        "input": verdict,
    }
