"""The ablation check: what a run's first request actually carried, against what its subtest
declared.

Claude Code puts CLAUDE.md, the skills list and the agents list into `<system-reminder>` text of
the first user message, the tools (built-in and `mcp__<server>__<tool>`) into `tools`, and the
system prompt into `system`. The CLI also always brings built-in skills, agents and tools of its
own; those come from a baseline request of the same CLI version with nothing declared, so only
the subtest's own additions and removals are compared.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Any

SKILLS_HEAD = "The following skills are available for use with the Skill tool"
AGENTS_HEAD = "Available agent types for the Agent tool"
CLAUDE_MD_HEAD = "# claudeMd"
LISTED = re.compile(r"^- ([A-Za-z0-9_.:-]+): (.*)$", re.MULTILINE)
CONTENTS = re.compile(r"^Contents of (\S+?)(?: \([^)\n]*\))?:\n", re.MULTILINE)
REMINDER = re.compile(r"<system-reminder>\n?(.*?)</system-reminder>", re.DOTALL)
MCP_HELPER = re.compile(r"^\w*Mcp\w*Tool$")  # e.g. ListMcpResourcesTool, ReadMcpResourceTool
MIN_BLOCK_TEXT = 40  # shorter library texts are not searched for (too likely to match by chance)


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    return [b.get("text", "") for b in content or [] if isinstance(b, dict)
            and b.get("type") == "text"]


def _context_chunks(messages: list[Any]) -> list[str]:
    """The context the CLI puts before the first model turn: `<system-reminder>` parts of user
    messages and whole system-role messages (this CLI uses both, depending on the setup)."""
    chunks: list[str] = []
    for message in messages:
        if not isinstance(message, dict) or message.get("role") == "assistant":
            break
        for text in _texts(message.get("content")):
            if message.get("role") == "system":
                chunks.append(text)
            else:
                chunks.extend(REMINDER.findall(text))
    return chunks


@dataclass
class Observed:
    tools: set[str] = field(default_factory=set)
    mcp_servers: set[str] = field(default_factory=set)
    skills: set[str] = field(default_factory=set)
    agents: set[str] = field(default_factory=set)
    claude_md: dict[str, str] = field(default_factory=dict)  # path -> text
    descriptions: dict[str, list[str]] = field(default_factory=dict)  # skill/agent -> listings
    system: str = ""
    reminders: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"tools": sorted(self.tools), "mcp_servers": sorted(self.mcp_servers),
                "skills": sorted(self.skills), "agents": sorted(self.agents),
                "claude_md_files": sorted(self.claude_md), "system_chars": len(self.system)}


def observe(request: dict[str, Any]) -> Observed:
    """What the request carries."""
    seen = Observed()
    for tool in request.get("tools") or []:
        name = str(tool.get("name", "")) if isinstance(tool, dict) else ""
        if name.startswith("mcp__"):
            seen.mcp_servers.add(name.split("__")[1])
        elif name:
            seen.tools.add(name)
    seen.system = "\n".join(_texts(request.get("system")))
    chunks = _context_chunks(request.get("messages", []))
    seen.reminders = "\n".join(chunks)
    heads = (SKILLS_HEAD, AGENTS_HEAD, CLAUDE_MD_HEAD)
    for chunk in chunks:
        starts = sorted((chunk.find(h), h) for h in heads if h in chunk)
        for (start, head), (end, _) in itertools.pairwise([*starts, (len(chunk), "")]):
            section = chunk[start:end]
            if head in (SKILLS_HEAD, AGENTS_HEAD):
                listed = LISTED.findall(section)
                (seen.skills if head == SKILLS_HEAD else seen.agents).update(n for n, _ in listed)
                for name, text in listed:
                    seen.descriptions.setdefault(name, []).append(text)
            else:
                found = list(CONTENTS.finditer(section))
                for j, match in enumerate(found):
                    stop = found[j + 1].start() if j + 1 < len(found) else len(section)
                    seen.claude_md[match.group(1)] = section[match.end():stop]
    return seen


@dataclass(frozen=True)
class Expected:
    """What a run's first request must carry (built from the overlay's declaration)."""

    tools: frozenset[str]
    mcp_servers: frozenset[str]
    skills: frozenset[str]
    agents: frozenset[str]
    claude_md_path: str  # the workspace's CLAUDE.md: the only one allowed
    claude_md_blocks: tuple[tuple[str, str], ...]  # (block name, text) that must be in it
    other_blocks: tuple[tuple[str, str], ...]  # library blocks that must not appear anywhere
    system_mode: str  # none | default | replace | append
    system_text: str | None  # the replace/append file's text
    default_system_chars: int  # size of the baseline's default system prompt
    tools_allow: frozenset[str] | None = None  # the declared allow-list, checked on its own too
    tools_deny: frozenset[str] = frozenset()
    descriptions: tuple[tuple[str, str], ...] = ()  # declared skill/agent -> its description

    def to_json(self) -> dict[str, Any]:
        return {"tools": sorted(self.tools), "mcp_servers": sorted(self.mcp_servers),
                "skills": sorted(self.skills), "agents": sorted(self.agents),
                "claude_md_blocks": [n for n, _ in self.claude_md_blocks],
                "system_prompt": self.system_mode}


def _norm(text: str) -> str:
    return " ".join(text.split())


def compare(expected: Expected, seen: Observed) -> list[str]:
    """Every difference, each as one readable sentence; empty when the ablation took effect."""
    problems: list[str] = []
    tools = set(seen.tools)
    if expected.mcp_servers:
        tools -= {t for t in tools if MCP_HELPER.match(t)}  # the CLI adds these with any server
    if expected.tools_allow is not None:
        problems += [f"tool '{t}' is outside the declared allow-list"
                     for t in sorted(tools - expected.tools_allow)]
    problems += [f"denied tool '{t}' is in the request" for t in sorted(tools &
                                                                        expected.tools_deny)]
    for kind, label in (("tools", "tool"), ("mcp_servers", "MCP server"), ("skills", "skill"),
                        ("agents", "agent")):
        want: frozenset[str] = getattr(expected, kind)
        got: set[str] = tools if kind == "tools" else getattr(seen, kind)
        problems += [f"declared {label} '{n}' is missing from the request"
                     for n in sorted(want - got)]
        problems += [f"{label} '{n}' is in the request but not declared"
                     for n in sorted(got - want)]
    for name, text in expected.descriptions:
        listed = seen.descriptions.get(name, [])
        if listed and not any(_norm(text)[:60] in _norm(line) for line in listed):
            problems.append(f"declared skill or agent '{name}' is not the one in the request: "
                            "the listed one has another description (a built-in of the same "
                            "name? rename yours)")
    for path in sorted(seen.claude_md):
        if path != expected.claude_md_path:
            problems.append(f"CLAUDE.md from {path} is in the request but not declared")
    ours = _norm(seen.claude_md.get(expected.claude_md_path, ""))
    for name, text in expected.claude_md_blocks:
        if _norm(text) not in ours:
            problems.append(f"declared CLAUDE.md block '{name}' is missing from the request")
    everything = _norm(seen.reminders + "\n" + seen.system)
    for name, text in expected.other_blocks:
        if len(text) >= MIN_BLOCK_TEXT and _norm(text) in everything:
            problems.append(f"CLAUDE.md block '{name}' is in the request but not declared")
    system = _norm(seen.system)
    big = len(seen.system) >= expected.default_system_chars // 2
    if expected.system_mode == "none" and big:
        problems.append(f"system prompt should be empty but has {len(seen.system)} characters")
    if expected.system_mode in ("default", "append") and not big:
        problems.append(f"the default system prompt is missing ({len(seen.system)} characters)")
    if expected.system_text is not None and _norm(expected.system_text) not in system:
        problems.append(f"the declared system prompt text ({expected.system_mode}) is missing")
    if expected.system_mode == "replace" and big:
        problems.append("the default system prompt is still there although replaced")
    return problems
