"""The ablation check: what a run's first request actually carried, against what its subtest
declared.

Claude Code puts CLAUDE.md, the skills list and the agents list into `<system-reminder>` text of
the first user message, the tools (built-in and `mcp__<server>__<tool>`) into `tools`, and the
system prompt into `system`. The CLI also always brings built-in skills, agents and tools of its
own; those come from a baseline request of the same CLI version with nothing declared, so only
the subtest's own additions and removals are compared. The other CLIs' first requests are read
for the same things in their own wire formats (`other_wires`).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Any

from pytest_scylla.run.gateway.other_wires import (
    LISTED,
    Observed,
    observe_chat,
    observe_gemini,
    observe_responses,
    texts,
)

SKILLS_HEAD = "The following skills are available for use with the Skill tool"
AGENTS_HEAD = "Available agent types for the Agent tool"
CLAUDE_MD_HEAD = "# claudeMd"
# the compact listing Claude Code falls back to when the skills' descriptions overflow its
# listing budget: a bare `- name` line per skill (2.1.197: the project's own skills so, its
# built-ins still with their descriptions)
COMPACT = re.compile(r"^- ([A-Za-z0-9_.:-]+)$", re.MULTILINE)
CONTENTS = re.compile(r"^Contents of (\S+?)(?: \([^)\n]*\))?:\n", re.MULTILINE)
REMINDER = re.compile(r"<system-reminder>\n?(.*?)</system-reminder>", re.DOTALL)
# the helpers a CLI adds with any MCP server: ListMcpResourcesTool (Claude Code),
# list_mcp_resources / read_mcp_resource (Codex)
MCP_HELPER = re.compile(r"^(?:\w*Mcp\w*Tool|\w*_mcp_resource\w*)$")
STYLE_HEAD = re.compile(r"^# Output Style: (.+)$", re.MULTILINE)  # 2.1.197's system prompt
MIN_BLOCK_TEXT = 40  # shorter library texts are not searched for (too likely to match by chance)


def _context_chunks(messages: list[Any]) -> list[str]:
    """The context the CLI puts before the first model turn: `<system-reminder>` parts of user
    messages and whole system-role messages (this CLI uses both, depending on the setup)."""
    chunks: list[str] = []
    for message in messages:
        if not isinstance(message, dict) or message.get("role") == "assistant":
            break
        chunks += _chunks_of(message)
    return chunks


def _chunks_of(message: dict[str, Any]) -> list[str]:
    """The CLI's own context in one message: a system-role message whole, the
    `<system-reminder>` parts of a user message's text blocks (never a tool result's content,
    which holds what the agent read or ran)."""
    found = texts(message.get("content"))
    if message.get("role") == "system":
        return found
    return [chunk for text in found for chunk in REMINDER.findall(text)]


def _new_chunks(messages: list[Any]) -> list[str]:
    """The CLI's own context added since the model's last turn: what a later request brings
    that the earlier ones did not (a nested CLAUDE.md loaded when the agent read there, skills
    found on the way)."""
    last = max(
        (i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "assistant"),
        default=-1,
    )
    return [c for m in messages[last + 1 :] if isinstance(m, dict) for c in _chunks_of(m)]


def is_messages_wire(request: dict[str, Any]) -> bool:
    """Claude Code's wire format (Anthropic Messages), not another CLI's."""
    if "contents" in request or "messages" not in request:
        return False
    first = (request.get("messages") or [{}])[0]
    return not (isinstance(first, dict) and first.get("role") == "system")  # Chat Completions


def observe(request: dict[str, Any]) -> Observed:
    """What the request carries, in whichever CLI's wire format."""
    if "input" in request and "messages" not in request:
        return observe_responses(request)
    if "contents" in request:
        return observe_gemini(request)
    first = (request.get("messages") or [{}])[0]
    if isinstance(first, dict) and first.get("role") == "system":  # Chat Completions
        return observe_chat(request)
    seen = _offered(request)
    seen.system = "\n".join(texts(request.get("system")))
    chunks = _context_chunks(request.get("messages", []))
    seen.reminders = "\n".join(chunks)
    _read_chunks(chunks, seen)
    return seen


def observe_later(request: dict[str, Any]) -> Observed:
    """What a later request of Claude Code adds to the configuration the first one carried: its
    MCP servers (one still connecting at the first request shows up once connected) and the
    CLI's own context since the model's last turn (CLAUDE.md files and skills loaded on
    demand). None of the conversation's own content (tool results, the model's text) is read."""
    seen = _offered(request)
    _read_chunks(_new_chunks(request.get("messages") or []), seen, loaded=True)
    return seen


def _offered(request: dict[str, Any]) -> Observed:
    """The tools of a Claude Code request: built-in ones and MCP servers (`mcp__<server>__`)."""
    seen = Observed()
    for tool in request.get("tools") or []:
        name = str(tool.get("name", "")) if isinstance(tool, dict) else ""
        if name.startswith("mcp__"):
            seen.mcp_servers.add(name.split("__")[1])
        elif name:
            seen.tools.add(name)
    return seen


def _read_chunks(chunks: list[str], seen: Observed, loaded: bool = False) -> None:
    """The listings and CLAUDE.md files in the CLI's context chunks, into `seen`; `loaded`:
    chunks of a later request, where a file loaded on demand comes as `Contents of <path>:`
    without the `# claudeMd` head, alone or after a listing (2.1.197: after the agents listing
    in a sub-agent's conversation)."""
    heads = (SKILLS_HEAD, AGENTS_HEAD, CLAUDE_MD_HEAD)
    for chunk in chunks:
        starts = sorted((chunk.find(h), h) for h in heads if h in chunk)
        if loaded:  # each file loaded on demand, wherever the CLI put it in the chunk
            starts = sorted(
                [*starts, *((m.start(), CLAUDE_MD_HEAD) for m in CONTENTS.finditer(chunk))]
            )
        for (start, head), (end, _) in itertools.pairwise([*starts, (len(chunk), "")]):
            section = chunk[start:end]
            if head in (SKILLS_HEAD, AGENTS_HEAD):
                _read_listing(section, seen, head == SKILLS_HEAD)
            else:
                found = list(CONTENTS.finditer(section))
                for j, match in enumerate(found):
                    stop = found[j + 1].start() if j + 1 < len(found) else len(section)
                    seen.claude_md[match.group(1)] = section[match.end() : stop]


def _read_listing(section: str, seen: Observed, skills: bool) -> None:
    """A skills or agents listing: `- name: description` lines, and for skills also the
    compact `- name` lines."""
    listed = LISTED.findall(section)
    names = [n for n, _ in listed] + (COMPACT.findall(section) if skills else [])
    (seen.skills if skills else seen.agents).update(names)
    for name, text in listed:
        seen.descriptions.setdefault(name, []).append(text)


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
    # on-demand configuration in the workspace at the start that the arm does not declare (its
    # project configuration removed): CLAUDE.md files (paths) and skills (names) in subfolders,
    # which the CLI loads in a later request once the agent works there
    watched_files: frozenset[str] = frozenset()
    watched_skills: frozenset[str] = frozenset()
    known_files: frozenset[str] = frozenset()  # every such file at the start, kept ones too
    # the tools the CLI adds while a declared MCP server is still connecting, measured with the
    # baseline (Claude Code 2.1.197: WaitForMcpServers)
    connecting_tools: frozenset[str] = frozenset()
    # the project's files the arm keeps (keep_files), which the CLI may load under their own
    # headers, and those of them it must load in the first request (an unscoped rule, a file a
    # declared block imports)
    kept_files: frozenset[str] = frozenset()
    required_files: frozenset[str] = frozenset()
    output_style: str | None = None  # the style the settings name (None: the default)

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
    if expected.mcp_servers:  # the CLI adds these with any server, or one still connecting
        tools -= {t for t in tools if MCP_HELPER.match(t) or t in expected.connecting_tools}
    pending = connecting(expected, seen)
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
        missing = want - got - (pending if kind == "mcp_servers" else set())
        problems += [f"declared {label} '{n}' is missing from the request" for n in sorted(missing)]
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


def connecting(expected: Expected, seen: Observed) -> set[str]:
    """The declared MCP servers a request lacks while it has the tools the CLI adds for a server
    still connecting: to be judged on a later request (`compare_later`)."""
    if not seen.tools & expected.connecting_tools:
        return set()
    return set(expected.mcp_servers - seen.mcp_servers)


def compare_later(
    expected: Expected, seen: Observed, pending: set[str]
) -> tuple[list[str], set[str]]:
    """The problems of a later request (`observe_later`): an undeclared MCP server, or on-demand
    configuration the arm removed (`watched_files`, `watched_skills`) loaded after all; and the
    declared servers still not seen."""
    problems = [
        f"MCP server '{n}' is in a later request but not declared"
        for n in sorted(seen.mcp_servers - expected.mcp_servers)
    ]
    problems += [
        f"CLAUDE.md from {p} is in a later request (loaded on demand) but not declared"
        for p in sorted(_loaded_by_the_cli(expected, seen) & expected.watched_files)
    ]
    problems += [
        f"skill '{n}' is in a later request (loaded on demand) but not declared"
        for n in sorted((seen.skills & expected.watched_skills) - expected.skills)
    ]
    return problems, pending - seen.mcp_servers


def compare_later_other(expected: Expected, seen: Observed) -> list[str]:
    """The problems of a later request of another CLI (Codex, Gemini CLI, opencode: `observe`
    reads the CLI's own parts of any of its requests, which carry their configuration every
    time): an MCP server, skill or sub-agent that the first request did not have and the arm
    does not declare (one that connected late, or was loaded on the way)."""
    return [
        f"{label} '{n}' is in a later request but not declared"
        for label, got, want in (
            ("MCP server", seen.mcp_servers, expected.mcp_servers),
            ("skill", seen.skills, expected.skills),
            ("agent", seen.agents, expected.agents),
        )
        for n in sorted(got - want)
    ]


def _loaded_by_the_cli(expected: Expected, seen: Observed) -> set[str]:
    """The files a later request says the CLI loaded, up to the first one that was not in the
    workspace at the start: that one the agent wrote, and a `Contents of <path>:` line after it
    may be its own text (a line it wrote to have a removed file taken for loaded)."""
    loaded: set[str] = set()
    for path in seen.claude_md:  # in the order the request has them
        if path not in expected.known_files:
            break
        loaded.add(path)
    return loaded


def never_connected(pending: set[str]) -> list[str]:
    """The problem of each declared server no request of the run had."""
    return [
        f"declared MCP server '{n}' never connected: it was still starting at the run's first "
        "request (the CLI offered its wait tool) and no later request had its tools; make "
        "it start inside the sandbox within the CLI's wait (60 s: a package from npm or PyPI "
        "needs the declaration's `npm` or `pypi` key, so the run installs it on the host), or "
        "leave it out of the arm"
        for n in sorted(pending)
    ]


def _claude_md_problems(expected: Expected, seen: Observed) -> list[str]:
    """The CLAUDE.md files and blocks in the request that differ from the declared ones."""
    problems: list[str] = []
    for path in sorted(seen.claude_md):
        if path != expected.claude_md_path and path not in expected.kept_files:
            problems.append(f"CLAUDE.md from {path} is in the request but not declared")
    for path in sorted(expected.required_files - set(seen.claude_md)):
        problems.append(f"the kept file {path} is missing from the request (the CLI loads it)")
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
    style = STYLE_HEAD.search(seen.system)
    if expected.output_style and (style is None or style.group(1) != expected.output_style):
        problems.append(f"the declared output style '{expected.output_style}' is missing")
    elif style is not None and not expected.output_style:
        problems.append(f"output style '{style.group(1)}' is in the request but not declared")
    return problems
