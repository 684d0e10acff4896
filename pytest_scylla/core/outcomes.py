"""How a run ends, as typed values: the outcome its record holds, and why a run
`--scylla-stop=decided` skipped was never made. Each spelling is written here once; the rest
of the package names it. The names are plain strings typed as `Literal`s (Inspect AI's
`EvalStatus` is the model), not enum members: a record crosses from an xdist worker to the
controller through execnet, which serialises only built-in types (an `Enum` member, even a
`StrEnum`'s, stops the worker: `can't serialize <enum 'Outcome'>`), and JSON, CSV, YAML and
`==` all see the same text."""

from __future__ import annotations

from typing import Final, Literal

OutcomeName = Literal[
    "pass", "fail", "timeout", "budget_exceeded", "agent_error", "infra_error", "judge_error"
]


class Outcome:
    """A run's outcome (`RunRecord.outcome`, given by `run.outcome`). The first five are
    counted in the pass rate and Cost-of-Pass (a timeout, a spent run budget or a crashed agent
    are failures of the agent); `infra_error` (the harness failed: no run happened) and
    `judge_error` (the panel gave no verdict: the agent's work stands) are excluded, and made
    again by a resume."""

    PASS: Final = "pass"
    FAIL: Final = "fail"
    TIMEOUT: Final = "timeout"
    BUDGET_EXCEEDED: Final = "budget_exceeded"
    AGENT_ERROR: Final = "agent_error"
    INFRA_ERROR: Final = "infra_error"
    JUDGE_ERROR: Final = "judge_error"


COUNTED: tuple[OutcomeName, ...] = (  # in pass rate and CoP
    Outcome.PASS,
    Outcome.FAIL,
    Outcome.TIMEOUT,
    Outcome.BUDGET_EXCEEDED,
    Outcome.AGENT_ERROR,
)
# every outcome a run can end with
OUTCOMES: tuple[OutcomeName, ...] = (*COUNTED, Outcome.INFRA_ERROR, Outcome.JUDGE_ERROR)

# why `--scylla-stop=decided` skipped a run (`core.record.STOP_PROPERTY` on its reports):
# its comparison with the reference was decided, or found futile; or it is a reference cell
# every comparison with which is closed
StopKind = Literal["decided", "futile", "reference_closed"]
STOP_KINDS: tuple[StopKind, ...] = ("decided", "futile", "reference_closed")
