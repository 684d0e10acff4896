"""A run's transcript as a reader wants it: the agent's messages, each tool call folded with its
input and its result, and a sub-agent's whole conversation nested inside the call that started
it. The transcript is the agent's output, untrusted: it is read as data, every text escaped, and
its size bounded (the whole file stays in the run folder)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import IO, Any

from pytest_scylla.run.agents import claude_code
from pytest_scylla.run.checks import truncate

TEXT_LIMIT = 1_000  # characters of one message, tool input or tool result
RUN_TEXT_LIMIT = 3_000  # characters of those texts per run, together: past it only the calls'
# summaries are shown (a 1,000-run report stays near 10 MB; the whole file is in the run folder)
ITEM_LIMIT = 300  # messages and tool calls shown per run
SUMMARY_KEYS = ("command", "file_path", "path", "pattern", "skill", "url", "query")


@dataclass
class Call:
    name: str
    given: Any
    result: str | None = None
    failed: bool = False
    inner: list[Any] = field(default_factory=list)  # a sub-agent's messages and calls


@dataclass
class Message:
    role: str  # agent | prompt | result
    text: str


@dataclass
class _Reader:
    top: list[Any] = field(default_factory=list)
    scopes: dict[str, list[Any]] = field(default_factory=dict)  # Agent call id -> its inner
    open: dict[tuple[str, str], Call] = field(default_factory=dict)  # (scope, id) -> call
    items: int = 0
    dropped: int = 0

    def add(self, scope: str, item: Any) -> None:
        if self.items >= ITEM_LIMIT:
            self.dropped += 1
            return
        self.items += 1
        self.scopes.get(scope, self.top).append(item)

    def event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "result":
            self.add("", Message("result", _result_line(event)))
            return
        content = (event.get("message") or {}).get("content")
        scope = str(event.get("parent_tool_use_id") or "")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if kind not in ("assistant", "user") or not isinstance(content, list):
            return
        for block in content:
            if isinstance(block, dict):
                self.block(kind, scope, block)

    def block(self, kind: str, scope: str, block: dict[str, Any]) -> None:
        btype, ident = block.get("type"), str(block.get("id") or block.get("tool_use_id") or "")
        if btype == "text" and str(block.get("text") or "").strip():
            self.add(
                scope, Message("agent" if kind == "assistant" else "prompt", str(block["text"]))
            )
        elif btype == "tool_use":
            call = Call(str(block.get("name") or "?"), block.get("input"))
            self.open[(scope, ident)] = call
            self.add(scope, call)
            if call.name in ("Agent", "Task") and ident not in self.scopes:
                self.scopes[ident] = call.inner
        elif btype == "tool_result":
            found = self.open.pop((scope, ident), None)
            if found is not None:
                found.result = _result_text(block.get("content"))
                found.failed = bool(block.get("is_error"))


def _result_text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) if isinstance(b, dict) else str(b) for b in content)
    return "" if content is None else str(content)


def _result_line(event: dict[str, Any]) -> str:
    parts = [f"result: {event.get('subtype')}"]
    if event.get("num_turns") is not None:
        parts.append(f"{event['num_turns']} turns")
    if isinstance(event.get("total_cost_usd"), int | float):
        parts.append(f"${event['total_cost_usd']:.4f}")
    text = str(event.get("result") or "")
    return " · ".join(parts) + (f"\n{text}" if text else "")


def _summary(call: Call) -> str:
    """One line for a folded call: its name and what it acted on."""
    given = call.given if isinstance(call.given, dict) else {}
    if call.name in ("Agent", "Task"):
        what = f"{given.get('subagent_type', '?')}: {given.get('description', '')}"
    else:
        what = next((str(given[k]) for k in SUMMARY_KEYS if isinstance(given.get(k), str)), "")
    what = " ".join(what.split())
    what = what if len(what) <= 120 else what[:119] + "…"
    state = (
        " <span class=fail>error</span>"
        if call.failed
        else " <span class=muted>no result</span>"
        if call.result is None
        else ""
    )
    return f"<b>{escape(call.name)}</b> <code>{escape(what)}</code>{state}"


class _Budget:
    """The characters of text a run's transcript may still show, and what it left out."""

    def __init__(self) -> None:
        self.left = RUN_TEXT_LIMIT
        self.skipped = 0

    def take(self, text: str) -> str | None:
        """The text as shown (cut to what is left), or None once the budget is spent."""
        if self.left <= 0:
            self.skipped += 1
            return None
        shown = truncate(text, min(TEXT_LIMIT, max(self.left, 200)))
        self.left -= len(shown)
        return shown


def _html(items: list[Any], budget: _Budget) -> str:
    """Messages and folded calls; past the budget, messages are left out and calls keep only
    their one-line summary."""
    out = []
    for item in items:
        if isinstance(item, Message):
            text = budget.take(item.text)
            if text is not None:
                out.append(f"<div class='msg {item.role}'>{escape(text)}</div>")
            continue
        body = "".join(
            f"<pre>{escape(text)}</pre>"
            for text in (budget.take(json.dumps(item.given, indent=1, ensure_ascii=False)),)
            if text
        )
        if item.inner:
            body += f"<div class=sub>{_html(item.inner, budget)}</div>"
        result = None if item.result is None else budget.take(item.result)
        if result is not None:
            body += f"<pre>{escape(result)}</pre>"
        kind = "call agent" if item.inner else "call"
        out.append(f"<details class='{kind}'><summary>{_summary(item)}</summary>{body}</details>")
    return "".join(out)


def render(transcript: Path | IO[str]) -> str:
    """The transcript's HTML (`<div class=tx>`), from its file or its open text; lines that are
    not JSON objects are skipped."""
    reader = _Reader()
    for event in claude_code.events(transcript):
        reader.event(event)
    budget = _Budget()
    shown = _html(reader.top, budget)
    more = []
    if reader.dropped:
        more.append(f"{reader.dropped} more messages and tool calls")
    if budget.skipped:
        more.append(f"{budget.skipped} more texts (messages, tool inputs and results)")
    note = (
        f"<p class=muted>… {' and '.join(more)}: the whole transcript is transcript.jsonl "
        "in the run folder</p>"
        if more
        else ""
    )
    return f"<div class=tx>{shown}{note}</div>"
