"""The ablation check: what a run's first request actually carried, against what its subtest
declared.

Claude Code puts CLAUDE.md, the skills list and the agents list into `<system-reminder>` text of
the first user message, the tools (built-in and `mcp__<server>__<tool>`) into `tools`, and the
system prompt into `system`. The CLI also always brings built-in skills, agents and tools of its
own; those come from a baseline request of the same CLI version with nothing declared, so only
the subtest's own additions and removals are compared. The other CLIs' first requests are read
for the same things in their own wire formats (`_observe_responses`: Codex, `_observe_gemini`:
Gemini CLI, `_observe_chat`: opencode).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Any

from pytest_scylla.run.gateway import turns

SKILLS_HEAD = "The following skills are available for use with the Skill tool"
AGENTS_HEAD = "Available agent types for the Agent tool"
CLAUDE_MD_HEAD = "# claudeMd"
LISTED = re.compile(r"^- ([A-Za-z0-9_.:-]+): (.*)$", re.MULTILINE)
CONTENTS = re.compile(r"^Contents of (\S+?)(?: \([^)\n]*\))?:\n", re.MULTILINE)
REMINDER = re.compile(r"<system-reminder>\n?(.*?)</system-reminder>", re.DOTALL)
# the helpers a CLI adds with any MCP server: ListMcpResourcesTool (Claude Code),
# list_mcp_resources / read_mcp_resource (Codex)
MCP_HELPER = re.compile(r"^(?:\w*Mcp\w*Tool|\w*_mcp_resource\w*)$")
AGENTS_MD = re.compile(
    r"^# AGENTS\.md instructions for (.+?)\n\n<INSTRUCTIONS>\n(.*?)"
    r"</INSTRUCTIONS>",
    re.DOTALL,
)
CODEX_CONTEXT = ("# AGENTS.md instructions for ", "<environment_context>")
GEMINI_SKILL = re.compile(
    r"<skill>\s*<name>(.*?)</name>\s*<description>(.*?)</description>", re.DOTALL
)
GEMINI_AGENT = re.compile(r"^- ([A-Za-z0-9_.:-]+) -> (.*)$", re.MULTILINE)
OPENCODE_MD = re.compile(
    r"^Instructions from: (\S+)\n(.*?)(?=\n\nSkills provide |"
    r"\nInstructions from: |\Z)",
    re.DOTALL | re.MULTILINE,
)
GEMINI_MD = re.compile(
    r"^--- Context from: (.+?) ---\n(.*?)\n--- End of Context from: \1 ---",
    re.DOTALL | re.MULTILINE,
)
MIN_BLOCK_TEXT = 40  # shorter library texts are not searched for (too likely to match by chance)


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    return [
        b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"
    ]


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
        return {
            "tools": sorted(self.tools),
            "mcp_servers": sorted(self.mcp_servers),
            "skills": sorted(self.skills),
            "agents": sorted(self.agents),
            "claude_md_files": sorted(self.claude_md),
            "system_chars": len(self.system),
        }


def observe(request: dict[str, Any]) -> Observed:
    """What the request carries, in whichever CLI's wire format."""
    if "input" in request and "messages" not in request:
        return _observe_responses(request)
    if "contents" in request:
        return _observe_gemini(request)
    first = (request.get("messages") or [{}])[0]
    if isinstance(first, dict) and first.get("role") == "system":  # Chat Completions
        return _observe_chat(request)
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
                    seen.claude_md[match.group(1)] = section[match.end() : stop]
    return seen


def _observe_responses(request: dict[str, Any]) -> Observed:
    """Codex: its base instructions (or their replacement) and `developer_instructions` are
    developer messages; the skills list a developer message part `<skills_instructions>`; each
    AGENTS.md a user message part before the prompt; MCP tools `mcp__<server>__<tool>`."""
    seen = Observed()
    for name in turns.tools(request):
        if name.startswith("mcp__") and name.count("__") >= 2:
            seen.mcp_servers.add(name.split("__")[1])
        else:
            seen.tools.add(name)
    system: list[str] = [str(request.get("instructions") or "")]
    chunks: list[str] = []
    for item in request.get("input") or []:
        if not isinstance(item, dict) or item.get("type", "message") != "message":
            break
        for text in _texts(
            [{**p, "type": "text"} for p in item.get("content") or [] if isinstance(p, dict)]
        ):
            if item.get("role") == "developer":
                (chunks if text.startswith("<") else system).append(text)
            elif text.startswith(CODEX_CONTEXT):
                chunks.append(text)
    seen.system, seen.reminders = "\n".join(t for t in system if t), "\n".join(chunks)
    for chunk in chunks:
        if chunk.startswith("<skills_instructions>"):
            listed = LISTED.findall(chunk)
            seen.skills.update(n for n, _ in listed)
            for name, text in listed:
                seen.descriptions.setdefault(name, []).append(text)
        found = AGENTS_MD.match(chunk)
        if found is not None:
            seen.claude_md[found.group(1).rstrip("/") + "/AGENTS.md"] = found.group(2)
    return seen


def _observe_gemini(request: dict[str, Any]) -> Observed:
    """Gemini CLI: the system prompt (`systemInstruction`) holds the skills and sub-agents
    lists (the skills are also the `activate_skill` tool's choices, with any prompt); GEMINI.md
    is in the first user message's first part (`--- Context from: <path>`); MCP tools are
    `mcp_<server>_<tool>`."""
    seen = Observed()
    for name in turns.tools(request):
        if name.startswith("mcp_") and name.count("_") >= 2:
            seen.mcp_servers.add(name.split("_")[1])
        else:
            seen.tools.add(name)
    instruction = request.get("systemInstruction")
    parts = instruction.get("parts") if isinstance(instruction, dict) else None
    seen.system = "".join(str(p.get("text", "")) for p in parts or [] if isinstance(p, dict))
    for name, text in GEMINI_SKILL.findall(seen.system):
        seen.skills.add(name.strip())
        seen.descriptions.setdefault(name.strip(), []).append(text)
    skill = turns.tools(request).get("activate_skill") or {}  # its enum: what the model
    offered = ((skill.get("properties") or {}).get("name") or {}).get("enum")  # may activate
    seen.skills.update(str(n) for n in offered or ())
    agents = seen.system.partition("# Available Sub-Agents")[2].partition("\n# ")[0]
    for name, text in GEMINI_AGENT.findall(agents):
        seen.agents.add(name)
        seen.descriptions.setdefault(name, []).append(text)
    contents = request.get("contents") or [{}]
    first = contents[0].get("parts") if isinstance(contents[0], dict) else None
    context = [str(p.get("text", "")) for p in (first or [])[:1] if isinstance(p, dict)]
    seen.reminders = "\n".join(context)
    for path, text in GEMINI_MD.findall(seen.reminders):
        seen.claude_md[path] = text
    return seen


def _observe_chat(request: dict[str, Any]) -> Observed:
    """opencode (Chat Completions): one system message holds the prompt, each AGENTS.md
    (`Instructions from: <path>`) and the skills list; the sub-agents are listed in the `task`
    tool's description; MCP tools are `<server>_<tool>` (the harness names its servers
    `mcp<name>`: built-in tools such as `apply_patch` have `_` too)."""
    seen = Observed()
    offered = [t.get("function") or {} for t in request.get("tools") or [] if isinstance(t, dict)]
    for tool in offered:
        name = str(tool.get("name", ""))
        if name.startswith("mcp") and "_" in name:  # the harness names servers mcp<name>
            seen.mcp_servers.add(name.split("_")[0])
        elif name:
            seen.tools.add(name)
        if name == "task":
            listed = str(tool.get("description", "")).partition("Available agent types")[2]
            for agent, text in LISTED.findall(listed):
                seen.agents.add(agent)
                seen.descriptions.setdefault(agent, []).append(text)
    system = "\n".join(_texts(request["messages"][0].get("content")))
    for name, text in GEMINI_SKILL.findall(system):
        seen.skills.add(name.strip())
        seen.descriptions.setdefault(name.strip(), []).append(text)
    for path, text in OPENCODE_MD.findall(system):
        seen.claude_md[path] = text
    cut = min([m.start() for m in OPENCODE_MD.finditer(system)] + [len(system)])
    seen.system, seen.reminders = system[:cut], system[cut:]
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
        return {
            "tools": sorted(self.tools),
            "mcp_servers": sorted(self.mcp_servers),
            "skills": sorted(self.skills),
            "agents": sorted(self.agents),
            "claude_md_blocks": [n for n, _ in self.claude_md_blocks],
            "system_prompt": self.system_mode,
        }


def _norm(text: str) -> str:
    return " ".join(text.split())


def compare(expected: Expected, seen: Observed) -> list[str]:
    """Every difference, each as one readable sentence; empty when the ablation took effect."""
    problems: list[str] = []
    tools = set(seen.tools)
    if expected.mcp_servers:
        tools -= {t for t in tools if MCP_HELPER.match(t)}  # the CLI adds these with any server
    if expected.tools_allow is not None:
        problems += [
            f"tool '{t}' is outside the declared allow-list"
            for t in sorted(tools - expected.tools_allow)
        ]
    problems += [
        f"denied tool '{t}' is in the request" for t in sorted(tools & expected.tools_deny)
    ]
    for kind, label in (
        ("tools", "tool"),
        ("mcp_servers", "MCP server"),
        ("skills", "skill"),
        ("agents", "agent"),
    ):
        want: frozenset[str] = getattr(expected, kind)
        got: set[str] = tools if kind == "tools" else getattr(seen, kind)
        problems += [
            f"declared {label} '{n}' is missing from the request" for n in sorted(want - got)
        ]
        problems += [
            f"{label} '{n}' is in the request but not declared" for n in sorted(got - want)
        ]
    for name, text in expected.descriptions:
        listed = seen.descriptions.get(name, [])
        if listed and not any(_norm(text)[:60] in _norm(line) for line in listed):
            problems.append(
                f"declared skill or agent '{name}' is not the one in the request: "
                "the listed one has another description (a built-in of the same "
                "name? rename yours)"
            )
    return problems + _claude_md_problems(expected, seen) + _system_problems(expected, seen)


def _claude_md_problems(expected: Expected, seen: Observed) -> list[str]:
    """The CLAUDE.md files and blocks in the request that differ from the declared ones."""
    problems: list[str] = []
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
    return problems


def _system_problems(expected: Expected, seen: Observed) -> list[str]:
    """How the request's system prompt differs from the declared mode and text."""
    problems: list[str] = []
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
