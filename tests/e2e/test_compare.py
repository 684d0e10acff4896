"""`scylla compare BASE CANDIDATE`: the signs of the changes, their tests, the gate's exit code,
refusal of experiments of other cases or tiers, the conditions that changed, and a compare.md
that renders as a pull-request comment does (GitHub-flavoured Markdown tables).

Here the sessions; the in-process tests are in `tests/unit/face/test_compare.py`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_scylla.cli.main import main

from ..conftest import workers


def _rows(out: Path, table: str, metric: str) -> dict[tuple[str, ...], dict[str, Any]]:
    result = json.loads((out / "compare.json").read_text())
    keys = ("tier",) if table == "tiers" else ("case_id", "tier")
    return {tuple(r[k] for k in keys): r for r in result[table] if r["metric"] == metric}


@pytest.mark.slow
def test_two_oracle_experiments_that_differ_by_construction(
    mini: Path, pytester: pytest.Pytester, oracle: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """The same selection run by the oracle solving every task, then doing nothing: every
    tier's pass rate drops by 100 points, significantly, and the gate fails."""
    for mode in ("solution", "noop"):
        done = pytester.runpytest(
            "cases",
            "-m",
            "T0",
            *workers(2),
            f"--scylla-oracle={mode}",
            *oracle[1:],
            "--scylla-runs=3",
            f"--scylla-out={mini / mode}",
        )
        assert done.ret in (0, 1)
    out = mini / "cmp"
    assert (
        main(
            [
                "compare",
                str(mini / "solution"),
                str(mini / "noop"),
                "--out",
                str(out),
                "--fail-on-regression",
                "10",
            ]
        )
        == 1
    )
    t0 = _rows(out, "tiers", "pass_rate")["T0",]
    assert (t0["base"], t0["candidate"], t0["paired"], t0["significant"]) == (1.0, 0.0, True, True)
    result = json.loads((out / "compare.json").read_text())
    assert {"what": "oracle_modes", "base": ["solution"], "candidate": ["noop"]} in result[
        "conditions"
    ]
    assert "FAILED" in capsys.readouterr().out
