"""Every bad input to `scylla report` and `scylla import` ends in one `path[:line]: ...` line on
stderr and exit code 2: never a traceback, never a number read wrong. Each entry of the
catalogue breaks one thing in a small good input that the positive controls report with 0.

Here the sessions; the in-process tests are in `tests/unit/face/test_bad_results_input.py`."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_scylla.cli.main import main

from ..support.original_tree import RUN_DIR, run_tree


def _json_file(
    relative: Path | str, edit: Callable[[dict[str, Any]], Any]
) -> Callable[[Path], None]:
    def change(src: Path) -> None:
        path = src / relative
        path.write_text(json.dumps(edit(json.loads(path.read_text())), indent=2))

    return change


def _achieved(value: Any) -> Callable[[dict[str, Any]], Any]:
    def edit(data: dict[str, Any]) -> Any:
        data["criteria_scores"]["functional"]["achieved"] = value
        return data

    return edit


JUDGE_1 = RUN_DIR / "judge" / "judge_01" / "judgment.json"


# -- the positive controls: the good inputs, and the awkward ones that are good -------------


def _report(folder: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code = main(["report", str(folder), "--report", "none"])
    out, err = capsys.readouterr()
    assert (code, err) == (0, ""), err
    assert "Traceback" not in out
    summary: dict[str, Any] = json.loads((folder / "summary.json").read_text())
    return summary


def test_a_category_not_applicable_counts_in_no_rate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`achieved: null` (or N/A) in a judgment: a category that does not apply, left out of
    the implementation rate (3 of 4 points, not 3 of 4 + 2), not a crash."""
    src = run_tree(tmp_path / "src")
    _json_file(JUDGE_1, _achieved(None))(src)
    edit = _json_file(
        RUN_DIR / "judge" / "judge_02" / "judgment.json",
        lambda j: {
            **j,
            "criteria_scores": {
                **j["criteria_scores"],
                "docs": {"achieved": None, "max": 2.0, "score": None},
            },
        },
    )
    edit(src)
    assert main(["import", str(src), str(tmp_path / "dest")]) == 0
    assert "imported 1 runs" in capsys.readouterr().out
    rec = json.loads((tmp_path / "dest" / "runs.jsonl").read_text())
    assert [j["impl_rate"] for j in rec["judges"]] == [None, 0.75]
    assert rec["impl_rate"] == 0.75
    _report(tmp_path / "dest", capsys)
