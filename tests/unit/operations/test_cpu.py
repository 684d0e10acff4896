"""A run's CPU-seconds split by who spent them (operations/cpu.py)."""

from __future__ import annotations

import subprocess
import sys
import time

from pytest_scylla.operations.cpu import CpuMeter

BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < {}: pass"


def _burn_here(seconds: float) -> None:
    began = time.process_time()
    while time.process_time() - began < seconds:
        pass


def test_the_agents_children_the_others_and_the_harness_are_told_apart() -> None:
    meter = CpuMeter()
    with meter.agent():
        subprocess.run([sys.executable, "-c", BURN.format(0.4)], check=True)
    subprocess.run([sys.executable, "-c", BURN.format(0.2)], check=True)  # a check, say
    _burn_here(0.3)
    found = meter.timings()
    assert 0.4 <= found["agent_cpu_s"] < 0.4 + 0.3  # the child's burn and its interpreter
    assert 0.2 <= found["other_cpu_s"] < 0.2 + 0.3
    assert 0.3 <= found["harness_cpu_s"] < 0.3 + 0.3
    assert found["process_cpu_before_s"] > 0  # this process's CPU before the meter started
