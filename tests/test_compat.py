"""Living with other pytest plugins and versions: pytest-timeout's session limit never cuts a run
the harness would let finish. (The lowest supported pytest runs the plugin's own tests in CI:
`.ci/run`'s last stage.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def test_a_session_timeout_shorter_than_a_run_leaves_the_runs_whole(
        mini: Path, pytester: pytest.Pytester, oracle: list[str]) -> None:
    """`--timeout=1` (pytest-timeout) with a run that takes longer: the run item gets its
    case's timeout plus the harness's margin and passes; the control, an ordinary test of the
    same session sleeping past the limit, is cut by pytest-timeout."""
    pytest.importorskip("pytest_timeout")  # a dev dependency: installed wherever tests run
    (mini / "test_plain.py").write_text("import time\n\n\ndef test_sleeps():\n"
                                        "    time.sleep(3)\n")
    out = mini / "out"
    result = pytester.runpytest_subprocess(
        "cases", "test_plain.py", "-k", "alpha and T0-01 or sleeps", "-p", "no:xdist",
        "--timeout=1", *oracle, f"--scylla-out={out}")
    result.assert_outcomes(passed=1, failed=1)
    assert "Timeout" in result.stdout.str()  # the control: pytest-timeout was active
    result.stdout.fnmatch_lines(["FAILED test_plain.py::test_sleeps*"])
    rec = json.loads((out / "runs" / "alpha-T0-01-r1" / "run.json").read_text())
    assert rec["outcome"] == "pass"
    assert rec["timings"]["total_s"] > 1  # it did outlast the session's limit
