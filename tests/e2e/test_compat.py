"""Living with other pytest plugins and versions: pytest-timeout's session limit never cuts a run
the harness would let finish. (The lowest supported pytest runs the plugin's own tests in CI:
`.ci/run`'s last stage.) And `scylla check-case`, which checks a case as a project's tests
would."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def test_a_session_timeout_shorter_than_a_run_leaves_the_runs_whole(
    mini: Path, pytester: pytest.Pytester, oracle: list[str]
) -> None:
    """`--timeout=1` (pytest-timeout) with a run that takes longer: the run item gets its
    case's timeout plus the harness's margin and passes; the control, an ordinary test of the
    same session sleeping past the limit, is cut by pytest-timeout."""
    pytest.importorskip("pytest_timeout")  # a dev dependency: installed wherever tests run
    (mini / "test_plain.py").write_text("import time\n\n\ndef test_sleeps():\n    time.sleep(3)\n")
    out = mini / "out"
    result = pytester.runpytest_subprocess(
        "cases",
        "test_plain.py",
        "-k",
        "alpha and T0-01 or sleeps",
        "-p",
        "no:xdist",
        "--timeout=1",
        *oracle,
        f"--scylla-out={out}",
    )
    result.assert_outcomes(passed=1, failed=1)
    assert "Timeout" in result.stdout.str()  # the control: pytest-timeout was active
    result.stdout.fnmatch_lines(["FAILED test_plain.py::test_sleeps*"])
    rec = json.loads((out / "runs" / "alpha-T0-01-r1" / "run.json").read_text())
    assert rec["outcome"] == "pass"
    assert rec["timings"]["total_s"] > 1  # it did outlast the session's limit


@pytest.mark.slow  # one oracle session of three cases (~20 s)
def test_check_case_tells_a_case_that_can_fail_from_one_that_cannot(
    tmp_path: Path,
    oracle: list[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`scylla check-case`: alpha (its check fails on the source, passes on the solution) is
    ok; a copy whose check passes on the untouched source too, and a copy whose reference
    solution fails its check, are each named with what is wrong, and the exit code is 1."""
    import shutil

    from pytest_scylla.cli.main import main

    from ..conftest import FIXTURES, needs_bwrap

    needs_bwrap()
    root = tmp_path / "p"
    shutil.copytree(FIXTURES / "mini", root)
    alpha = root / "cases" / "alpha"
    for name, edit in (
        ("trivial", ('expect_stdout: {exact: "ok\\n"}', "expect_exit: 0")),
        ("broken", ("id: alpha", "id: alpha")),
    ):
        shutil.copytree(alpha, root / "cases" / name)
        spec = root / "cases" / name / "test.yaml"
        spec.write_text(spec.read_text().replace("id: alpha", f"id: {name}").replace(*edit))
    (root / "cases" / "broken" / "solution" / "main.py").write_text("print('not ok')\n")
    shutil.rmtree(root / "cases" / "beta")
    monkeypatch.chdir(root)
    monkeypatch.setenv("PYTEST_ADDOPTS", oracle[1])  # the test run's CLI baseline cache
    assert main(["check-case"]) == 1
    said = capsys.readouterr().out.splitlines()
    assert said[0] == (
        "ok   alpha: the reference solution passes all 1 checks; the untouched source fails runs"
    )
    assert said[1].startswith("FAIL broken: the reference solution fails check(s) runs (")
    assert said[2].startswith("FAIL trivial: the untouched source already passes every check")
    assert main(["check-case", "nowhere"]) == 2
    assert "scylla check-case: nowhere: no case here" in capsys.readouterr().err
