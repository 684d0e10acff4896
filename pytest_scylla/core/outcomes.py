"""How a run ends, as typed values: the outcome its record holds, and why a run
`--scylla-stop=decided` skipped was never made. Each spelling is written here once; the rest
of the package names it (a `StrEnum` member is its string: `json.dumps`, `==` and `in` see the
same text, so records and exports are unchanged)."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal


class Outcome(StrEnum):
    """A run's outcome (`RunRecord.outcome`, given by `run.outcome`). The first five are
    counted in the pass rate and Cost-of-Pass (a timeout, a spent run budget or a crashed agent
    are failures of the agent); `infra_error` (the harness failed: no run happened) and
    `judge_error` (the panel gave no verdict: the agent's work stands) are excluded, and made
    again by a resume."""

    PASS = "pass"
    FAIL = "fail"
    TIMEOUT = "timeout"
    BUDGET_EXCEEDED = "budget_exceeded"
    AGENT_ERROR = "agent_error"
    INFRA_ERROR = "infra_error"
    JUDGE_ERROR = "judge_error"


COUNTED: tuple[Outcome, ...] = (  # in pass rate and CoP
    Outcome.PASS,
    Outcome.FAIL,
    Outcome.TIMEOUT,
    Outcome.BUDGET_EXCEEDED,
    Outcome.AGENT_ERROR,
)
OUTCOMES: tuple[Outcome, ...] = tuple(Outcome)  # every outcome a run can end with

# why `--scylla-stop=decided` skipped a run (`core.record.STOP_PROPERTY` on its reports):
# its comparison with the reference was decided, or found futile; or it is a reference cell
# every comparison with which is closed
StopKind = Literal["decided", "futile", "reference_closed"]
STOP_KINDS: tuple[StopKind, ...] = ("decided", "futile", "reference_closed")
