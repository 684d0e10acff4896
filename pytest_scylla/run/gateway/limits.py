"""What the gateway accepts of a call before anything is read, recorded or forwarded: the body's
stated size, how many calls a run may have open at once, and a worst-case reservation of the
run's budget for each call in flight (so parallel calls cannot all pass one check of what was
spent and then together spend several times the run's limit: near the limit they wait their
turn instead)."""

from __future__ import annotations

from typing import Any

from pytest_scylla.core import pricing
from pytest_scylla.run.gateway.routes import Route

# The largest request body read. Real calls are far smaller: a full 200k-token context is about
# 1 MB of JSON, and a few images with it a few MB more; 32 MiB stays well above any real
# request while no caller can make the gateway hold (or record) an unbounded body.
MAX_BODY_BYTES = 32 * 1024 * 1024
# Calls one run may have open at once. Claude Code's main loop, its side calls and a handful
# of parallel sub-agents stay far below; a flood beyond this is answered 429 without an
# upstream call.
MAX_OPEN_CALLS = 32
# Output tokens reserved for a call that states no cap (OpenAI's and Google's APIs allow none):
# the largest output the priced models return in one answer.
UNCAPPED_OUTPUT_TOKENS = 128_000
OUTPUT_CAPS = ("max_tokens", "max_output_tokens", "max_completion_tokens")


def body_length(value: str | None) -> tuple[int, int | None, str | None]:
    """The body's length from its Content-Length, or (status, None, why) to refuse it: a length
    that is not a plain non-negative number (400) or over MAX_BODY_BYTES (413)."""
    if value is None or value.strip() == "":
        return 200, 0, None
    text = value.strip()
    if not text.isascii() or not text.isdigit():
        return (
            400,
            None,
            (
                f"pytest-scylla gateway: Content-Length {value[:40]!r} is not a "
                "non-negative whole number"
            ),
        )
    if int(text) > MAX_BODY_BYTES:
        return (
            413,
            None,
            (
                f"pytest-scylla gateway: request body of {int(text)} bytes is over "
                f"the gateway's limit of {MAX_BODY_BYTES} bytes"
            ),
        )
    return 200, int(text), None


def output_cap(request: dict[str, Any]) -> int:
    """The output tokens a call may produce: its stated cap, else UNCAPPED_OUTPUT_TOKENS."""
    caps = [request.get(k) for k in OUTPUT_CAPS]
    config = request.get("generationConfig")
    if isinstance(config, dict):
        caps.append(config.get("maxOutputTokens"))
    stated = [c for c in caps if isinstance(c, int) and not isinstance(c, bool) and c >= 0]
    return min(stated) if stated else UNCAPPED_OUTPUT_TOKENS


def worst_case_usd(model: str | None, request: dict[str, Any], body_bytes: int) -> float:
    """An upper bound of what the call can cost: every body byte an input token written to the
    cache (a token is at least one byte; a cache write is the dearest input) and the output cap
    at the output price, with an unknown model priced as the dearest known one."""
    price = pricing.price(model)
    return (
        body_bytes * price.input * pricing.CACHE_WRITE_FACTOR + output_cap(request) * price.output
    ) / 1_000_000


def admit(
    spent: float, reserved: float, estimate: float, in_flight: int, limit: float
) -> bool | None:
    """Whether a call may go out now (True), must wait for a call in flight to settle (None),
    or is refused (False). Nothing goes out once the budget is spent. A call goes out alone
    (nothing in flight: it may overshoot by its own cost, as the last of a sequence of calls
    always could), or beside others while what is spent and every call in flight, at their
    worst case, still fit the budget. Otherwise it waits: parallel calls are run one after
    another near the end of a budget, never refused while budget is left (refusing them ended
    honest runs: three of Claude Code's calls at their worst case of 32,000 output tokens
    overrun a $1 budget), and never together spend past it."""
    if spent >= limit:
        return False
    if in_flight == 0 or spent + reserved + estimate <= limit:
        return True
    return None


def reserve(route: Route, estimate: float) -> str | None:
    """Reserve the call's worst case of the run's budget (`admit`, waiting for the calls in
    flight where it says so), or say why not."""
    with route.settled:
        while (
            verdict := admit(
                route.spent_usd, route.reserved_usd, estimate, route.in_flight, route.max_cost_usd
            )
        ) is None:
            if route.closed.is_set():
                break
            route.settled.wait(1.0)  # woken when a call settles (`release`)
        if verdict:
            route.reserved_usd += estimate
            route.in_flight += 1
            return None
        if verdict is None:
            return "pytest-scylla: the run ended while this call waited for its budget"
        route.budget_exceeded = True
        return (
            f"pytest-scylla: this run's budget of ${route.max_cost_usd:.2f} is spent "
            f"(${route.spent_usd:.4f} spent, ${route.reserved_usd:.4f} held by "
            f"{route.in_flight} calls in flight, this call may cost up to "
            f"${estimate:.4f}); no further model calls"
        )


def release(route: Route, estimate: float) -> None:
    """The call settled (answered or failed): its real cost is in `spent_usd` (or nothing)."""
    with route.settled:
        route.reserved_usd -= estimate
        route.in_flight -= 1
        route.settled.notify_all()
