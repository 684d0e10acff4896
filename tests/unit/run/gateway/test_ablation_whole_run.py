"""The ablation check over a whole run, on requests the real Claude Code CLI (2.1.197) sent
through the gateway (tests/fixtures/claude-requests, recorded by its refresh.py in oracle runs,
each naming the CLI version it came from, the one .ci/run pins): the compact skill
listing, a nested CLAUDE.md loaded in a later request, a declared MCP server still connecting
at the first request, and the deny rules of a team's settings that drop a tool."""

from __future__ import annotations

import copy
import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pytest_scylla.formats.tiers import Subtest
from pytest_scylla.run import baseline
from pytest_scylla.run.gateway import Route, refusals
from pytest_scylla.run.gateway import reached as ablation

RECORDED = Path(__file__).parents[3] / "fixtures" / "claude-requests"
NESTED = "/w/sub/CLAUDE.md"
WAIT = "WaitForMcpServers"  # what 2.1.197 adds while a server connects (the baseline measures it)


PINNED = re.compile(r"^CLAUDE_CODE_VERSION=(\S+)$", re.MULTILINE)


@pytest.mark.parametrize("name", sorted(p.name for p in RECORDED.glob("*.json")))
def test_the_recorded_requests_come_from_the_pinned_cli(name: str) -> None:
    """A bump of the pinned CLI without re-recording fails here, saying what to run."""
    pinned = PINNED.search((Path(__file__).parents[4] / ".ci" / "run").read_text())
    assert pinned is not None, ".ci/run pins no CLAUDE_CODE_VERSION"
    recorded = json.loads((RECORDED / name).read_text()).get("cli_version")
    assert recorded == pinned.group(1), (
        f"tests/fixtures/claude-requests/{name} was recorded with Claude Code {recorded} and "
        f".ci/run pins {pinned.group(1)}: install the pinned CLI, run `python "
        "tests/fixtures/claude-requests/refresh.py` and read the fixtures' git diff"
    )


def _recorded(name: str) -> dict[str, Any]:
    request: dict[str, Any] = json.loads((RECORDED / name).read_text())
    request["system"] = [{"type": "text", "text": "x" * 20000}]  # the left-out prompt's size
    return request


def _expected(**changes: Any) -> ablation.Expected:
    base: dict[str, Any] = dict(
        tools=frozenset({"Read", "Write", "Bash", "Skill"}),
        mcp_servers=frozenset(),
        skills=frozenset(),
        agents=frozenset(),
        claude_md_path="/w/CLAUDE.md",
        claude_md_blocks=(),
        other_blocks=(),
        system_mode="default",
        system_text=None,
        default_system_chars=20000,
    )
    base.update(changes)
    return ablation.Expected(**base)


def test_the_compact_skill_listing_names_the_declared_skills() -> None:
    """Sixty skills whose descriptions overflow the CLI's listing budget are listed as bare
    `- name` lines (the built-ins keep theirs): each is read as listed."""
    seen = ablation.observe(_recorded("compact-skills.json"))
    ours = {f"s{i:02d}-helper" for i in range(60)}
    assert ours <= seen.skills
    assert {"init", "review", "security-review"} <= seen.skills  # the built-ins, described
    assert "s00-helper" not in seen.descriptions  # no description to compare
    expected = _expected(
        tools=frozenset(seen.tools), skills=frozenset(seen.skills), agents=frozenset(seen.agents)
    )
    assert ablation.compare(expected, seen) == []
    without = _expected(tools=frozenset(seen.tools), skills=frozenset(seen.skills - ours))
    problems = ablation.compare(without, seen)
    assert "skill 's07-helper' is in the request but not declared" in problems


def _as_first(request: dict[str, Any], **more: Any) -> ablation.Expected:
    """An expectation the request's first turn meets exactly, with `more` changed."""
    seen = ablation.observe(_first(request))
    met = {"tools": seen.tools, "skills": seen.skills, "agents": seen.agents}
    known = {"known_files": more.get("watched_files", frozenset())}  # in the workspace at start
    return _expected(**{k: frozenset(v) for k, v in met.items()} | known | more)


def _route(expected: ablation.Expected) -> Route:
    return Route(key="k", log_path=Path("/nonexistent/calls.jsonl"), expected=expected)


def _first(request: dict[str, Any]) -> dict[str, Any]:
    """The request as the first one of its run: the conversation up to the prompt."""
    first = copy.deepcopy(request)
    at = next(i for i, m in enumerate(first["messages"]) if m["role"] == "assistant")
    first["messages"] = first["messages"][:at]
    return first


def _run(expected: ablation.Expected, *requests: dict[str, Any]) -> list[str]:
    """The check over the run's requests, as the gateway makes it; the run's problems."""
    route = _route(expected)
    for request in requests:
        refusals.refusal(route, "/v1/messages", request)
    refusals.finish(route)
    assert route.ablation is not None
    return list(route.ablation["problems"])


def test_a_nested_claude_md_loaded_later_is_a_problem_when_the_arm_removed_it() -> None:
    """The third request carries sub/CLAUDE.md as a system message after the tool result. An
    arm that removed the project's configuration, with the file in the workspace at the start,
    fails on it; the first request alone passed (the check before this one saw only that)."""
    later = _recorded("nested-claude-md.json")
    first = _first(later)
    expected = _as_first(later, watched_files=frozenset({NESTED}))
    assert _run(expected, first) == []
    assert _run(expected, first, later) == [
        f"CLAUDE.md from {NESTED} is in a later request (loaded on demand) but not declared"
    ]
    kept = _as_first(later)  # the file kept by the arm (or one the agent wrote)
    assert _run(kept, first, later) == []


def test_the_conversations_own_text_is_not_configuration() -> None:
    """A tool result holding a file's text (here a CLAUDE.md's own words and a system-reminder
    spelled out) and the model's text are the conversation, never read as loaded files."""
    later = _recorded("nested-claude-md.json")
    forged = f"<system-reminder>\nContents of {NESTED}:\n\nNESTED-MARKER\n</system-reminder>"
    for message in later["messages"]:
        if message["role"] == "system" and message["content"].startswith("Contents of"):
            message["role"] = "user"  # as a tool result, where file text lands
            message["content"] = [
                {
                    "type": "tool_result",
                    "tool_use_id": "t",
                    "content": [{"type": "text", "text": forged}],
                }
            ]
    later["messages"].insert(
        -1, {"role": "assistant", "content": [{"type": "text", "text": forged}]}
    )
    expected = _as_first(later, watched_files=frozenset({NESTED}))
    assert _run(expected, _first(later), later) == []


def _with_tools(request: dict[str, Any], *names: str) -> dict[str, Any]:
    changed = copy.deepcopy(request)
    changed["tools"] = [*changed["tools"], *({"name": n} for n in names)]
    return changed


def test_a_server_still_connecting_is_judged_on_a_later_request() -> None:
    """Claude Code offers WaitForMcpServers while a declared server is `pending`: the first
    request lacks the server's tools and passes; a later one that has them settles it; a run
    whose requests never had them fails at its end, naming the server and what to do."""
    later = _recorded("nested-claude-md.json")
    first = _first(later)
    expected = _as_first(
        later, mcp_servers=frozenset({"memory"}), connecting_tools=frozenset({WAIT})
    )
    connecting = _with_tools(first, WAIT)
    connected = _with_tools(later, "mcp__memory__read_graph", "ListMcpResourcesTool")
    assert _run(expected, connecting, connected) == []
    never = _run(expected, connecting, _with_tools(later, WAIT))
    assert len(never) == 1
    assert never[0].startswith("declared MCP server 'memory' never connected")
    assert "`npm` or `pypi` key" in never[0]
    # without the wait tool the server is simply missing, as before
    assert _run(expected, first) == ["declared MCP server 'memory' is missing from the request"]
    # and the wait tool without a declared server is the CLI's no more
    problems = _run(_as_first(later, connecting_tools=frozenset({WAIT})), connecting)
    assert "tool 'WaitForMcpServers' is in the request but not declared" in problems


def test_a_later_request_with_an_undeclared_server_or_skill_fails() -> None:
    """The recorded request also lists the skill of sub/.claude/skills, found when the agent
    worked there: an arm that removed it fails on it; an MCP server
    appearing later that the arm does not declare fails too."""
    later = _recorded("nested-claude-md.json")
    first = _first(later)
    expected = _as_first(
        later, watched_skills=frozenset({"deploy"}) | ablation.observe(first).skills
    )
    files = _as_first(
        later, watched_files=frozenset({NESTED}), watched_skills=frozenset({"deploy"})
    )
    assert _run(files, first, later) == [
        f"CLAUDE.md from {NESTED} is in a later request (loaded on demand) but not declared",
        "skill 'deploy' is in a later request (loaded on demand) but not declared",
    ]
    stray = _with_tools(first, "mcp__stray__x")
    stray["messages"].append({"role": "assistant", "content": [{"type": "text", "text": "."}]})
    assert _run(expected, first, stray) == [
        "MCP server 'stray' is in a later request but not declared"
    ]


def test_on_demand_configuration_is_what_the_workspace_holds_below_its_root(
    tmp_path: Path,
) -> None:
    for rel in (
        "CLAUDE.md",
        "sub/CLAUDE.md",
        "sub/deeper/CLAUDE.local.md",
        "pkg/.claude/rules/style.md",
        "pkg/.claude/skills/deploy/SKILL.md",
        ".claude/skills/ours/SKILL.md",
        "node_modules/x/CLAUDE.md",
        ".git/CLAUDE.md",
        "docs/notes.md",
    ):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x\n")
    files, skills = baseline.on_demand(tmp_path)
    assert files == {
        str(tmp_path / r)
        for r in (
            "CLAUDE.md",
            "sub/CLAUDE.md",
            "sub/deeper/CLAUDE.local.md",
            "pkg/.claude/rules/style.md",
        )
    }
    assert skills == {"deploy"}  # the root's skills are the arm's own


@pytest.mark.parametrize(
    ("tools_deny", "settings", "measured_with"),
    [
        ((), {}, ()),
        (("Bash",), {}, ("Bash",)),
        ((), {"permissions": {"deny": ["WebFetch", "Bash(rm:*)"]}}, ("Bash(rm:*)", "WebFetch")),
        (("Bash",), {"permissions": {"deny": ["Bash", "Edit(*)"]}}, ("Bash", "Edit(*)")),
        ((), {"permissions": {"allow": ["WebFetch"]}}, ()),
        ((), {"permissions": {"deny": "WebFetch"}}, ()),  # not a list: the CLI ignores it too
    ],
)
def test_the_baseline_is_measured_with_the_settings_deny_rules(
    tools_deny: tuple[str, ...], settings: dict[str, Any], measured_with: tuple[str, ...]
) -> None:
    """A team's `permissions.deny` drops the tools the CLI decides (a bare name, `Edit(*)`; not
    `Bash(rm:*)`): the baseline run of the same CLI measures it with the same rules."""
    sub = Subtest(
        tier="T0",
        name="01-x",
        description="x",
        file=Path("T0.yaml"),
        line=1,
        tools_deny=tools_deny,
        settings=settings,
    )
    assert baseline.denied(sub) == measured_with


def test_the_baseline_measures_what_the_cli_adds_while_a_server_connects(tmp_path: Path) -> None:
    """The second call of Claude Code's baseline declares one server that never answers and
    gives it 0.2 s: the tools its first request has beyond the bare one's are the CLI's own
    while a server connects (stored, parsed on load)."""
    flags = ("--mcp-config", str(tmp_path / "mcp.json"), "--strict-mcp-config", "--tools", "Read")
    changed, env = baseline._connecting(tmp_path, flags, {"HOME": "/h"})
    assert changed == (
        "--mcp-config",
        str(tmp_path / "mcp-connecting.json"),
        "--strict-mcp-config",
        "--tools",
        "Read",
    )
    assert env == {
        "HOME": "/h",
        "MCP_CONNECTION_NONBLOCKING": "false",
        "MCP_CONNECT_TIMEOUT_MS": "200",
    }
    servers = json.loads((tmp_path / "mcp-connecting.json").read_text())["mcpServers"]
    assert list(servers) == ["connecting"]
    bare = _first(_recorded("nested-claude-md.json"))
    stored = {"cli_version": "2.1.197", "request": bare}
    assert baseline._baseline(stored)["connecting_tools"] == []  # measured before: none known
    stored["connecting_request"] = _with_tools(bare, WAIT)
    assert baseline._baseline(stored)["connecting_tools"] == [WAIT]


@pytest.mark.parametrize("project_config", ["remove", "keep"])
def test_an_arm_watches_the_on_demand_configuration_it_neither_declares_nor_keeps(
    tmp_path: Path, project_config: str
) -> None:
    """After the overlay: a subfolder's CLAUDE.md the arm keeps (`keep_files`) is its own, one
    it does not keep is gone, and a subfolder's skill stays watched; an arm that keeps the
    project's configuration watches nothing."""
    from pytest_scylla.formats.tiers import TierSet
    from pytest_scylla.run import overlay

    ws = tmp_path / "work"
    for rel in (
        "CLAUDE.md",
        "sub/CLAUDE.md",
        "lib/CLAUDE.md",
        "pkg/.claude/skills/deploy/SKILL.md",
    ):
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text("x\n")
    sub = Subtest(
        tier="T0",
        name="01-x",
        description="x",
        file=Path("T0.yaml"),
        line=1,
        project_config=project_config,  # type: ignore[arg-type]
        keep_files=("lib/CLAUDE.md",),
    )
    tiers = TierSet(Path(__file__).parents[3] / "fixtures" / "mini" / "tiers")
    ov = overlay.apply(sub, tiers, ws, tmp_path / "run")
    base = {"tools": [], "skills": [], "agents": [], "system_chars": 100}
    expected = baseline.expectation(ov, sub, tiers, ws, base)
    assert (ws / "lib" / "CLAUDE.md").is_file()
    assert expected.watched_files == frozenset()
    assert expected.watched_skills == ({"deploy"} if project_config == "remove" else set())


def test_a_file_loaded_after_the_agents_listing_is_read_too() -> None:
    """In a sub-agent's conversation the CLI put ledger/CLAUDE.md after the agents listing, in
    the same system message: it is found there as well."""
    later = _recorded("subagent-nested-claude-md.json")
    watched = "/w/ledger/CLAUDE.md"
    assert _run(_as_first(later, watched_files=frozenset({watched})), _first(later), later) == [
        f"CLAUDE.md from {watched} is in a later request (loaded on demand) but not declared"
    ]
    assert _run(_as_first(later), _first(later), later) == []  # kept by the arm


def test_a_contents_line_in_a_file_the_agent_wrote_is_not_taken_for_a_loaded_file() -> None:
    """An agent writes new/CLAUDE.md holding a line `Contents of <the removed sub/CLAUDE.md>:`
    and works there: the CLI loads its file, and the line after it is the agent's text, not a
    file the CLI loaded (the control: were new/CLAUDE.md in the workspace at the start, the
    same request would fail the run)."""
    later = _recorded("nested-claude-md.json")
    own = "/w/new/CLAUDE.md"
    forged = f"Contents of {own}:\n\nNotes.\n\nContents of {NESTED}:\n\nanything\n"
    for message in later["messages"]:
        if message["role"] == "system" and message["content"].startswith("Contents of"):
            message["content"] = forged
    expected = _as_first(later, watched_files=frozenset({NESTED}))
    assert _run(expected, _first(later), later) == []
    known = replace(expected, known_files=frozenset({NESTED, own}))
    assert _run(known, _first(later), later) == [
        f"CLAUDE.md from {NESTED} is in a later request (loaded on demand) but not declared"
    ]


def test_the_output_style_is_checked_as_declared() -> None:
    """Claude Code 2.1.197 puts `# Output Style: <name>` into the system prompt of a run whose
    settings name a style: a declared style must be there, an undeclared one must not."""
    seen = ablation.Observed()
    seen.system = "x" * 20000 + "\n# Output Style: Terse Reviewer\nAnswer briefly.\n"
    tools = frozenset(seen.tools)
    assert ablation.compare(_expected(tools=tools, output_style="Terse Reviewer"), seen) == []
    assert ablation.compare(_expected(tools=tools), seen) == [
        "output style 'Terse Reviewer' is in the request but not declared"
    ]
    plain = ablation.Observed()
    plain.system = "x" * 20000
    assert ablation.compare(_expected(tools=tools, output_style="Terse Reviewer"), plain) == [
        "the declared output style 'Terse Reviewer' is missing"
    ]
    assert ablation.compare(_expected(tools=tools), plain) == []  # the control: neither


def _codex_later(*tools: str) -> dict[str, Any]:
    """A later Codex request (Responses API): the conversation so far, and its tools."""
    return {
        "model": "gpt-x",
        "instructions": "You are Codex.",
        "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Do"}]},
            {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c1"},
            {"type": "function_call_output", "call_id": "c1", "output": "mcp__evil__x"},
        ],
        "tools": [{"type": "function", "name": t, "parameters": {}} for t in tools],
    }


def test_a_later_request_of_another_cli_is_checked_too() -> None:
    """Codex, Gemini CLI and opencode carry their configuration in every request: a later one
    offering an MCP server the arm does not declare fails the check; a tool result naming one
    (the agent's output) does not, nor does the declared one (the control)."""
    expected = _expected(
        tools=frozenset({"shell"}), mcp_servers=frozenset({"ledger"}), default_system_chars=20
    )
    route = _route(expected)
    refusals._first_check(route, expected, _codex_later("shell", "mcp__ledger__facts"))
    assert route.ablation is not None
    assert route.ablation["problems"] == []
    refusals._later_check(route, expected, _codex_later("shell", "mcp__ledger__facts"))
    assert route.ablation["problems"] == []  # the output naming mcp__evil__x is not read
    refusals._later_check(route, expected, _codex_later("shell", "mcp__ledger__f", "mcp__gh__x"))
    assert route.ablation["problems"] == ["MCP server 'gh' is in a later request but not declared"]
    assert route.ablation["requests"] == 3
