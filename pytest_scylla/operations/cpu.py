"""The CPU-seconds of one run, by who spent them, for the record's timings: the process's own
(the harness: workspace, overlay, gateway threads, record; under xdist the worker's), the agent's
(the sandboxed CLI and everything it started, reaped when the sandbox ends; docker's CLI runs in
the engine, so only its client shows), and the other processes the run waited for (git, the
checks). And the process's CPU when the run began: for a worker's first run, its start-up.
"""

from __future__ import annotations

import contextlib
import resource
from collections.abc import Iterator


def _seconds(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


class CpuMeter:
    """Started with the run; `agent()` wraps the CLI's sandboxed process; `timings()` at the end."""

    def __init__(self) -> None:
        self.process = _seconds(resource.RUSAGE_SELF)
        self.children = _seconds(resource.RUSAGE_CHILDREN)
        self.agent_s = 0.0

    @contextlib.contextmanager
    def agent(self) -> Iterator[None]:
        before = _seconds(resource.RUSAGE_CHILDREN)
        try:
            yield
        finally:
            self.agent_s += _seconds(resource.RUSAGE_CHILDREN) - before

    def timings(self) -> dict[str, float]:
        children = _seconds(resource.RUSAGE_CHILDREN) - self.children
        return {
            "process_cpu_before_s": round(self.process, 3),
            "harness_cpu_s": round(_seconds(resource.RUSAGE_SELF) - self.process, 3),
            "agent_cpu_s": round(self.agent_s, 3),
            "other_cpu_s": round(max(0.0, children - self.agent_s), 3),
        }
