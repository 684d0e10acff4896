"""When the oracle itself fails, and how a run's record tells.

The oracle sees the results of its own tool calls in the CLI's next request. When one says the
call was refused or failed (the CLI's "File has not been read yet", a non-zero exit, a missing
tool), the oracle does not go on as if the change were made: it answers that request with an
API error whose message starts with `MARK` and names the call and what the CLI said. The CLI
stops on it, and the run ends as `infra_error` (the gateway's upstream failed) with that message
in its reason: the simulated model failed, not the case and not its reference solution.

`failure(record)` reads that back from a run.json; `applied(record)` says whether the oracle
applied the reference solution fully (its every call accepted, its summary given).
"""

from __future__ import annotations

import json
from typing import Any

MARK = "the oracle failed"
ERROR_TYPE = "invalid_request_error"  # an error no CLI retries: the run ends at once
STATUS = 400
DONE = "Done"  # how the oracle's summary starts, once all its calls were accepted
WROTE = "scylla-oracle wrote"  # what the oracle's shell writer prints (`oracle_shell`)


def _dicts(items: Any) -> list[dict[str, Any]]:
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(_text(b.get("text", b)) if isinstance(b, dict) else str(b) for b in content)
    return json.dumps(content, ensure_ascii=False)


def _anthropic(messages: list[dict[str, Any]]) -> list[str]:
    """Each refused call of the last turn: its tool, file and the CLI's words."""
    calls = {
        str(b.get("id")): b
        for m in messages
        for b in _dicts(m.get("content"))
        if b.get("type") == "tool_use"
    }
    said = []
    for block in _dicts(messages[-1].get("content")):
        if block.get("type") == "tool_result" and block.get("is_error"):
            call = calls.get(str(block.get("tool_use_id")), {})
            args = call.get("input") or {}
            target = args.get("file_path") or args.get("command") or ""
            said.append(
                f"{call.get('name', 'a tool')} {str(target)[:120]}: {_text(block.get('content'))}"
            )
    return said


def _other(request: dict[str, Any]) -> list[str]:
    """The last outputs of tools in the other wires (Chat Completions, Responses, Gemini)."""
    said = []
    for message in reversed(_dicts(request.get("messages"))):
        if message.get("role") != "tool":
            break
        said.append(_text(message.get("content")))
    for item in reversed(_dicts(request.get("input"))):
        if item.get("type") != "function_call_output":
            break
        said.append(_text(item.get("output")))
    contents = _dicts(request.get("contents"))
    for part in _dicts(contents[-1].get("parts")) if contents else []:
        if isinstance(part.get("functionResponse"), dict):
            said.append(_text(part["functionResponse"].get("response")))
    return said


def unconfirmed(request: dict[str, Any]) -> bool:
    """Whether a shell write of the oracle's went unconfirmed. opencode's shell results (Chat
    Completions) carry no exit code ('E2BIG: argument list too long' and a command's output
    look alike), so there a write counts as done only when its output says so."""
    messages = _dicts(request.get("messages"))
    outputs = []
    for message in reversed(messages):
        if message.get("role") != "tool":
            break
        outputs.append(_text(message.get("content")))
    if not outputs or len(messages) == len(outputs):
        return False
    calls = _dicts(messages[-1 - len(outputs)].get("tool_calls"))
    writes = [c for c in calls if WROTE in str((c.get("function") or {}).get("arguments"))]
    return len(writes) > sum(WROTE in output for output in outputs)


def message(request: dict[str, Any]) -> str:
    """The error the oracle answers with after a refused call: what was refused and why."""
    messages = _dicts(request.get("messages"))
    said = []
    if messages and isinstance(messages[-1].get("content"), list):
        said = _anthropic(messages)
    said = said or _other(request)
    what = "; ".join(" ".join(s.split())[:300] for s in said) or "a tool call failed"
    return (
        f"{MARK} (scylla's scripted model, not the case's reference solution): the CLI "
        f"refused or failed its call, so the change was not applied: {what}"
    )


def cannot(why: str) -> str:
    """The error the oracle answers with when it cannot apply the solution at all."""
    return f"{MARK} (scylla's scripted model, not the case's reference solution): {why}"


def failure(record: dict[str, Any]) -> str | None:
    """The oracle's own failure in a run's record (its reason), or None."""
    reason = str(record.get("reason") or "")
    at = reason.find(MARK)
    return reason[at:] if at >= 0 else None


def applied(record: dict[str, Any]) -> bool | None:
    """Whether the oracle applied the case's reference solution fully in this run: every call it
    made was accepted and it gave its summary. None when the run was not an oracle run that
    was to apply the solution (mode `solution`)."""
    script = record.get("oracle_script") or {}
    if script.get("mode") != "solution":
        return None
    final = str(record.get("final_message") or "")
    return failure(record) is None and final.startswith(DONE)
