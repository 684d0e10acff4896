"""One reading of a model request, whatever wire format the CLI speaks: the tools it offers (with
their input schemas), and how far the oracle's own tool calls have got in the conversation.

Anthropic Messages (Claude Code) keeps tools in `tools[].name/input_schema` and the conversation
in `messages` (`tool_use` / `tool_result` blocks); OpenAI Responses (Codex) in `tools[]` of type
`function` or `namespace` (an MCP server's tools: `mcp__<server>` holding each tool) and `input`
items (`function_call` / `function_call_output`); Chat Completions in `tools[].function` and
`messages` with `tool_calls` / role `tool`; Gemini in `tools[].functionDeclarations` and
`contents` parts (`functionCall` / `functionResponse`). MCP tools are named `mcp__<server>__<tool>`
in every format, as Claude Code names them.
"""

from __future__ import annotations

import json
import re
from typing import Any

TOOL_ID = "toolu_oracle_"
EXIT_CODE = re.compile(r"(?:Process exited with code|Exit code:?) (-?\d+)", re.IGNORECASE)


def _dicts(items: Any) -> list[dict[str, Any]]:
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


def tools(request: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every tool the request offers: its name -> its input schema."""
    found: dict[str, dict[str, Any]] = {}
    for tool in _dicts(request.get("tools")):
        if isinstance(tool.get("functionDeclarations"), list):  # Gemini
            for decl in _dicts(tool["functionDeclarations"]):
                found[str(decl.get("name", ""))] = (
                    decl.get("parametersJsonSchema") or decl.get("parameters") or {}
                )
        elif tool.get("type") == "namespace":  # Responses: a group, e.g. an MCP server's
            for inner in _dicts(tool.get("tools")):
                found[f"{tool.get('name')}__{inner.get('name')}"] = inner.get("parameters") or {}
        elif isinstance(tool.get("function"), dict):  # Chat Completions
            found[str(tool["function"].get("name", ""))] = tool["function"].get("parameters") or {}
        elif tool.get("name"):  # Anthropic, Responses functions
            found[str(tool["name"])] = tool.get("input_schema") or tool.get("parameters") or {}
    found.pop("", None)
    return found


def _call_ids(request: dict[str, Any]) -> list[str]:
    """The ids of the tool calls made so far, in order."""
    ids: list[str] = []
    for message in _dicts(request.get("messages")):
        ids += [
            str(b.get("id", ""))
            for b in _dicts(message.get("content"))
            if b.get("type") == "tool_use"
        ]
        ids += [str(c.get("id", "")) for c in _dicts(message.get("tool_calls"))]
    ids += [
        str(i.get("call_id", ""))
        for i in _dicts(request.get("input"))
        if i.get("type") == "function_call"
    ]
    for content in _dicts(request.get("contents")):
        ids += [
            str((p.get("functionCall") or {}).get("id", ""))
            for p in _dicts(content.get("parts"))
            if isinstance(p.get("functionCall"), dict)
        ]
    return ids


def _failed(output: Any) -> bool:
    """Whether a tool's output says it failed (a non-zero exit, or an error object)."""
    if isinstance(output, dict):  # Gemini: {"error": ...}, or {"output": "... Exit Code: N"}
        return "error" in output or _failed(str(output.get("output", "Exit Code: 0")))
    found = EXIT_CODE.search(output if isinstance(output, str) else json.dumps(output))
    return found is not None and found.group(1) != "0"


def last_failed(request: dict[str, Any]) -> bool:
    """Whether a tool result that ends the conversation says its call failed: Anthropic marks
    it (`is_error`); the other formats carry the tool's output, read for an exit code or an
    error object."""
    messages = _dicts(request.get("messages"))
    if messages and isinstance(messages[-1].get("content"), list):  # Anthropic
        return any(
            b.get("is_error")
            for b in _dicts(messages[-1]["content"])
            if b.get("type") == "tool_result"
        )
    outputs: list[Any] = []
    for message in reversed(messages):  # Chat Completions
        if message.get("role") != "tool":
            break
        outputs.append(message.get("content"))
    for item in reversed(_dicts(request.get("input"))):  # Responses (Codex): a command's
        if item.get("type") != "function_call_output":  # output states its exit code, a
            break  # refused call only why
        found = EXIT_CODE.search(str(item.get("output")))
        if found is None or found.group(1) != "0":
            return True
    contents = _dicts(request.get("contents"))
    if contents:  # Gemini
        outputs += [
            p["functionResponse"].get("response")
            for p in _dicts(contents[-1].get("parts"))
            if isinstance(p.get("functionResponse"), dict)
        ]
    return any(_failed(out) for out in outputs)


def oracle_turns(request: dict[str, Any]) -> tuple[int, bool]:
    """(how many oracle tool turns are in the conversation, whether one of the last turn's calls
    failed). Oracle calls carry ids `toolu_oracle_[L<n>_]<turn>_<i>`; a turn is one reply."""
    turns = {
        i[len(TOOL_ID) :].rsplit("_", 1)[0]
        for i in _call_ids(request)
        if i.startswith(TOOL_ID) and not i.startswith(TOOL_ID + "verdict")
    }
    return len(turns), last_failed(request)


def first_user_text(request: dict[str, Any]) -> str:
    """The text of the conversation's first user message (where a sub-agent's brief is)."""
    for message in _dicts(request.get("messages")) + [
        i for i in _dicts(request.get("input")) if i.get("type", "message") == "message"
    ]:
        if message.get("role") == "user":
            content = message.get("content")
            return (
                content
                if isinstance(content, str)
                else "\n".join(str(b.get("text", "")) for b in _dicts(content))
            )
    for content in _dicts(request.get("contents")):  # Gemini
        if content.get("role") == "user":
            return "\n".join(str(p.get("text", "")) for p in _dicts(content.get("parts")))
    return ""
