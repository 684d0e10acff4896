"""Operations: resume, rejudge, session budgets, usage-window pauses, plan and progress, all
through the real CLI against the oracle.

Here the in-process tests; the sessions are in `tests/e2e/test_resume.py`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

CONDITIONS = {
    "model": "claude-sonnet-5",
    "cli": "2.1.197",
    "oracle": None,
    "sandbox": "bwrap",
    "inputs": {"cases/alpha/prompt.md": "1" * 16},
    "subtest": {},
}


@pytest.mark.parametrize(
    ("stored", "options", "action", "says"),
    [
        (None, {}, "run", ""),
        ("folder only", {}, "run", "half-written run"),
        (None, {"rejudge": True}, "skip", "nothing to re-score"),
        ("not json", {}, "run", "unreadable record"),
        ("not json", {"rejudge": True}, "skip", "unreadable"),
        ({"outcome": "pass"}, {}, "cached", ""),
        ({"outcome": "pass"}, {"fresh": True}, "run", "--scylla-fresh"),
        ({"outcome": "fail"}, {"rejudge": True}, "rejudge", ""),
        ({"outcome": "infra_error", "reason": "interrupted"}, {}, "run", "stored infra_error"),
        ({"outcome": "infra_error"}, {"rejudge": True}, "skip", "is an infra_error"),
        ({"outcome": "judge_error"}, {}, "rejudge", "judges are asked again"),
        (
            {"outcome": "pass", "config_hash": "other", "inputs": {"tiers/T0.yaml": "a"}},
            {},
            "conflict",
            "changed: tiers/T0.yaml: changed). Run it again with --scylla-fresh",
        ),
        # only the model changed: named with both values, not a list of every possible cause
        (
            {"outcome": "pass", "config_hash": "other", "conditions": {**CONDITIONS, "model": "a"}},
            {},
            "conflict",
            "(config hash other, now now; changed: model: a -> claude-sonnet-5). ",
        ),
        (
            {
                "outcome": "pass",
                "config_hash": "other",
                "conditions": {
                    **CONDITIONS,
                    "inputs": {"cases/alpha/prompt.md": "0" * 16},
                    "subtest": {"tools": 1},
                },
            },
            {},
            "conflict",
            "changed: cases/alpha/prompt.md: changed; subtest.tools: removed). ",
        ),
        (
            {"outcome": "pass", "config_hash": "other", "model": "a"},
            {},
            "conflict",
            "changed: model: a -> claude-sonnet-5). ",
        ),  # a record from before conditions were kept
        ({"outcome": "pass", "judge_hash": "other"}, {}, "conflict", "--scylla-rejudge"),
    ],
)
def test_what_resume_does_with_each_kind_of_stored_run(
    tmp_path: Path, stored: Any, options: dict[str, bool], action: str, says: str
) -> None:
    from pytest_scylla.operations.resume import decide

    run_dir = tmp_path / "runs" / "alpha-T0-01-r1"
    if stored is not None:
        run_dir.mkdir(parents=True)
    if isinstance(stored, dict):
        rec = {
            "config_hash": "now",
            "judge_hash": "panel",
            "inputs": {"tiers/T0.yaml": "b"},
            **stored,
        }
        (run_dir / "run.json").write_text(json.dumps(rec))
    elif stored == "not json":
        (run_dir / "run.json").write_text('{"outc')
    decision = decide(
        run_dir, "now", "panel", {"tiers/T0.yaml": "b"}, **options, conditions=CONDITIONS
    )
    assert (decision.action, says in decision.reason) == (action, True), decision.reason


def test_a_stored_runs_evidence_is_what_its_judges_saw_live(tmp_path: Path) -> None:
    """Judging a stored run (resume after a kill, rejudge) reads back exactly what the live
    judges would have seen: a file name with spaces stays one name, a cut list's note one line,
    a diff's CRLF lines stay CRLF (the written files as `_inspect` writes them)."""
    from pytest_scylla.operations.resume import stored_evidence
    from pytest_scylla.run.checks import CheckResult

    files = ["a file.txt", "src/x.py", "[... more files than 5000; list cut ...]"]
    diff = "diff --git a/w.bat b/w.bat\n+echo on\r\n+caf\u00e9\n"
    (tmp_path / "files.txt").write_text("\n".join(files) + "\n", encoding="utf-8")
    (tmp_path / "diff.patch").write_text(diff, encoding="utf-8")
    check = CheckResult("runs", False, 1, 0.1, "nok\n", "", "stdout differs")
    evidence = stored_evidence(tmp_path, {"final_message": "done", "checks": [check.to_json()]})
    assert (evidence.final_message, evidence.diff, evidence.files) == ("done", diff, files)
    # by value: an in-process pytester session may leave a second copy of the module loaded
    assert [c.to_json() for c in evidence.checks] == [check.to_json()]
    assert stored_evidence(tmp_path / "none", {}).files == []
