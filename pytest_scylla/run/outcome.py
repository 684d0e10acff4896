"""How a run ends: `classify` sorts out the runs that are not judged normally (void, timed out,
over budget, crashed), `settle` gives every run its one outcome, `costs` says what the agent
cost and by whose measure. See ARCHITECTURE.md, "Outcomes"."""

from __future__ import annotations

from pytest_scylla.core import pricing
from pytest_scylla.core.outcomes import Outcome
from pytest_scylla.core.record import RunRecord
from pytest_scylla.formats.spec import Case
from pytest_scylla.run import integrity
from pytest_scylla.run.agents import Result
from pytest_scylla.run.gateway import Route
from pytest_scylla.run.sandbox import Finished

COST_TOLERANCE = 0.02  # relative difference between gateway and CLI cost that is still "agreeing"
BOUND = "sandbox_bound"  # the integrity finding of a bound the run broke (`Finished.violations`)


def bound_findings(finished: Finished) -> list[integrity.Finding]:
    """An integrity finding for each bound of the harness's channels the run broke."""
    return [integrity.Finding(BOUND, "", why) for why in finished.violations]


def settle(rec: RunRecord, case: Case, outcome: str | None, reason: str) -> None:
    """The run's outcome: the one `classify` gave (timeout, agent_error, ...), else the panel's
    (pass, fail, or judge_error without enough valid judges)."""
    if outcome is None and rec.get("consensus") is None:
        outcome, reason = (
            Outcome.JUDGE_ERROR,
            (
                f"only {rec['valid_judges']} valid judge(s), {rec['min_judges']} needed: "
                + "; ".join(
                    f"{j['judge_model']}: {j['errors'][-1] if j['errors'] else '?'}"
                    for j in rec["judges"]
                    if not j["valid"]
                )
            ),
        )
    elif outcome is None:
        passed = bool((rec.get("consensus") or {}).get("passed"))
        outcome = "pass" if passed else "fail"
        reason = "" if passed else judged_reason(rec, case.rubric.pass_threshold)
    rec.update({"outcome": outcome, "passed": outcome == "pass", "reason": reason})


def judged_reason(rec: RunRecord, threshold: float) -> str:
    """Why a judged run failed: the consensus below the threshold, required items unmet."""
    verdict = rec.get("consensus") or {}
    parts = []
    if verdict["score"] < threshold:
        parts.append(
            f"consensus {verdict['score']:.2f} (grade {verdict['grade']}) is below "
            f"the pass threshold {threshold:.2f}"
        )
    if verdict["unmet_required"]:
        parts.append(f"required items not met: {', '.join(verdict['unmet_required'])}")
    return "; ".join(parts)


def classify(
    finished: Finished,
    result: Result,
    route: Route,
    stderr_tail: str,
    sandbox_error: str | None = None,
) -> tuple[str | None, str]:
    """(outcome, reason) for runs that are not judged normally; (None, '') to judge them.
    `sandbox_error`: the sandbox's own message when it could not start the CLI. A run that broke
    a bound of the harness's channels (`finished.violations`) fails whatever the agent, the
    sandbox or the upstream did after: it is the agent's doing, never the infrastructure's (only
    a run that measured another condition, replay or ablation, stays void)."""
    if route.replay_diverged is not None:  # --scylla-replay: the recording has no answer
        return Outcome.INFRA_ERROR, route.replay_diverged
    if route.ablation_failed():
        assert route.ablation is not None
        return Outcome.INFRA_ERROR, "ablation check failed: " + "; ".join(
            route.ablation["problems"]
        )
    if finished.violations:
        return Outcome.FAIL, "the run broke the sandbox's bounds: " + "; ".join(finished.violations)
    if finished.timed_out:
        return Outcome.TIMEOUT, f"agent killed at the case timeout ({finished.seconds:.0f}s)"
    if route.budget_exceeded:
        return Outcome.BUDGET_EXCEEDED, (
            f"gateway refused calls over the run budget ${route.max_cost_usd:.2f}"
        )
    if sandbox_error is not None and not result.found and route.calls == 0:
        return Outcome.INFRA_ERROR, f"the sandbox could not start the CLI: {sandbox_error}"
    ended_well = finished.exit_code == 0 and result.found and not result.is_error
    if ended_well or result.subtype == "error_max_turns":
        return None, ""
    if route.infra:
        last = route.infra[-1]
        return Outcome.INFRA_ERROR, (
            f"upstream failure: {len(route.infra)} call(s) failed, last "
            f"status {last['status']} retry-after {last['retry_after']} "
            f"({last['detail']})"
        )
    code = finished.exit_code
    what = (
        f"killed by signal {code - 128}" if code is not None and code > 128 else f"exit code {code}"
    )
    if not result.found:
        return Outcome.AGENT_ERROR, f"CLI ended without a result ({what}): {stderr_tail}"
    return Outcome.AGENT_ERROR, (
        f"CLI reported an error ({what}, {result.subtype}): {result.final_message[:300]}"
    )


def costs(route: Route, result: Result) -> RunRecord:
    """The agent's cost: the gateway's measure priced from the dated table, else the CLI's own
    figure for models the table lacks, and whether the two agree."""
    gateway_cost = round(route.spent_usd, 6) if route.usage else None
    cli_cost = result.total_cost_usd
    cost: float | None
    if gateway_cost is not None and not route.unpriced_models:
        cost, source = gateway_cost, "gateway"
    elif cli_cost is not None:
        cost, source = cli_cost, "cli"
    else:
        cost, source = gateway_cost, "unknown"
    agree = None
    if gateway_cost is not None and cli_cost is not None:
        agree = abs(gateway_cost - cli_cost) <= COST_TOLERANCE * max(cli_cost, gateway_cost, 1e-9)
    return {
        "cost_usd": cost,
        "cost_source": source,
        "gateway_cost_usd": gateway_cost,
        "cli_cost_usd": cli_cost,
        "costs_agree": agree,
        "unpriced_models": sorted(route.unpriced_models),
        "prices_as_of": pricing.PRICES_AS_OF,
    }
