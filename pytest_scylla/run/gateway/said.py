"""What the model said to a run, as the gateway relayed it: the id of every tool call and the
text of every answer on the Anthropic Messages wire (Claude Code's).

The CLI's transcript is its own account of the same conversation, written where the agent's
processes may reach it (under docker they can reopen the CLI's output pipe and write events into
it). The runner compares the two (`unsaid`, `final_text`): a tool call the model never made is
not counted in the trajectory, and a final message the model never wrote is replaced by the last
one it did: the gateway's account wins.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field
from typing import Any

MAX_IDS = 50_000  # tool call ids kept per run (a longer run is compared on the first ones)
MAX_TEXTS = 50_000  # text digests kept per run
MAX_TEXT_CHARS = 1 << 20  # of one text block (a longer one leaves texts uncompared)
LAST_TEXT_CHARS = 100_000  # of the last agent answer's text, the final message it stands for


def digest(text: str) -> str:
    return hashlib.sha256(text.strip().encode("utf-8", "replace")).hexdigest()


class Answer:
    """One answer's content, read from its stream events or its whole JSON body."""

    def __init__(self) -> None:
        self.tool_ids: list[str] = []
        self._texts: dict[int, list[str]] = {}  # index -> its text pieces, in order
        self._sizes: dict[int, int] = {}
        self.cut = False  # a text block over MAX_TEXT_CHARS: its digest would not be its own
        self.messages = 0  # Anthropic messages seen (0: another wire, nothing to compare)

    def event(self, data: dict[str, Any]) -> None:
        """One Anthropic stream event."""
        kind, index = data.get("type"), data.get("index")
        if kind == "message_start":
            self.messages += 1
        elif kind == "content_block_start" and isinstance(index, int):
            self._block(index, data.get("content_block"))
        elif kind == "content_block_delta" and isinstance(index, int):
            delta = data.get("delta")
            if isinstance(delta, dict) and delta.get("type") == "text_delta":
                self._text(index, delta.get("text"))

    def whole(self, message: dict[str, Any]) -> None:
        """A whole (not streamed) Anthropic message."""
        content = message.get("content")
        if message.get("type") != "message" or not isinstance(content, list):
            return
        self.messages += 1
        for index, block in enumerate(content):
            self._block(index, block)

    def _block(self, index: int, block: Any) -> None:
        if not isinstance(block, dict):
            return
        if block.get("type") == "tool_use" and isinstance(block.get("id"), str):
            self.tool_ids.append(block["id"])
        elif block.get("type") == "text":
            self._texts.setdefault(index, [])
            self._text(index, block.get("text"))

    def _text(self, index: int, text: Any) -> None:
        if not isinstance(text, str) or index not in self._texts:
            return
        room = MAX_TEXT_CHARS - self._sizes.get(index, 0)
        self.cut = self.cut or len(text) > room
        if room > 0:
            self._texts[index].append(text[:room])
            self._sizes[index] = self._sizes.get(index, 0) + min(room, len(text))

    def texts(self) -> list[str]:
        return ["".join(self._texts[i]) for i in sorted(self._texts)]


@dataclass
class Said:
    """Everything the model said on one route (all its answers, from any thread)."""

    answers: int = 0  # Anthropic answers seen
    tool_ids: set[str] = field(default_factory=set)
    texts: set[str] = field(default_factory=set)  # digests: each block, each answer's blocks
    last_text: str = ""  # the text of the last agent answer that had one (not a side call's)
    uncompared: bool = False  # texts too long or too many to stand for the model's
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, answer: Answer, agent: bool) -> None:
        if not answer.messages:
            return
        texts = [t for t in answer.texts() if t.strip()]
        joined = {"".join(texts), "\n".join(texts), "\n\n".join(texts)} if texts else set()
        with self.lock:
            self.answers += answer.messages
            room = MAX_IDS - len(self.tool_ids)
            self.tool_ids.update(answer.tool_ids[: max(0, room)])
            self.uncompared = self.uncompared or answer.cut or len(self.texts) >= MAX_TEXTS
            self.texts.update(digest(t) for t in [*texts, *joined])
            if agent and texts:
                self.last_text = "\n\n".join(texts)[:LAST_TEXT_CHARS]

    def unsaid(self, tool_ids: list[str]) -> list[str]:
        """The transcript's tool call ids the model never gave (none when the gateway saw no
        Anthropic answer, or kept no more ids: nothing to compare with)."""
        if not self.answers or len(self.tool_ids) >= MAX_IDS:
            return []
        return [i for i in tool_ids if i and i not in self.tool_ids]

    def final_text(self, claimed: str) -> str | None:
        """None when the CLI's final message is the model's (or cannot be compared), else the
        model's own last text, which stands for it."""
        if not self.answers or not claimed.strip() or self.uncompared:
            return None
        return None if digest(claimed) in self.texts else self.last_text
