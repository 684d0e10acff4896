"""Why a call is refused before it reaches the upstream: a path that is no model endpoint, a
model the run may not call, or a failed ablation check of the run's requests."""

from __future__ import annotations

from typing import Any

from pytest_scylla.run.gateway import allowlist, gemini_wire
from pytest_scylla.run.gateway import reached as ablation
from pytest_scylla.run.gateway.oracle import model as oracle
from pytest_scylla.run.gateway.routes import Route, allowed

# the agent's model calls, whose first one the ablation check reads (by wire format)
MODEL_CALLS = frozenset({"/v1/messages", "/responses", "/chat/completions"})


def refusal(route: Route, path: str, request: dict[str, Any]) -> tuple[int, str | None]:
    """(status, why) refusing the call; why is None to let it through (the status is then the
    one a budget refusal answers with)."""
    if not allowed(route.upstream, path):
        return 403, f"pytest-scylla gateway: {path} is not a model endpoint"
    return 400, _model_or_ablation(route, path, request)


def _model_or_ablation(route: Route, path: str, request: dict[str, Any]) -> str | None:
    """Why the call's model or the run's ablation check refuses it (None: let it through)."""
    model = request.get("model") or (gemini_wire.match(path) or [None])[0]
    refused = allowlist.model_refusal(route.models, str(model) if model else None)
    if refused is not None:
        with route.lock:
            route.models_refused.add(str(model)[:80])
        return refused
    if (path in MODEL_CALLS or gemini_wire.match(path)) and oracle.is_main_agent(request):
        return _ablation(route, request)
    return None


def _ablation(route: Route, request: dict[str, Any]) -> str | None:
    """The ablation check, made on the run's first main-agent model call and, for what the CLI
    loads later, on every one after it; once it failed, it refuses every such call of the
    run."""
    with route.lock:
        first = route.first_request is None
        if first:
            route.first_request = request if route.capture_first else {}
    if route.expected is not None:
        (_first_check if first else _later_check)(route, route.expected, request)
    if route.ablation_failed():
        assert route.ablation is not None
        return "pytest-scylla ablation check failed: " + "; ".join(route.ablation["problems"])
    return None


def _first_check(route: Route, expected: ablation.Expected, request: dict[str, Any]) -> None:
    """The whole comparison, on the run's first request (a declared MCP server still connecting
    is left for a later one)."""
    seen = ablation.observe(request)
    problems = ablation.compare(expected, seen)
    with route.lock:
        route.ablation = {
            "checked": True,
            "problems": problems,
            "observed": seen.to_json(),
            "expected": expected.to_json(),
            "requests": 1,
            "connecting": sorted(ablation.connecting(expected, seen)),
        }


def _later_check(route: Route, expected: ablation.Expected, request: dict[str, Any]) -> None:
    """What a later request loaded, against the declaration: Claude Code's new context since
    the model's last turn; another CLI's parts as its every request carries them."""
    claude = ablation.is_messages_wire(request)
    seen = ablation.observe_later(request) if claude else ablation.observe(request)
    with route.lock:
        state = route.ablation
        if state is None or state.get("problems"):
            return
        if not claude:
            state["problems"] = ablation.compare_later_other(expected, seen)
            state["requests"] += 1
            return
        problems, pending = ablation.compare_later(expected, seen, set(state["connecting"]))
        state["problems"] = problems
        state["connecting"] = sorted(pending)
        state["requests"] += 1


def finish(route: Route) -> None:
    """At the run's end: a declared MCP server that was connecting at the first request and
    that no later request had fails the check."""
    with route.lock:
        state = route.ablation
        if state and state.get("connecting") and not state.get("problems"):
            state["problems"] = ablation.never_connected(set(state["connecting"]))
