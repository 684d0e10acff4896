"""The oracle's simulated model latency (SCYLLA_ORACLE_LATENCY): fixed or drawn per call from a
seed of the run's key and the call's number, applied by the gateway to every call it answers
with the oracle, and refused at the session's start when it cannot be read.

Here the in-process tests; the sessions are in `tests/e2e/test_latency.py`."""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

import httpx
import pytest

from pytest_scylla.run.gateway import Gateway, Route, latency
from pytest_scylla.run.gateway.oracle.model import Script


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
