"""Whether each hook factor's hook ran, in `scylla ablate report`, and the terminal summary's
warning of a run whose hook failed: from the records' `hooks` (run/hooks.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import pytest

from pytest_scylla.cli.main import main
from pytest_scylla.core.record import RunRecord, verdict_table
from pytest_scylla.formats.ablation_plan import HEADER
from pytest_scylla.results.component_tables import for_session
from pytest_scylla.results.hook_notes import factor_notes, hook_factors, run_warnings
from pytest_scylla.results.tables import load

NOT_FOUND = "/bin/sh: 1: prettier: not found"
ARMS = {"01": frozenset({"hook:posttooluse", "skill:a"}), "02": frozenset({"skill:a"})}


def _hooks(ran: bool, failed: bool) -> dict[str, Any]:
    entry = {
        "event": "PostToolUse",
        "name": "PostToolUse:Write",
        "commands": ["prettier --write ."],
        "started": 1,
        "finished": 1,
        "failed": int(failed),
        "last_error": NOT_FOUND if failed else "",
    }
    warnings = [f"hook PostToolUse:Write failed 1 of 1 times: {NOT_FOUND}"] if failed else []
    return {"source": "stream", "ran": [entry] if ran else [], "warnings": warnings}


def _rec(arm: str, n: int, hooks: dict[str, Any] | None) -> dict[str, Any]:
    rec: dict[str, Any] = {"run_key": f"alpha-T0-{arm}-r{n}", "tier": "T0", "subtest": f"T0-{arm}"}
    if hooks is not None:
        rec.update({"hooks": hooks, "cli_result": {}})
    return rec


FACTORS = {"hook:posttooluse": {"posttooluse"}}


def test_a_hook_that_never_ran_is_flagged() -> None:
    records = [_rec("01", n, _hooks(ran=False, failed=False)) for n in range(1, 9)]
    records += [_rec("02", n, _hooks(ran=False, failed=False)) for n in range(1, 9)]
    assert factor_notes(records, ARMS, FACTORS) == [
        "hook:posttooluse: ran in 0 of 8 runs that keep it (NEVER RAN: its effect is that of an "
        "absent hook)"
    ]


def test_a_hook_that_always_failed_is_flagged_with_its_error() -> None:
    records = [_rec("01", n, _hooks(ran=True, failed=True)) for n in range(1, 9)]
    assert factor_notes(records, ARMS, FACTORS) == [
        f"hook:posttooluse: ran in 8 of 8 runs that keep it; failed in 8 of 8 (ALWAYS FAILED): "
        f"{NOT_FOUND}"
    ]


def test_control_a_hook_that_ran_well_is_only_counted() -> None:
    records = [_rec("01", n, _hooks(ran=True, failed=n == 1)) for n in range(1, 5)]
    records.append(_rec("01", 5, None))  # an infra_error before the agent: no hook record
    assert factor_notes(records, ARMS, FACTORS) == [
        f"hook:posttooluse: ran in 4 of 4 runs that keep it; failed in 1 of 4: {NOT_FOUND}; "
        "1 more without one (the agent did not run, or not Claude Code)"
    ]


def test_hook_factors_come_from_the_design(tmp_path: Path) -> None:
    design = {
        "components": {
            "hook:posttooluse": ["hook:posttooluse"],
            "group:hook": ["hook:stop", "hook:sessionstart"],
            "skill:a": ["skill:a"],
        }
    }
    (tmp_path / "design.json").write_text(json.dumps(design))
    assert hook_factors(tmp_path / "design.json") == {
        "hook:posttooluse": {"posttooluse"},
        "group:hook": {"stop", "sessionstart"},
    }
    assert hook_factors(tmp_path / "missing.json") == {}


def test_the_terminal_warns_of_each_run_whose_hook_failed() -> None:
    records = [_rec("01", n, _hooks(ran=True, failed=n > 1)) for n in range(1, 14)]
    lines = run_warnings(records)
    assert lines[0] == (
        f"HOOK FAILED in alpha-T0-01-r10: hook PostToolUse:Write failed 1 of 1 times: {NOT_FOUND}"
    )
    assert len(lines) == 11
    assert lines[-1] == "HOOK FAILED in 2 more runs (their run.json `hooks`)"
    assert run_warnings([_rec("01", 1, _hooks(ran=True, failed=False)), {"run_key": "x"}]) == []


def _experiment(tmp_path: Path) -> Path:
    """A leave-one-out plan of a hook and a skill, run 4 times per arm, the hook never run."""
    tiers = tmp_path / "ablation"
    tiers.mkdir()
    (tiers / "T0.yaml").write_text(f"{HEADER} from cfg\ntier: T0\n", encoding="utf-8")
    arms = {
        "01-full": ["hook:posttooluse", "skill:a"],
        "02-no-hook-posttooluse": ["skill:a"],
        "03-no-skill-a": ["hook:posttooluse"],
    }
    factors = ["hook:posttooluse", "skill:a"]
    design = {
        "design": "leave-one-out",
        "configuration": "cfg",
        "factors": factors,
        "components": {f: [f] for f in factors},
        "arms": arms,
    }
    (tiers / "design.json").write_text(json.dumps(design), encoding="utf-8")
    out = tmp_path / "exp"
    out.mkdir()
    manifest = {"tier_sources": {"T0": str(tiers / "T0.yaml")}}
    (out / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    lines = []
    for arm in arms:
        for run in range(1, 5):
            rec = _rec(arm[:2], run, _hooks(ran=False, failed=False))
            rec.update(case="alpha", run=run, model="m", outcome="pass", reason="", score=1.0)
            rec["cost_usd"] = 0.1
            lines.append(json.dumps(rec))
    (out / "runs.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


NEVER = "hook:posttooluse: ran in 0 of 8 runs that keep it (NEVER RAN"


def test_ablate_report_says_the_hook_factor_never_ran(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`scylla ablate report`: the hook factor's line, in the terminal and components.md, says
    its hook ran in none of the runs that keep it."""
    out = _experiment(tmp_path)
    assert main(["ablate", "report", str(out)]) == 0
    assert NEVER in capsys.readouterr().out
    assert NEVER in (out / "components.md").read_text()


def test_the_sessions_own_ablation_section_says_it_too(tmp_path: Path) -> None:
    out = _experiment(tmp_path)
    tables = load([out])
    planned = for_session(out, tables.runs, tables.records)
    assert planned is not None
    assert any(note.startswith(NEVER) for note in planned[2])


def test_a_failed_runs_text_carries_its_hook_warnings() -> None:
    rec: dict[str, Any] = {"outcome": "agent_error", "reason": "exit 1", "timings": {}}
    rec["hooks"] = _hooks(ran=True, failed=True)
    text = verdict_table(cast(RunRecord, rec))
    assert f"  WARNING hook PostToolUse:Write failed 1 of 1 times: {NOT_FOUND}" in text
