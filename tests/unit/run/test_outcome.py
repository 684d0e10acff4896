"""`run/outcome.classify` on its own: each way a run ends, the outcome class it gets and the
order in which the reasons win (a run that fails the ablation check is void whatever else
happened; a budget stop is not an agent error; a CLI that ends well is judged)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_scylla.run.agents import Result
from pytest_scylla.run.gateway.routes import Route
from pytest_scylla.run.outcome import classify
from pytest_scylla.run.sandbox import Finished

OK = Finished(exit_code=0, timed_out=False, seconds=3.0)
DONE = Result(found=True, subtype="success", final_message="Done.")


def _route(**fields: Any) -> Route:
    route = Route(key="r", log_path=Path("/nonexistent/calls.jsonl"))
    for name, value in fields.items():
        setattr(route, name, value)
    return route


INFRA = {"status": 529, "retry_after": None, "detail": "overloaded"}


@pytest.mark.parametrize(
    ("finished", "result", "route", "sandbox_error", "outcome", "says"),
    [
        (OK, DONE, {}, None, None, ""),  # ended well: judged
        (OK, Result(found=True, subtype="error_max_turns", is_error=True), {}, None, None, ""),
        (
            OK,
            DONE,
            {"ablation": {"problems": ["declared skill 'x' is missing"]}},
            None,
            "infra_error",
            "ablation check failed: declared skill 'x' is missing",
        ),
        # the ablation wins over a timeout: the run measured another condition
        (
            Finished(None, True, 300.0),
            Result(),
            {"ablation": {"problems": ["p"]}},
            None,
            "infra_error",
            "ablation check failed: p",
        ),
        (OK, DONE, {"replay_diverged": "call 3 differs"}, None, "infra_error", "call 3 differs"),
        (
            Finished(None, True, 300.0),
            Result(),
            {},
            None,
            "timeout",
            "agent killed at the case timeout (300s)",
        ),
        (
            Finished(1, False, 9.0),
            Result(found=True, is_error=True),
            {"budget_exceeded": True, "max_cost_usd": 0.5},
            None,
            "budget_exceeded",
            "gateway refused calls over the run budget $0.50",
        ),
        (
            Finished(127, False, 0.1),
            Result(),
            {},
            "bwrap: No such file",
            "infra_error",
            "the sandbox could not start the CLI: bwrap: No such file",
        ),
        (
            Finished(1, False, 9.0),
            Result(),
            {"infra": [INFRA], "calls": 2},
            None,
            "infra_error",
            "upstream failure: 1 call(s) failed, last status 529",
        ),
        (
            Finished(137, False, 9.0),
            Result(),
            {"calls": 1},
            None,
            "agent_error",
            "CLI ended without a result (killed by signal 9): tail",
        ),
        (
            Finished(1, False, 9.0),
            Result(
                found=True, subtype="error_during_execution", is_error=True, final_message="boom"
            ),
            {"calls": 1},
            None,
            "agent_error",
            "CLI reported an error (exit code 1, error_during_execution): boom",
        ),
        # a sandbox message after the CLI made calls is not a start failure
        (
            Finished(1, False, 9.0),
            Result(),
            {"calls": 3},
            "late",
            "agent_error",
            "CLI ended without a result (exit code 1)",
        ),
    ],
    ids=[
        "judged",
        "max-turns",
        "ablation",
        "ablation-over-timeout",
        "replay",
        "timeout",
        "budget",
        "sandbox",
        "upstream",
        "killed",
        "cli-error",
        "late-sandbox-message",
    ],
)
def test_each_ending_gets_its_outcome(
    finished: Finished,
    result: Result,
    route: dict[str, Any],
    sandbox_error: str | None,
    outcome: str | None,
    says: str,
) -> None:
    got, reason = classify(finished, result, _route(**route), "tail", sandbox_error)
    assert got == outcome
    assert reason.startswith(says), reason
