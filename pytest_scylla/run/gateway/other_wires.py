"""What a first request carries (`Observed`), and how the CLIs other than Claude Code put it
on their wires: Codex's Responses API (`observe_responses`), Gemini CLI's generateContent
(`observe_gemini`) and opencode's Chat Completions (`observe_chat`). `ablation` compares it with
what the subtest declared."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pytest_scylla.run.gateway import turns

LISTED = re.compile(r"^- ([A-Za-z0-9_.:-]+): (.*)$", re.MULTILINE)
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


def texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    return [
        b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"
    ]


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


def observe_responses(request: dict[str, Any]) -> Observed:
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
        for text in texts(
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


def observe_gemini(request: dict[str, Any]) -> Observed:
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


def observe_chat(request: dict[str, Any]) -> Observed:
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
    system = "\n".join(texts(request["messages"][0].get("content")))
    for name, text in GEMINI_SKILL.findall(system):
        seen.skills.add(name.strip())
        seen.descriptions.setdefault(name.strip(), []).append(text)
    for path, text in OPENCODE_MD.findall(system):
        seen.claude_md[path] = text
    cut = min([m.start() for m in OPENCODE_MD.finditer(system)] + [len(system)])
    seen.system, seen.reminders = system[:cut], system[cut:]
    return seen
