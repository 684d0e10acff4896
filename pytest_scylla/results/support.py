"""The CLI support matrix, measured: for each agent CLI in a set of experiments, which tier
components reached the model (the ablation check of every run that declared them found nothing
wrong), which did not, and which the CLI's adapter declares not applicable, with its reason.
`scylla matrix DIR...` prints it; docs/other-clis.md's matrix is this output over the slow
tier's runs of case test-001 under every tier and CLI (a test keeps the two equal)."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from pytest_scylla.core.record import RunRecord
from pytest_scylla.core.tiers import tier_key
from pytest_scylla.formats.tiers import Subtest, SystemPrompt, TierSet
from pytest_scylla.run.agents import unsupported

# (row label, whether a run's declaration has the component, a subtest declaring it alone)
Component = tuple[str, Callable[[dict[str, Any]], bool], Subtest]
# what the ablation check's sentences say about each component (see run/gateway/reached.py);
# a sentence naming none of them counts against every component of its run
ABOUT = {
    "system prompt": "system prompt",
    "instruction blocks": "CLAUDE.md",
    "skills": "skill",
    "sub-agents": "agent",
    "MCP servers": "MCP server",
    "tool allow-list": "allow-list",
    "tool deny-list": "denied tool",
}


LEAD = "orchestrator"  # the probes' sub-agent with the Agent tool (`_probe_tiers`)


def _probe_tiers(folder: Path) -> TierSet:
    """A tiers folder holding the probes' resources: one orchestrator, so that an adapter can
    say why it cannot run one."""
    (folder / "agents").mkdir(parents=True, exist_ok=True)
    (folder / "agents" / f"{LEAD}.md").write_text(
        f"---\nname: {LEAD}\ndescription: probe\ntools: Agent, Read\n---\nprobe\n", "utf-8"
    )
    return TierSet(folder)


def _sub(**declared: Any) -> Subtest:
    return Subtest(
        tier="T0", name="00-probe", description="", file=Path("probe"), line=0, **declared
    )


COMPONENTS: tuple[Component, ...] = (
    ("system prompt: default", lambda d: d.get("system_prompt") == "default", _sub()),
    (
        "system prompt: none",
        lambda d: d.get("system_prompt") == "none",
        _sub(system_prompt=SystemPrompt(mode="none")),
    ),
    (
        "system prompt: append",
        lambda d: d.get("system_prompt") == "append",
        _sub(system_prompt=SystemPrompt(mode="append")),
    ),
    (
        "system prompt: replace",
        lambda d: d.get("system_prompt") == "replace",
        _sub(system_prompt=SystemPrompt(mode="replace")),
    ),
    (
        "instruction blocks (CLAUDE.md)",
        lambda d: bool(d.get("claude_md")),
        _sub(claude_md=("block",)),
    ),
    ("skills", lambda d: bool(d.get("skills")), _sub(skills=("skill",))),
    ("sub-agents", lambda d: bool(d.get("agents")), _sub(agents=("agent",))),
    ("sub-agents calling sub-agents", lambda d: bool(d.get("lead_agents")), _sub(agents=(LEAD,))),
    ("MCP servers", lambda d: bool(d.get("mcp_servers")), _sub(mcp_servers=("server",))),
    ("tool allow-list", lambda d: d.get("tools_allow") is not None, _sub(tools_allow=("Read",))),
    ("tool deny-list", lambda d: bool(d.get("tools_deny")), _sub(tools_deny=("Bash",))),
)


def _held(record: RunRecord, label: str) -> bool:
    """Whether the run's ablation check found nothing wrong with the component `label`."""
    ablation = record.get("ablation") or {}
    if not ablation.get("checked"):
        return False
    word = next(w for key, w in ABOUT.items() if label.startswith(key))
    return not any(
        word in p or not any(w in p for w in ABOUT.values())
        for p in map(str, ablation.get("problems") or ())
    )


def _cell(
    label: str,
    records: list[RunRecord],
    has: Callable[[dict[str, Any]], bool],
    probe: Subtest,
    adapter: Any,
    tiers: TierSet,
) -> str:
    declaring = [r for r in records if has(r.get("declared") or {})]
    clean = [r for r in declaring if _held(r, label)]
    if declaring:
        subtests = len({r["subtest"] for r in clean})
        if len(clean) == len(declaring):
            return f"yes ({subtests} subtest{'s' if subtests != 1 else ''})"
        return f"**no**: {len(declaring) - len(clean)} of {len(declaring)} runs failed the check"
    why = unsupported(adapter, probe, tiers) if adapter else None
    return f"n/a: {why}" if why else "not run"


def matrix(records: Iterable[RunRecord], adapters: dict[str, Any]) -> str:
    """The markdown matrix: components x CLIs, then tiers x CLIs (subtests whose runs passed
    the ablation check, of the subtests the tier has in these records)."""
    by_agent: dict[str, list[RunRecord]] = {}
    for rec in records:
        by_agent.setdefault(str(rec.get("agent") or "claude-code"), []).append(rec)
    agents = sorted(by_agent, key=lambda a: (a != "claude-code", a))
    lines = ["| component | " + " | ".join(agents) + " |", "|---" * (len(agents) + 1) + "|"]
    with tempfile.TemporaryDirectory(prefix="scylla-probe-") as folder:
        probes = _probe_tiers(Path(folder))
        for label, has, probe in COMPONENTS:
            lines.append(
                f"| {label} | "
                + " | ".join(
                    _cell(label, by_agent[a], has, probe, adapters.get(a), probes) for a in agents
                )
                + " |"
            )
    tiers: dict[str, set[str]] = {}
    for rec in (r for rs in by_agent.values() for r in rs):
        tiers.setdefault(str(rec["tier"]), set()).add(str(rec["subtest"]))
    lines += ["", "| tier | " + " | ".join(agents) + " |", "|---" * (len(agents) + 1) + "|"]
    for tier in sorted(tiers, key=tier_key):
        cells = []
        for agent in agents:
            ok = {
                r["subtest"]
                for r in by_agent[agent]
                if r["tier"] == tier
                and (r.get("ablation") or {}).get("checked")
                and not r["ablation"].get("problems")
            }
            cells.append(f"{len(ok)} of {len(tiers[tier])}")
        lines.append(f"| {tier} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
