"""Simulated model latency for the oracle: `SCYLLA_ORACLE_LATENCY` in the gateway's environment
delays every call the oracle answers (the agent's and the judges'), so that the harness can be
measured the way real runs behave, waiting on the model most of the time.

    SCYLLA_ORACLE_LATENCY=1.5                  every call takes 1.5 s
    SCYLLA_ORACLE_LATENCY=uniform:0.5,2        drawn uniformly between 0.5 and 2 s
    SCYLLA_ORACLE_LATENCY=lognormal:1,0.5      median 1 s, sigma 0.5 (long-tailed, as real APIs)
    SCYLLA_ORACLE_LATENCY=exponential:1        mean 1 s

A drawn latency is seeded by the run's key and the call's number in the run, so the same run
waits the same times in every session, whatever the worker count. A value that cannot be read
stops the session at its start (a usage error naming these forms).
"""

from __future__ import annotations

import hashlib
import os
import random

ENV = "SCYLLA_ORACLE_LATENCY"
FORMS = ("<seconds>", "uniform:<low>,<high>", "lognormal:<median>,<sigma>", "exponential:<mean>")
MAX_SECONDS = 600.0  # one call never waits longer than this, whatever is drawn


class LatencyError(ValueError):
    """SCYLLA_ORACLE_LATENCY holds something that is not one of `FORMS`."""


def _numbers(text: str, count: int, spec: str) -> list[float]:
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        values = []
    if len(values) != count or any(v < 0 for v in values):
        raise LatencyError(
            f"{ENV}={spec!r}: expected one of {', '.join(FORMS)} (non-negative seconds)"
        )
    return values


def seconds(run_key: str, call: int, spec: str | None = None) -> float:
    """How long the oracle waits before answering call `call` of the run `run_key` (0 when
    SCYLLA_ORACLE_LATENCY is unset)."""
    spec = (os.environ.get(ENV, "") if spec is None else spec).strip()
    if not spec:
        return 0.0
    kind, _, params = spec.partition(":")
    if not params:
        return min(MAX_SECONDS, _numbers(kind, 1, spec)[0])
    seed = int(hashlib.sha256(f"{run_key}/{call}".encode()).hexdigest()[:16], 16)
    draw = random.Random(seed)
    if kind == "uniform":
        low, high = _numbers(params, 2, spec)
        value = draw.uniform(low, max(low, high))
    elif kind == "lognormal":
        median, sigma = _numbers(params, 2, spec)
        value = median * draw.lognormvariate(0.0, sigma) if median else 0.0
    elif kind == "exponential":
        mean = _numbers(params, 1, spec)[0]
        value = draw.expovariate(1 / mean) if mean else 0.0
    else:
        raise LatencyError(
            f"{ENV}={spec!r}: unknown distribution {kind!r}; expected one of {', '.join(FORMS)}"
        )
    return min(MAX_SECONDS, value)
