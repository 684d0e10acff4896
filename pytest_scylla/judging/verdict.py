"""The verdict tool: its JSON Schema (built from the rubric's judge items) and validation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytest_scylla.formats.rubric import RubricItem

TOOL_NAME = "submit_verdict"
NA = "N/A"


def schema(items: Sequence[RubricItem]) -> dict[str, Any]:
    """Every item required; N/A allowed only where the rubric names an N/A condition."""
    properties: dict[str, Any] = {}
    for item in items:
        number = {"type": "number", "minimum": 0, "maximum": item.points}
        achieved = {"anyOf": [number, {"const": NA}]} if item.na_condition else number
        properties[item.id] = {
            "type": "object",
            "additionalProperties": False,
            "required": ["achieved", "reason"],
            "properties": {"achieved": achieved, "reason": {"type": "string", "minLength": 1}},
        }
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["items", "reasoning"],
        "properties": {
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": [i.id for i in items],
                "properties": properties,
            },
            "reasoning": {"type": "string"},
        },
    }


def tool(items: Sequence[RubricItem]) -> dict[str, Any]:
    return {
        "name": TOOL_NAME,
        "description": "Submit the score of every rubric item.",
        "input_schema": schema(items),
    }


def problems(verdict: Any, items: Sequence[RubricItem]) -> list[str]:
    """Why `verdict` is not acceptable (empty when it is), in words a judge can act on."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema(items))
    found = []
    for error in sorted(validator.iter_errors(verdict), key=lambda e: list(e.path)):
        where = "/".join(str(p) for p in error.path) or "(top level)"
        found.append(f"{where}: {error.message}")
    if not found and items and all(v.get("achieved") == NA for v in verdict["items"].values()):
        found.append("items: every item is N/A; score the items that apply")
    return found


def from_json(text: str, items: Sequence[RubricItem]) -> tuple[Any, list[str]]:
    """A verdict answered as JSON text (the `openai:` and `gemini:` judges): the parsed answer
    and why it is not acceptable (empty when it is)."""
    import json

    try:
        answer = json.loads(text)
    except ValueError as exc:
        return None, [f"not JSON: {exc}"]
    return answer, problems(answer, items)


def again(found: list[str]) -> str:
    """What a judge is told after an unacceptable verdict."""
    return (
        "The verdict was not accepted: "
        + "; ".join(found)
        + ". Answer again with complete, valid JSON."
    )
