"""Agent CLI adapters: how to start each CLI headless and read what it reports.

An adapter is one object behind the `Agent` interface; the runner, the baseline and the runtime
use nothing else of it, so a new CLI is a new adapter, never a change to the runner. Adapters
are registered through the `pytest_scylla_agents` hook: the built-in Claude Code one by this
plugin, others by any pytest plugin (a `conftest.py`, or a package's `pytest11` entry point).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable

    from pytest_scylla.formats.components import Configuration
    from pytest_scylla.formats.tiers import Subtest, TierSet
    from pytest_scylla.run.overlay import Overlay


@dataclass
class Result:
    """What the CLI said about its own run."""

    found: bool = False  # a final `result` event was seen
    subtype: str | None = None
    is_error: bool = False
    num_turns: int | None = None
    stop_reason: str | None = None
    terminal_reason: str | None = None
    api_error_status: int | None = None
    total_cost_usd: float | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    model_usage: dict[str, Any] = field(default_factory=dict)
    final_message: str = ""
    duration_ms: int | None = None
    init: dict[str, Any] = field(default_factory=dict)
    events: int = 0
    after_result: int = 0  # events after the first `result` (ignored: not the CLI's)
    # the trajectory: every tool call in order (a sub-agent's prefixed `<agent>/`), failed
    # tool results, and what of the declared components the agent invoked
    tool_calls: list[str] = field(default_factory=list)
    tool_errors: int = 0
    skills_used: list[str] = field(default_factory=list)
    agents_used: list[str] = field(default_factory=list)
    mcp_used: list[str] = field(default_factory=list)
    # the model's id of each tool call ("" where the CLI does not say), beside `tool_calls`,
    # and of the calls that showed each component used ("skills:<name>"): what `forget` needs
    tool_ids: list[str] = field(default_factory=list)
    evidence: dict[str, list[str]] = field(default_factory=dict)
    # the hook events the CLI reported, bounded (`run.hooks.keep`; run.json's `hooks`)
    hook_events: list[dict[str, Any]] = field(default_factory=list)

    def called(self, name: str, call_id: str, limit: int) -> None:
        """One tool call, in order (the first `limit` are kept)."""
        if len(self.tool_calls) < limit:
            self.tool_calls.append(name)
            self.tool_ids.append(call_id)

    def used(self, kind: str, name: str, call_id: str) -> None:
        """A call that used a component (`kind`: skills, agents, mcp_servers)."""
        found = {
            "skills": self.skills_used,
            "agents": self.agents_used,
            "mcp_servers": self.mcp_used,
        }[kind]
        if name not in found:
            found.append(name)
        ids = self.evidence.setdefault(f"{kind}:{name}", [])
        if len(ids) < MAX_EVIDENCE:
            ids.append(call_id)

    def call_ids(self) -> list[str]:
        """Every tool call id the transcript gave (the kept calls', and each component's)."""
        return [*self.tool_ids, *(i for ids in self.evidence.values() for i in ids)]

    def forget(self, ids: set[str]) -> None:
        """Leave out the tool calls with these ids (the model never made them): from the
        sequence, and each component that no other call showed used."""
        known = self.tool_ids + [""] * (len(self.tool_calls) - len(self.tool_ids))
        kept = [n for n, i in enumerate(known) if i not in ids]
        self.tool_calls = [self.tool_calls[n] for n in kept]
        self.tool_ids = [known[n] for n in kept]
        for kind, found in (
            ("skills", self.skills_used),
            ("agents", self.agents_used),
            ("mcp_servers", self.mcp_used),
        ):
            found[:] = [
                name for name in found if set(self.evidence.get(f"{kind}:{name}") or [""]) - ids
            ]

    def trajectory(self, declared: dict[str, Any]) -> dict[str, Any]:
        """The run's trajectory, and for each skill, sub-agent and MCP server its subtest
        declared whether the agent invoked it (CLAUDE.md blocks and tool lists are always in
        its context: nothing to invoke)."""
        per_tool: dict[str, int] = {}
        for name in self.tool_calls:
            per_tool[name] = per_tool.get(name, 0) + 1
        used = {
            "skills": self.skills_used,
            "agents": self.agents_used,
            "mcp_servers": self.mcp_used,
        }
        return {
            "tool_calls": len(self.tool_calls),
            "per_tool": per_tool,
            "sequence": self.tool_calls,
            "tool_errors": self.tool_errors,
            "sub_agent_calls": sum(n.split("/")[-1] in ("Agent", "Task") for n in self.tool_calls),
            "turns": self.num_turns,
            "used": {
                kind: {
                    str(name): _plain(name) in {_plain(u) for u in used[kind]}
                    for name in declared.get(kind) or ()
                }
                for kind in used
            },
        }

    def to_json(self) -> dict[str, Any]:
        """Every field but the final message, the init event, the trajectory and the hook
        events; `found` as `result_seen`."""
        left_out = ("final_message", "init", "hook_events", *TRAJECTORY)
        data = {k: v for k, v in asdict(self).items() if k not in left_out}
        return {"result_seen": data.pop("found"), **data}


def _plain(name: str) -> str:
    """A component's name as every CLI can spell it (some drop `-` and `_` from MCP servers)."""
    return "".join(c for c in name.lower() if c.isalnum())


TRAJECTORY = (
    "tool_calls",
    "tool_errors",
    "skills_used",
    "agents_used",
    "mcp_used",
    "tool_ids",
    "evidence",
)
MAX_EVIDENCE = 1000  # call ids kept per component


class SetupError(RuntimeError):
    """The CLI is missing or unusable: a setup problem, not a result."""


class Agent(Protocol):
    """One agent CLI, headless: the prompt on stdin, a transcript on stdout.

    Optional members (see `overlay_for`, `unsupported`): `overlay(sub, tiers, workspace,
    run_dir, mcp)` writes a subtest's components as this CLI reads them (default: Claude Code's
    CLAUDE.md, .claude/ and flags); `unsupported(sub[, tiers])` says why the CLI cannot
    express a subtest (collected as skipped with that reason); `upstream` names the vendor
    API of real runs (default `anthropic`); `default_model` is the model when none is given.
    An `environment` with a `model` parameter is also given the run's model (see
    `environment`). `read_configuration(root)` reads a project's own configuration of this CLI
    into components (a `formats.components.Configuration`; a `SpecError` names a file it
    cannot read): with it the adapter takes part in `scylla ablate plan --agent <name>`, and
    `configuration_files` (names under the project) tells that such a configuration is there.
    """

    name: str  # what --scylla-agent names, and the records' `agent`

    def find_cli(self, explicit: str | None) -> Path:
        """The executable (`explicit`: --scylla-cli); `SetupError` when it is missing."""
        ...

    def version(self, cli: Path) -> str:
        """The CLI's version string (part of every run's conditions)."""
        ...

    def command(
        self, cli: Path | str, model: str, max_turns: int, overlay_args: tuple[str, ...]
    ) -> list[str]:
        """The argv of one headless run."""
        ...

    def environment(
        self, base: dict[str, str], overlay_env: dict[str, str], base_url: str
    ) -> dict[str, str]:
        """The run's environment: `base` (the run's own HOME and temp), the subtest's overlay,
        and the gateway's address (never a credential: the gateway holds it)."""
        ...

    def parse(self, transcript: Path) -> Result:
        """What the CLI said about its run, read from its transcript (untrusted data)."""
        ...


def builtin() -> list[object]:
    """The built-in adapters (Claude Code, Codex, Gemini CLI, opencode), offered through
    `pytest_scylla_agents` like a plugin's (by `pytest_scylla.plugin`); `Agent`s, whose
    optional members the protocol does not spell."""
    from pytest_scylla.run.agents import claude_code, codex, gemini_cli, opencode

    return [claude_code.ADAPTER, codex.ADAPTER, gemini_cli.ADAPTER, opencode.ADAPTER]


def configuration_reader(agent: Agent) -> Callable[[Path], Configuration] | None:
    """The adapter's reader of a project's own configuration (`read_configuration(root)`), or
    None when it ships none (`scylla ablate plan` then cannot plan for it)."""
    return getattr(agent, "read_configuration", None)


def configuration_files(agent: Agent) -> tuple[str, ...]:
    """The names under a project that show the adapter's CLI is configured there (none said:
    none)."""
    return tuple(getattr(agent, "configuration_files", ()))


def overlay_for(agent: Agent) -> Callable[..., Overlay]:
    """The adapter's tier overlay (`overlay(sub, tiers, workspace, run_dir, mcp)`), else Claude
    Code's."""
    from pytest_scylla.run import overlay

    return getattr(agent, "overlay", None) or overlay.apply


def unsupported(agent: Agent, sub: Subtest, tiers: TierSet | None = None) -> str | None:
    """Why the adapter's CLI cannot run `sub` as declared; None when it can. `tiers`: where its
    resources are, for an adapter whose `unsupported(sub, tiers)` reads them (its sub-agents'
    tools)."""
    import inspect

    check = getattr(agent, "unsupported", None)
    if check is None:
        return None
    if len(inspect.signature(check).parameters) > 1:
        return check(sub, tiers)  # type: ignore[no-any-return]
    return check(sub)  # type: ignore[no-any-return]


def environment(
    agent: Agent, base: dict[str, str], overlay_env: dict[str, str], base_url: str, model: str
) -> dict[str, str]:
    """The adapter's environment for a run; the model too when its `environment` takes one
    (a CLI that must list the model in its configuration)."""
    import inspect

    if "model" in inspect.signature(agent.environment).parameters:
        return agent.environment(base, overlay_env, base_url, model=model)  # type: ignore[call-arg]
    return agent.environment(base, overlay_env, base_url)
