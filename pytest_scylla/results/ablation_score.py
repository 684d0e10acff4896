"""The paper's Ablation Score: for every two subtests whose declared components differ by exactly
one (a CLAUDE.md block, a skill, a sub-agent, an MCP server, a tool list), the change that one
component makes — mean score and pass rate with it minus without it, with a 95 % bootstrap
interval of the score difference. Pairs that differ in more than one component say nothing
about any single one and are left out."""

from __future__ import annotations

import itertools
import statistics
from typing import Any

from pytest_scylla.core.outcomes import COUNTED
from pytest_scylla.core.record import RunRecord
from pytest_scylla.core.tiers import subtest_key, tier_key
from pytest_scylla.results import stats

KINDS = {
    "claude_md": "CLAUDE.md block",
    "skills": "skill",
    "agents": "sub-agent",
    "mcp_servers": "MCP server",
}


def components(declared: dict[str, Any]) -> frozenset[tuple[str, str]]:
    """What a subtest declares, as (kind, name) pairs; the system prompt and the tool lists
    count as one component each."""
    found = {(kind, str(name)) for kind in KINDS for name in declared.get(kind) or ()}
    found.add(("system prompt", str(declared.get("system_prompt"))))
    if declared.get("tools_allow") is not None:
        found.add(("tools allowed", ",".join(sorted(declared["tools_allow"]))))
    if declared.get("tools_deny"):
        found.add(("tools denied", ",".join(sorted(declared["tools_deny"]))))
    return frozenset(found)


def _interval(with_: list[float], without: list[float]) -> tuple[float | None, float | None]:
    if len(with_) < 2 or len(without) < 2 or len(set(with_) | set(without)) < 2:
        return None, None
    import numpy as np

    def diff(a: Any, b: Any, axis: int = -1) -> Any:
        return np.mean(a, axis=axis) - np.mean(b, axis=axis)

    return stats.percentile_bootstrap((np.array(with_), np.array(without)), diff)


def ablation_scores(records: list[RunRecord]) -> list[dict[str, Any]]:
    """One row per pair of subtests that differ by exactly one component (over every case
    both ran), the component named; counted runs only."""
    runs: dict[str, list[RunRecord]] = {}
    declared: dict[str, frozenset[tuple[str, str]]] = {}
    for rec in records:
        if rec.get("outcome") not in COUNTED or not isinstance(rec.get("declared"), dict):
            continue
        subtest = str(rec.get("subtest"))
        declared.setdefault(subtest, components(rec["declared"]))
        runs.setdefault(subtest, []).append(rec)
    rows = []
    for a, b in itertools.combinations(sorted(declared, key=subtest_key), 2):
        extra_a, extra_b = declared[a] - declared[b], declared[b] - declared[a]
        if len(extra_a) + len(extra_b) != 1:
            continue
        with_, without = (a, b) if extra_a else (b, a)
        ((kind, name),) = extra_a or extra_b
        cases = {str(r.get("case")) for r in runs[with_]} & {
            str(r.get("case")) for r in runs[without]
        }
        on = [r for r in runs[with_] if str(r.get("case")) in cases]
        off = [r for r in runs[without] if str(r.get("case")) in cases]
        s_on = [float(x) for r in on if isinstance(x := r.get("score"), (int, float))]
        s_off = [float(x) for r in off if isinstance(x := r.get("score"), (int, float))]
        if not s_on or not s_off:
            continue
        low, high = _interval(s_on, s_off)
        rows.append(
            {
                "component": f"{KINDS.get(kind, kind)} {name}",
                "with": with_,
                "without": without,
                "cases": len(cases),
                "n_with": len(on),
                "n_without": len(off),
                "score_delta": statistics.fmean(s_on) - statistics.fmean(s_off),
                "ci_low": low,
                "ci_high": high,
                "pass_rate_delta": (
                    statistics.fmean(bool(r.get("passed")) for r in on)
                    - statistics.fmean(bool(r.get("passed")) for r in off)
                ),
                "used": _used(on, kind, name),
            }
        )
    return rows


def _used(runs: list[RunRecord], kind: str, name: str) -> float | None:
    """The share of runs that invoked the component (skills, sub-agents, MCP servers: what
    can be invoked), over the runs whose trajectory is known."""
    known = [
        r["trajectory"]["used"][kind][name]
        for r in runs
        if name in ((r.get("trajectory") or {}).get("used") or {}).get(kind, {})
    ]
    return statistics.fmean(bool(u) for u in known) if known else None


def utilisation(records: list[RunRecord]) -> list[dict[str, Any]]:
    """Per tier and kind (skills, sub-agents, MCP servers): of the counted runs whose subtest
    declared one or more, how many invoked at least one. A tier whose runs never touch what it
    adds is no ablation of it: the row says so."""
    counts: dict[tuple[str, str], list[bool]] = {}
    for rec in records:
        used = (rec.get("trajectory") or {}).get("used") or {}
        if rec.get("outcome") not in COUNTED:
            continue
        for kind in ("skills", "agents", "mcp_servers"):
            if used.get(kind):
                counts.setdefault((str(rec.get("tier")), kind), []).append(any(used[kind].values()))
    rows = []
    for (tier, kind), flags in sorted(
        counts.items(), key=lambda kv: (tier_key(kv[0][0]), kv[0][1])
    ):
        share = sum(flags) / len(flags)
        rows.append(
            {
                "tier": tier,
                "kind": KINDS[kind],
                "runs": len(flags),
                "used": sum(flags),
                "share": share,
                "note": "never used: not an ablation of it" if not share else "",
            }
        )
    return rows
