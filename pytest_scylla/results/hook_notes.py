"""Whether the hooks of an experiment ran, from the run records' `hooks` (run/hooks.py): the
terminal summary's warnings (a hook that failed in a run) and, for `scylla ablate report`, a
line per hook factor saying in how many runs of the arms that keep it its hook ran and failed.
A factor whose hook never ran, or failed in every run, measures the hook's absence, not the
hook: the line says so instead of leaving the estimate to stand alone.

What the records say of hooks comes from the CLI's stream (informational, bounded): these lines
are warnings beside the results, never a change to them.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_scylla.formats.components import slug

MAX_LINES = 10  # runs with a failed hook listed in the terminal summary


def run_warnings(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per run whose record warns of a failed hook (the first `MAX_LINES`), then how
    many more."""
    warned = [(str(r.get("run_key")), _warnings(r)) for r in records]
    warned = [(key, found) for key, found in sorted(warned) if found]
    lines = [f"HOOK FAILED in {key}: {found[0]}" for key, found in warned[:MAX_LINES]]
    if len(warned) > MAX_LINES:
        lines.append(f"HOOK FAILED in {len(warned) - MAX_LINES} more runs (their run.json `hooks`)")
    return lines


def _warnings(rec: Mapping[str, Any]) -> list[str]:
    hooks = rec.get("hooks")
    found = hooks.get("warnings") if isinstance(hooks, dict) else None
    return [str(w) for w in found] if isinstance(found, list) else []


def for_report(
    records: Sequence[Mapping[str, Any]],
    runs: Sequence[Mapping[str, Any]],
    design_path: Path,
    arms: Mapping[str, frozenset[str]],
) -> list[str]:
    """`factor_notes` for the records of the report's `runs` (chosen by agent and model)."""
    keys = {str(r.get("run_key")) for r in runs}
    chosen = [r for r in records if str(r.get("run_key")) in keys]
    return factor_notes(chosen, arms, hook_factors(design_path))


def hook_factors(design_path: Path) -> dict[str, set[str]]:
    """Factor -> the slugs of the hook events it carries (`hook:posttooluse` -> posttooluse),
    from the plan's design.json; {} when it has none or cannot be read."""
    try:
        components = json.loads(design_path.read_text(encoding="utf-8")).get("components") or {}
    except (OSError, ValueError, AttributeError):
        return {}
    found = {
        str(factor): {str(c).partition(":")[2] for c in ids if str(c).startswith("hook:")}
        for factor, ids in components.items()
        if isinstance(ids, list)
    }
    return {factor: events for factor, events in found.items() if events}


def factor_notes(
    records: Sequence[Mapping[str, Any]],
    arms: Mapping[str, frozenset[str]],
    factors: Mapping[str, set[str]],
) -> list[str]:
    """For each hook factor (`hook_factors`), the runs of the arms that keep it (`arms`: "03"
    -> the factors arm 03 keeps) in which its hook ran, and failed, with the commonest error."""
    notes = []
    for factor, events in sorted(factors.items()):
        keeping = [r for r in records if r.get("tier") == "T0" and factor in arms.get(_arm(r), ())]
        recorded = [r for r in keeping if isinstance(r.get("hooks"), dict) and "cli_result" in r]
        notes.append(_note(factor, events, recorded, len(keeping) - len(recorded)))
    return notes


def _arm(rec: Mapping[str, Any]) -> str:
    """The arm of a run of the plan's tier ("01" of the record's subtest "T0-01")."""
    return str(rec.get("subtest") or "").removeprefix("T0-")[:2]


def _note(factor: str, events: set[str], recorded: list[Mapping[str, Any]], unrecorded: int) -> str:
    """`hook:posttooluse: ran in 8 of 8 runs that keep it; failed in 8 of 8: <error>`."""
    ran = failed = 0
    errors: Counter[str] = Counter()
    for rec in recorded:
        mine = [e for e in rec["hooks"].get("ran") or [] if slug(str(e.get("event"))) in events]
        ran += any(e.get("finished") or e.get("started") for e in mine)
        bad = [e for e in mine if e.get("failed")]
        failed += bool(bad)
        errors.update(str(e.get("last_error") or "?") for e in bad[:1])
    n = len(recorded)
    text = f"{factor}: ran in {ran} of {n} runs that keep it"
    if n and ran == 0:
        text += " (NEVER RAN: its effect is that of an absent hook)"
    if failed:
        always = " (ALWAYS FAILED)" if failed == n else ""
        text += f"; failed in {failed} of {n}{always}: {errors.most_common(1)[0][0]}"
    if unrecorded:
        text += f"; {unrecorded} more without one (the agent did not run, or not Claude Code)"
    return text
