"""`operations/plan.estimate` on its own: what it counts as stored, how it estimates from the
history of sibling folders at the finest level that has data (case x tier, case, tier, all),
that a real run is estimated from its own model's history only, and that runs without history
are `?` bounded by their limits, never $0.00."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_scylla.core.runspec import RunSpec
from pytest_scylla.formats.spec import load_case
from pytest_scylla.formats.tiers import TierSet
from pytest_scylla.operations.plan import estimate

from ...conftest import FIXTURES

MINI = FIXTURES / "mini"


def _specs(refs: list[str], runs: int = 1) -> list[RunSpec]:
    tiers = TierSet(MINI / "tiers")
    case = load_case(
        MINI / "cases" / "alpha" / "test.yaml", MINI / "rubrics", known_tiers=tiers.names
    )
    return [RunSpec(case, tiers.resolve(ref), run) for ref in refs for run in range(1, runs + 1)]


def _store(folder: Path, *records: dict[str, Any]) -> None:
    folder.mkdir(parents=True)
    (folder / "runs.jsonl").write_text(
        "".join(
            json.dumps(
                {
                    "run_key": f"k{i}",
                    "case": "alpha",
                    "outcome": "pass",
                    "simulated": False,
                    "model": "claude-sonnet-5",
                    "timings": {"total_s": 60.0},
                    "judge_cost_usd": 0.0,
                    **rec,
                }
            )
            + "\n"
            for i, rec in enumerate(records)
        )
    )


def _row(lines: list[str], tier: str) -> list[str]:
    return next(line.split() for line in lines if line.startswith(f"{tier} "))


def test_the_finest_level_with_history_wins_and_only_its_models(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    _store(
        reports / "old",
        {"tier": "T0", "cost_usd": 0.10},
        {"tier": "T0", "cost_usd": 0.30},  # alpha x T0
        {"tier": "T1", "cost_usd": 1.00, "case": "other"},  # below alpha's own level
        {"tier": "T0", "cost_usd": 9.0, "model": "claude-haiku-4-5"},  # another model
        {"tier": "T0", "cost_usd": 9.0, "outcome": "infra_error"},
    )  # void: not history
    lines = estimate(
        _specs(["T0-00", "T0-01", "T1-01"], runs=2),
        reports / "new",
        "claude-sonnet-5",
        None,
        False,
        False,
        2,
        10.0,
    )
    assert _row(lines, "T0") == ["T0", "4", "0", "4", "$0.80", "2", "min"]  # 4 x mean 0.20
    # alpha x T1 has no history: alpha's (any tier) comes before T1's (any case)
    assert _row(lines, "T1") == ["T1", "2", "0", "2", "$0.40", "1", "min"]
    assert "6 to run: about $1.20 and 3 min for 6 on 2 worker(s), from 4 stored runs" in lines[-2]
    assert lines[-1] == "budget $10.00: the estimate fits"


def test_runs_without_history_are_unknown_and_bounded_by_their_limits(tmp_path: Path) -> None:
    """Another model's runs are no history for this one: every run is `?`, bounded by alpha's
    default limit ($2.00 each), and the budget is held against those limits."""
    reports = tmp_path / "reports"
    _store(reports / "old", {"tier": "T0", "cost_usd": 0.25, "model": "claude-haiku-4-5"})
    lines = estimate(
        _specs(["T0-01", "T1-01"]), reports / "new", "claude-sonnet-5", None, False, False, 1, 3.0
    )
    text = "\n".join(lines)
    assert _row(lines, "T0")[4] == "?"
    assert _row(lines, "T1")[4] == "?"
    assert "2 to run: no estimate (no stored runs of history)" in text
    assert "no history for 2 runs (? above)" in text
    assert "add up to $4.00 of agent spend at most" in text
    assert lines[-1].startswith("budget $3.00: the estimate may not fit")
    assert "$0.00" not in text


def test_stored_runs_count_as_stored_unless_fresh(tmp_path: Path) -> None:
    out = tmp_path / "reports" / "exp"
    spec = _specs(["T0-01"])[0]
    run = out / "runs" / spec.key.folder
    run.mkdir(parents=True)
    (run / "run.json").write_text(
        json.dumps(
            {
                "run_key": spec.key.folder,
                "case": "alpha",
                "tier": "T0",
                "outcome": "pass",
                "cost_usd": 0.5,
                "timings": {"total_s": 30.0},
                "simulated": True,
            }
        )
    )
    kept = estimate([spec], out, "m", "solution", False, False, 1, None)
    assert _row(kept, "T0")[:4] == ["T0", "1", "1", "0"]
    fresh = estimate([spec], out, "m", "solution", True, False, 1, None)
    assert _row(fresh, "T0")[:4] == ["T0", "1", "0", "1"]
    assert _row(fresh, "T0")[4] == "$0.50"  # its own folder is history (oracle runs: one pool)
    with pytest.raises(StopIteration):
        _row(kept, "T1")
