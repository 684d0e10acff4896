"""The oracle asked to write a task statement (`scylla cases mine --prompt-from-model` under
`--simulated`): the forced `write_task` call, its text made from the commit message in the
request by rule (the first line as the task, the rest as its details), never by a model."""

from __future__ import annotations

from typing import Any

from pytest_scylla.core import fence

TASK_TOOL = "write_task"
MESSAGE = fence.pattern("commit-message")  # the message's fence, closed only by its own tag


def asks_for_task(request: dict[str, Any]) -> bool:
    choice = request.get("tool_choice")
    return isinstance(choice, dict) and choice.get("name") == TASK_TOOL


def task_call(request: dict[str, Any]) -> dict[str, Any]:
    """The `write_task` tool call answering `request` (Anthropic Messages)."""
    said = []
    for message in request.get("messages") or []:
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        said += [str(b.get("text", "")) for b in blocks if isinstance(b, dict)]
    found = MESSAGE.search("\n".join(said))
    subject, _, rest = (found.group(2) if found else "").strip().partition("\n")
    task = f"Task: {subject.strip() or 'make the change the tests describe'}"
    if rest.strip():
        task += f"\n\nDetails:\n{rest.strip()}"
    return {
        "type": "tool_use",
        "id": "toolu_oracle_task",
        "name": TASK_TOOL,
        "input": {"task": task},
    }
