"""The oracle's simulated model latency (SCYLLA_ORACLE_LATENCY): fixed or drawn per call from a
seed of the run's key and the call's number, applied by the gateway to every call it answers
with the oracle, and refused at the session's start when it cannot be read.

Here the sessions; the in-process tests are in `tests/unit/run/gateway/test_latency.py`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_scylla.run.gateway import latency


def test_an_unreadable_latency_stops_the_session_at_its_start(
    mini: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(latency.ENV, "fast")
    result = pytester.runpytest("cases", "--co", "-p", "no:xdist", "--scylla-oracle")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: environment: SCYLLA_ORACLE_LATENCY='fast': expected "
            "one of <seconds>, uniform:<low>,<high>, *"
        ]
    )
    assert "Traceback" not in result.stderr.str()


IDLE = """
import os, threading
from pytest_scylla.core import warm
warm.import_soon("json.tool")
warm._thread.join(0.5)  # started, waiting for more
print(os.getpriority(os.PRIO_PROCESS, warm._thread.native_id))
warm.at_idle_priority()  # an xdist controller's, once its workers start
print(os.getpriority(os.PRIO_PROCESS, warm._thread.native_id),
      os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
"""


@pytest.mark.skipif(sys.platform != "linux", reason="thread priorities are set on Linux only")
def test_a_controllers_background_imports_run_at_idle_priority() -> None:
    """In a process that runs agents the import thread keeps the process's priority; once the
    process is an xdist controller it drops to idle priority, and only that thread does."""
    done = subprocess.run(
        [sys.executable, "-c", IDLE], capture_output=True, text=True, timeout=60, check=True
    )
    own = os.getpriority(os.PRIO_PROCESS, 0)
    assert done.stdout.split() == [str(own), "19", str(own)]


SEEN = """

@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    import json, sys
    from pytest_scylla.core import warm
    (config.rootpath / 'seen.json').write_text(json.dumps({
        'warmed': sorted(warm._started), 'modules': sorted(sys.modules)}))
"""


@pytest.mark.parametrize(("select", "tiers"), [("T0", 1), ("T0 or T1", 2)])
def test_a_session_imports_the_statistics_it_exports_need_in_the_background_and_no_more(
    standin: Path, pytester: pytest.Pytester, select: str, tiers: int
) -> None:
    """Issue 18: the exports' libraries are imported in the background as the records arrive
    (scipy.special for the intervals from the first; scipy.stats and statsmodels for the tier
    comparisons once a second tier has one), not after the last run; a one-tier session never
    imports the comparisons' libraries."""
    with open(standin / "conftest.py", "a", encoding="utf-8") as handle:
        handle.write(SEEN)
    result = pytester.runpytest_subprocess(
        "cases",
        "-p",
        "no:xdist",
        "--scylla-runs=1",
        "-k",
        select,
        f"--scylla-out={standin / 'out'}",
    )
    assert result.ret in (0, 1), result.stdout.str()[-2000:]
    seen = json.loads((standin / "seen.json").read_text())
    modules = set(seen["modules"])
    assert {"scipy.special"} <= set(seen["warmed"])
    assert "scipy.special" in modules
    comparisons = {"scipy.stats", "statsmodels.stats.multitest"}
    assert "scipy.stats" in set(seen["warmed"]) & modules  # the stand-in's outcomes differ
    if tiers == 1:
        assert "statsmodels.stats.multitest" not in seen["warmed"]
        assert not {m for m in modules if m.split(".")[0] == "statsmodels"}
    else:
        assert comparisons <= set(seen["warmed"])
        assert comparisons <= modules
