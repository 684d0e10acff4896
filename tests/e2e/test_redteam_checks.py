"""Red team (#29 items 2 and 8): one check must not defeat another, and depth must not hide a
file from the scan. Each attack is first shown to work the old way (the positive control), then
shown to fail against the harness.

Here the sessions; the in-process tests are in `tests/unit/run/test_redteam_checks.py`."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_scylla.formats.spec import Check
from pytest_scylla.run import checks

from ..conftest import Edit, needs_bwrap
from ..support.check_attack import EVIL, HIDDEN, REAL


@pytest.mark.parametrize("box", ["local", "bwrap"])
def test_a_process_a_check_detaches_does_not_outlive_the_check(tmp_path: Path, box: str) -> None:
    wrap = None
    if box == "bwrap":
        needs_bwrap()
        from pytest_scylla.run.sandbox import Bwrap

        wrap = functools.partial(Bwrap().wrap, cwd=tmp_path, private=tmp_path)
    marker = tmp_path / "still-running"
    script = (
        f"import os, time\nif os.fork() == 0:\n    os.setsid()\n"
        f"    os.close(1); os.close(2)\n    time.sleep(0.6)\n"
        f"    open({str(marker)!r}, 'w').close()\n    os._exit(0)\n"
    )
    check = Check(name="detach", run=(sys.executable, "-c", script), timeout_seconds=30)
    # positive control: the process group alone (the old cleanup) does not reach it
    proc = subprocess.Popen(check.run, start_new_session=True, stdout=subprocess.PIPE)
    proc.communicate()
    os.killpg(proc.pid, 9) if _alive_group(proc.pid) else None
    time.sleep(1.0)
    assert marker.exists()
    marker.unlink()

    result = checks.run_check(check, tmp_path, {"PATH": os.environ["PATH"]}, wrap)
    assert result.passed
    time.sleep(1.0)
    assert not marker.exists()


def _alive_group(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.slow  # the real CLI end to end; the attack and its control run above
def test_end_to_end_the_record_names_the_rewritten_hidden_file(
    mini: Path, pytester: pytest.Pytester, edit: Edit, oracle: list[str]
) -> None:
    """One run of the real CLI (oracle upstream) whose work holds the module above: the later
    check runs the real hidden script and the run's record says what was undone."""
    hidden = mini / "cases" / "alpha" / "hidden" / "scylla_hidden_tests"
    hidden.mkdir(parents=True)
    (hidden / "check_real.py").write_text(REAL)
    (mini / "cases" / "alpha" / "solution" / "evil.py").write_text(EVIL)
    edit(
        "cases/alpha/test.yaml",
        "solution: solution",
        "  - name: imports\n    run: python -c 'import evil'\n"
        f"  - name: hidden-tests\n    run: python {HIDDEN}\nhidden: hidden\nsolution: solution",
    )
    out = mini / "out"
    pytester.runpytest(
        "cases", "-k", "alpha and T0-01", "-p", "no:xdist", *oracle, f"--scylla-out={out}"
    )
    rec = json.loads((out / "runs" / "alpha-T0-01-r1" / "run.json").read_text())
    results = {c["name"]: c for c in rec["checks"]}
    assert results["imports"]["passed"], results["imports"]
    assert not results["hidden-tests"]["passed"]
    assert "VALUE is 0" in results["hidden-tests"]["stderr"]
    found = {(f["kind"], f["path"]): f["detail"] for f in rec["integrity"]}
    assert "after check 'imports'" in found["hidden_changed", HIDDEN]
