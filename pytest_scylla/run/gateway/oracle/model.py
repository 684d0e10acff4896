"""The oracle upstream: a scripted model that drives the real CLI through ordinary tool calls.

`solution` reads every file it is about to replace (a file too large for one view of the
CLI's Read in pages: `oracle_read`), then writes the case's reference solution with the CLI's
file-writing tool (else its shell, in pieces an argument can hold: `oracle_shell`, else
opencode's `apply_patch`) and ends with a short summary; where the subtest declares sub-agents
it first hands the work down through the CLI's sub-agent tool (Agent, `invoke_agent`, `task`),
to an orchestrator and from it to a writer. `noop` answers without touching anything; `wrong`
writes a broken version (the first half of each file's lines). The script is stateless: the
next step follows from the oracle's own tool calls already in the conversation, so retries and
side calls never shift it; when the CLI refused one of them, the oracle stops with an API error
saying that it failed and why (`oracle_failure`), never as if the change were made. Calls
without the main agent's tools (titles, summaries, sub-agent chatter) get a short sensible
text.

Usage numbers are realistic in shape: about four bytes per token, the stable prefix written to
the prompt cache on the first call and read from it afterwards.

For the harness's own fault tests, `SCYLLA_ORACLE_FAULT` in the gateway's environment makes the
oracle misbehave: `stall` (never answers), `overloaded` (HTTP 529 with retry-after), `crash`
(asks the shell to kill the CLI process). `SCYLLA_ORACLE_ATTACK=<file.json>` turns the main agent
hostile: it makes the scripted tool calls of that file instead (see `attack`).
`SCYLLA_ORACLE_EFFECTS=<file.json>` makes whether it solves depend on what reached the model
(see `oracle_effects`).
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pytest_scylla.run.gateway import attack, turns
from pytest_scylla.run.gateway.oracle import edit as oracle_edit
from pytest_scylla.run.gateway.oracle import failure as oracle_failure
from pytest_scylla.run.gateway.oracle import judge as oracle_judge
from pytest_scylla.run.gateway.oracle import read as oracle_read
from pytest_scylla.run.gateway.oracle import shell as oracle_shell
from pytest_scylla.run.gateway.oracle import task as oracle_task
from pytest_scylla.run.gateway.oracle import tools as oracle_tools
from pytest_scylla.run.gateway.oracle.effects import Effects

TOOL_ID = turns.TOOL_ID
FAULTS = ("stall", "overloaded", "crash", "rate-limited", "usage-limit")
_usage_limit_fired = threading.Event()  # the usage-limit fault hits one call per process


def mode_for(mode: str, run_key: str) -> str:
    """`mixed` picks solution (60 %), wrong (25 %) or noop (15 %) from the run's key, so the same
    run always does the same thing (results reproduce across sessions and worker counts)."""
    if mode != "mixed":
        return mode
    bucket = int(hashlib.sha256(run_key.encode()).hexdigest()[:8], 16) % 20
    return "solution" if bucket < 12 else "wrong" if bucket < 17 else "noop"


@dataclass(frozen=True)
class Script:
    """What the oracle does for one run."""

    mode: str
    workspace: Path
    files: tuple[tuple[str, str], ...]  # (path relative to the workspace, content to write)
    existing: frozenset[str] = frozenset()  # of those, the ones the workspace had at the start
    # of those, the ones too large for one view of the CLI's Read: the pages that read each
    # whole, or None when it cannot be read in pages (`oracle_read`)
    views: tuple[tuple[str, tuple[tuple[int, int], ...] | None], ...] = ()
    edits: tuple[tuple[str, oracle_edit.Edits], ...] = ()  # of those, the ones edited in place
    too_large: str = ""  # why Claude Code's Read and Write cannot apply the files, if so
    delegates: tuple[str, ...] = ()  # sub-agents to hand the work down to, outermost first
    # the skills and MCP servers the subtest declares: invoked first when SCYLLA_ORACLE_USE
    # names their kind (`skills`, `mcp`), so utilisation can be shown where it is known
    skills: tuple[str, ...] = ()
    mcp_servers: tuple[str, ...] = ()
    verdict: dict[str, Any] | None = None  # what the oracle judge answers (judge routes only)
    faults: bool = True  # SCYLLA_ORACLE_FAULT applies (not to the harness's baseline probe)
    effects: Effects | None = None  # SCYLLA_ORACLE_EFFECTS: solution or noop by what was seen

    @classmethod
    def for_case(
        cls,
        mode: str,
        solution: Path | None,
        workspace: Path,
        delegates: tuple[str, ...] = (),
        skills: tuple[str, ...] = (),
        mcp_servers: tuple[str, ...] = (),
        effects: Effects | None = None,
    ) -> Script:
        files: list[tuple[str, str]] = []
        if solution is not None and mode != "noop":
            for path in sorted(p for p in solution.rglob("*") if p.is_file()):
                text = path.read_text(encoding="utf-8")
                if mode == "wrong":
                    lines = text.splitlines(keepends=True)
                    text = "".join(lines[: len(lines) // 2])
                files.append((path.relative_to(solution).as_posix(), text))
        existing = frozenset(rel for rel, _ in files if (workspace / rel).exists())
        views = oracle_read.of_files(workspace, existing)
        edits = oracle_edit.of_files(workspace, tuple(files), views)
        return cls(
            mode=mode,
            workspace=workspace,
            files=tuple(files),
            existing=existing,
            views=views,
            edits=edits,
            too_large=oracle_edit.too_large(workspace, tuple(files), views, edits),
            delegates=delegates,
            skills=skills,
            mcp_servers=mcp_servers,
            effects=effects,
        )


@dataclass(frozen=True)
class Reply:
    status: int
    blocks: list[dict[str, Any]]
    stop_reason: str = "end_turn"
    headers: tuple[tuple[str, str], ...] = ()
    error: dict[str, Any] | None = None
    stall: bool = False


def fault() -> str | None:
    value = os.environ.get("SCYLLA_ORACLE_FAULT", "").strip() or None
    return value if value in FAULTS else None


def tool_names(request: dict[str, Any]) -> set[str]:
    return set(turns.tools(request))


# The main agent's file and shell tools, per CLI: Claude Code, Codex, Gemini CLI, opencode
MAIN_TOOLS = frozenset(
    {
        "Write",
        "Edit",
        "Bash",
        "exec_command",
        "shell",
        "apply_patch",
        "write_file",
        "run_shell_command",
        "write",
        "bash",
    }
)


def is_main_agent(request: dict[str, Any]) -> bool:
    """The main agent's calls carry its file tools; side calls carry none of them."""
    return bool(tool_names(request) & MAIN_TOOLS)


def _final(tools: set[str], text: str, turn: int, level: int) -> Reply:
    """The last answer: text, or the call that ends a sub-agent where the CLI needs one
    (Gemini CLI's sub-agents finish through `complete_task`)."""
    if level and "complete_task" in tools:
        return _tools(turn, [("complete_task", {"result": text})], level)
    return _text(text)


def _text(text: str) -> Reply:
    return Reply(200, [{"type": "text", "text": text}])


def _tools(turn: int, calls: list[tuple[str, dict[str, Any]]], level: int = 0) -> Reply:
    """Tool calls; ids unique across the delegation levels (a sub-agent's calls never share an
    id with the call that started it), as the real API's are."""
    scope = f"L{level}_" if level else ""
    blocks = [
        {
            "type": "tool_use",
            "id": f"{TOOL_ID}{scope}{turn:02d}_{i:02d}",
            "name": name,
            "input": args,
        }
        for i, (name, args) in enumerate(calls)
    ]
    return Reply(200, blocks, stop_reason="tool_use")


def plan(script: Script, tools: set[str]) -> list[list[tuple[str, dict[str, Any]]]]:
    """The tool turns that apply the script's files with the tools this run offers."""
    if not script.files:
        return []
    paths = [(str(script.workspace / rel), text) for rel, text in script.files]
    edited = dict(script.edits) if "Edit" in tools else {}
    claude = oracle_edit.turns(
        script.workspace, script.files, script.existing, script.views, edited
    )
    if "Write" in tools and claude is not None:  # Claude Code: what it replaces read first
        return claude
    if "write_file" in tools:  # Gemini CLI
        return [[("write_file", {"file_path": p, "content": t}) for p, t in paths]]
    if "write" in tools:  # opencode
        return [[("write", {"filePath": p, "content": t}) for p, t in paths]]
    shell = oracle_shell.write_turns(tools, paths)
    if shell is not None:
        return shell
    return _patches(script, paths) if "apply_patch" in tools else []


def _patches(
    script: Script, paths: list[tuple[str, str]]
) -> list[list[tuple[str, dict[str, Any]]]]:
    """opencode's `apply_patch` (its only file tool for some models): the files the workspace
    has are deleted first, then every file is added whole."""

    def patch(sections: list[str]) -> tuple[str, dict[str, Any]]:
        return "apply_patch", {
            "patchText": "\n".join(["*** Begin Patch", *sections, "*** End Patch"])
        }

    added = [
        f"*** Add File: {path}\n" + "\n".join("+" + line for line in text.splitlines())
        for path, text in paths
    ]
    gone = [
        f"*** Delete File: {script.workspace / rel}"
        for rel, _ in script.files
        if rel in script.existing
    ]
    return ([[patch(gone)]] if gone else []) + [[patch(added)]]


def _gave_up(message: str) -> Reply:
    """The oracle's own failure, as an API error no CLI retries (`oracle_failure`)."""
    return Reply(
        oracle_failure.STATUS, [], error={"type": oracle_failure.ERROR_TYPE, "message": message}
    )


def _judge(script: Script, request: dict[str, Any]) -> Reply:
    """A judge's answer: the verdict call, or a short text once the CLI accepted it."""
    call = oracle_judge.verdict_call(script.verdict, script.workspace.name, request)
    if call is None:
        return _text("Verdict submitted.")  # the CLI accepted the structured output
    return Reply(200, [call], stop_reason="tool_use")


def _limit_fault(injected: str | None, attempt: int) -> Reply | None:
    """The upstream error an injected fault answers with: overloaded, a rate or usage limit."""
    if injected == "overloaded":
        return Reply(
            529,
            [],
            headers=(("retry-after", "1"),),
            error={"type": "overloaded_error", "message": "Overloaded (oracle fault)"},
        )
    if injected == "rate-limited" and attempt == 0:  # a transient limit: a retry succeeds
        return Reply(
            429,
            [],
            headers=(("retry-after", "1"),),
            error={"type": "rate_limit_error", "message": "Rate limited (oracle fault)"},
        )
    if injected == "usage-limit" and not _usage_limit_fired.is_set():
        _usage_limit_fired.set()
        seconds = os.environ.get("SCYLLA_ORACLE_LIMIT_SECONDS", "3600")
        return Reply(
            429,
            [],
            headers=(("retry-after", seconds),),
            error={
                "type": "rate_limit_error",
                "message": "usage limit reached for the current window (oracle fault)",
            },
        )
    return None


def _attack_turn(hostile: attack.Attack, request: dict[str, Any]) -> Reply:
    """The hostile main agent's next scripted tool calls, or its final text."""
    turn = turns.oracle_turns(request)[0]
    return (
        _tools(turn, oracle_tools.portable(hostile.steps[turn], tool_names(request)))
        if turn < len(hostile.steps)
        else _text(hostile.final)
    )


def _crash(request: dict[str, Any], done: int) -> Reply:
    """The crash fault: a first turn asking the shell to kill the CLI."""
    kill = oracle_tools.shell_call(
        tool_names(request), "kill -KILL $PPID", "Stop the CLI (crash fault)"
    )
    if done == 0 and kill is not None:
        return _tools(0, [kill])
    return _text("The CLI should not have survived.")


def _next_step(script: Script, request: dict[str, Any], done: int) -> Reply:
    """An agent's next step: the change handed down to the next sub-agent, or written."""
    level, offered = oracle_tools.level_of(request), tool_names(request)
    handing = (
        oracle_tools.delegate(offered, script.delegates[level], level, script.workspace)
        if (script.mode != "noop" and level < len(script.delegates))
        else None
    )
    if handing is not None:
        if done == 0:
            return _tools(0, [handing], level)
        return _final(offered, f"Done: {script.delegates[level]} made the change.", done, level)
    return _write_step(script, request, offered, level, done)


def _write_step(
    script: Script, request: dict[str, Any], offered: set[str], level: int, done: int
) -> Reply:
    """The next turn of the writing (the skill and MCP uses first), then the summary."""
    work = plan(script, offered)
    if script.mode == "noop":
        return _text("I read the task and decided to make no changes.")
    if script.too_large and "Write" in offered:
        return _gave_up(oracle_failure.cannot(script.too_large))
    steps = (
        oracle_tools.uses(script.skills, script.mcp_servers, request) if level == 0 else []
    ) + work
    if done < len(steps):
        return _tools(done, steps[done], level)
    if not work:
        return _final(
            offered,
            "No file-writing tool is available, so I could not apply the change.",
            done,
            level,
        )
    names = ", ".join(rel for rel, _ in script.files)
    return _final(offered, f"Done. I wrote {names}.", done, level)


def answer(script: Script, request: dict[str, Any], attempt: int = 0) -> Reply:
    """The oracle's next reply to `request` (`attempt`: the gateway's retry count for it)."""
    if script.mode == "task" and oracle_task.asks_for_task(request):
        return Reply(200, [oracle_task.task_call(request)], stop_reason="tool_use")
    if oracle_judge.asks_for_verdict(request, script.verdict is not None):
        return _judge(script, request)
    injected = fault() if script.faults else None
    refused = _limit_fault(injected, attempt)
    if refused is not None:
        return refused
    if not is_main_agent(request):
        return _text("Done: the requested change is in place.")
    hostile = attack.current() if script.faults else None
    if hostile is not None:
        return _attack_turn(hostile, request)
    if injected == "stall":
        return Reply(200, [], stall=True)
    done, failed = turns.oracle_turns(request)
    failed = failed or oracle_failure.unconfirmed(request)
    if injected == "crash":
        return _crash(request, done)
    if failed:  # a call of its own refused: the oracle failed, and says so (`oracle_failure`)
        return _gave_up(oracle_failure.message(request))
    if script.effects is not None and script.mode == "solution":
        script = replace(script, mode="solution" if script.effects.applies(request) else "noop")
    return _next_step(script, request, done)
