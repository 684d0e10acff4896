"""The oracle's simulated model latency (SCYLLA_ORACLE_LATENCY): fixed or drawn per call from a
seed of the run's key and the call's number, applied by the gateway to every call it answers
with the oracle, and refused at the session's start when it cannot be read."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from pytest_scylla.run.gateway import Gateway, Route, latency
from pytest_scylla.run.gateway.oracle import Script


def test_latency_is_fixed_or_drawn_reproducibly_per_run_and_call() -> None:
    assert latency.seconds("run-a", 1, "") == 0.0
    assert latency.seconds("run-a", 1, "1.5") == 1.5
    drawn = [latency.seconds("run-a", call, "uniform:0.5,2") for call in range(200)]
    assert all(0.5 <= d <= 2 for d in drawn)
    assert len(set(drawn)) == 200  # one draw per call
    assert drawn == [latency.seconds("run-a", call, "uniform:0.5,2") for call in range(200)]
    assert drawn != [latency.seconds("run-b", call, "uniform:0.5,2") for call in range(200)]
    tail = [latency.seconds("run-a", call, "lognormal:1,0.5") for call in range(2000)]
    assert statistics.median(tail) == pytest.approx(1.0, rel=0.1)
    assert max(tail) > 2 * statistics.median(tail)  # long-tailed, as real latencies are
    mean = statistics.fmean(latency.seconds("r", c, "exponential:0.4") for c in range(4000))
    assert mean == pytest.approx(0.4, rel=0.1)
    assert latency.seconds("run-a", 1, "10000") == latency.MAX_SECONDS
    for bad in ("fast", "-1", "uniform:2", "gamma:1,2", "lognormal:a,b"):
        with pytest.raises(latency.LatencyError, match=r"expected one of|unknown distribution"):
            latency.seconds("run-a", 1, bad)


def _call(gateway: Gateway, key: str) -> None:
    httpx.post(
        gateway.base_url(key) + "/v1/messages",
        timeout=30,
        json={
            "model": "claude-sonnet-5",
            "max_tokens": 16,
            "stream": False,
            "messages": [{"role": "user", "content": "hi"}],
        },
    ).raise_for_status()


def test_the_gateway_waits_the_latency_before_an_oracle_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each oracle call's logged latency includes the simulated wait; without the knob (the
    control) it does not."""
    gateway = Gateway().start()
    try:
        for key, value in (("slow-run-0a1b", "1"), ("fast-run-0a1b", "")):
            monkeypatch.setenv(latency.ENV, value)
            gateway.open(
                Route(
                    key=key,
                    log_path=tmp_path / f"{key}.jsonl",
                    script=Script(mode="solution", workspace=tmp_path, files=()),
                )
            )
            _call(gateway, key)
    finally:
        gateway.stop()
    slow = [json.loads(x)["latency_s"] for x in (tmp_path / "slow-run-0a1b.jsonl").open()]
    fast = [json.loads(x)["latency_s"] for x in (tmp_path / "fast-run-0a1b.jsonl").open()]
    assert min(slow) >= 1.0
    assert max(fast) < 1.0  # an oracle answer takes milliseconds


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


def test_background_imports_are_made_once_in_order_and_a_failing_one_is_left_to_its_user() -> None:
    import sys

    from pytest_scylla.core import warm

    names = ["json.tool", "pytest_scylla_no_such_module", "xml.dom.minidom"]
    for name in names:  # small stdlib modules this process has not imported, and a missing one
        sys.modules.pop(name, None)
        warm._started.discard(name)
    warm.import_soon(*names)
    warm.import_soon(*names)  # each once per process
    assert warm._thread is not None
    assert warm._thread.name == "scylla-imports"
    for _ in range(200):
        if "xml.dom.minidom" in sys.modules:
            break
        time.sleep(0.05)
    assert "json.tool" in sys.modules
    assert "xml.dom.minidom" in sys.modules
    assert "pytest_scylla_no_such_module" not in sys.modules  # raises where it is imported


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
