"""A run's route through the gateway and the rules for its upstream calls: the credential the
gateway adds, which answers are retried and how long to wait."""

from __future__ import annotations

import os
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pytest_scylla.run.gateway import gemini_wire, replay
from pytest_scylla.run.gateway import reached as ablation
from pytest_scylla.run.gateway.oracle import model as oracle
from pytest_scylla.run.gateway.said import Said

INFRA_STATUSES = frozenset({408, 429, 500, 502, 503, 504, 529})
# What each upstream's clients may call (paths below the route); anything else is refused with
# 403 and never forwarded: the credential serves model calls only, each one logged and priced.
ENDPOINTS = {
    "anthropic": frozenset({"/v1/messages", "/v1/messages/count_tokens"}),
    "openai": frozenset({"/chat/completions", "/responses"}),
    "gemini": frozenset(),
}  # its paths name the model: `gemini_wire.match`
ENDPOINTS["oracle"] = ENDPOINTS["anthropic"] | ENDPOINTS["openai"]  # and Gemini's
GEMINI_KEYS = ("GEMINI_API_KEY", "GOOGLE_API_KEY")  # the harness's, in this order


def allowed(upstream: str, path: str) -> bool:
    """Whether `path` is a model endpoint of `upstream` (Gemini's, which the oracle also
    answers, are `models/<model>:generateContent` and `:streamGenerateContent`)."""
    return path in ENDPOINTS[upstream] or (
        upstream in ("oracle", "gemini") and gemini_wire.match(path) is not None
    )


class UpstreamSetupError(RuntimeError):
    """The real upstream cannot be used (no credential)."""


def credential_headers(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The real credential for the upstream, from the harness's own environment."""
    env = os.environ if environ is None else environ
    if env.get("ANTHROPIC_API_KEY"):
        return {"x-api-key": env["ANTHROPIC_API_KEY"]}
    if env.get("ANTHROPIC_AUTH_TOKEN"):
        return {"authorization": f"Bearer {env['ANTHROPIC_AUTH_TOKEN']}"}
    raise UpstreamSetupError(
        "no model credential: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) in the environment "
        "pytest runs in, or run offline with --scylla-oracle (a SIMULATED model)"
    )


def gemini_credential(environ: dict[str, str] | None = None, who: str = "Gemini") -> dict[str, str]:
    """The real credential for Google's Gemini API (`x-goog-api-key`), from the harness's own
    environment; `who` names the caller in the message when there is none."""
    env = os.environ if environ is None else environ
    for name in GEMINI_KEYS:
        if env.get(name):
            return {"x-goog-api-key": env[name]}
    raise UpstreamSetupError(
        f"no model credential for {who}: set GEMINI_API_KEY (or GOOGLE_API_KEY; "
        "GOOGLE_GEMINI_BASE_URL for another endpoint) in the environment pytest runs in, or run "
        "offline with --scylla-oracle (a SIMULATED model)"
    )


@dataclass
class Route:
    """One run's path through the gateway, and what the gateway saw of it."""

    key: str
    log_path: Path
    upstream: str = "oracle"  # oracle | anthropic | openai | gemini
    upstream_url: str | None = None  # where `openai` and `gemini` calls go
    max_cost_usd: float = float("inf")
    bodies_dir: Path | None = None  # --scylla-record-bodies: each call's request and answer
    replay: replay.Recording | None = None  # --scylla-replay: the answers come from here
    private: str = ""  # the run's private folder's name (in the paths its calls carry)
    script: oracle.Script | None = None
    expected: ablation.Expected | None = None
    capture_first: bool = False
    pass_auth: bool = False  # without a credential of our own, forward the client's (CLI login)
    models: frozenset[str] | None = None  # the models it may call (`allowlist.run_models`)
    # what happened
    spent_usd: float = 0.0
    reserved_usd: float = 0.0  # the worst case of the calls in flight (`limits.admit`)
    in_flight: int = 0  # calls admitted and not yet settled
    open_calls: int = 0  # connections with a call being handled (`limits.MAX_OPEN_CALLS`)
    calls: int = 0
    refused: int = 0
    budget_exceeded: bool = False
    unpriced_models: set[str] = field(default_factory=set)
    models_refused: set[str] = field(default_factory=set)  # named by calls and refused
    infra: list[dict[str, Any]] = field(default_factory=list)
    ablation: dict[str, Any] | None = None
    replay_diverged: str | None = None  # the first call the recording could not answer
    first_request: dict[str, Any] | None = None
    said: Said = field(default_factory=Said)  # what the model said (its tool calls, its texts)
    usage: dict[str, dict[str, int]] = field(default_factory=dict)  # per model
    closed: threading.Event = field(default_factory=threading.Event)
    called: threading.Event = field(default_factory=threading.Event)  # its first call came
    lock: threading.Lock = field(default_factory=threading.Lock)
    settled: threading.Condition = field(init=False)  # on `lock`: a call in flight settled

    def __post_init__(self) -> None:
        self.settled = threading.Condition(self.lock)

    def ablation_failed(self) -> bool:
        return self.ablation is not None and bool(self.ablation.get("problems"))


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def retryable(status: int | None) -> bool:
    """An answer worth asking again: timeouts, rate limits, overload, server errors, and no
    answer at all (None: the connection failed)."""
    return status is None or status in INFRA_STATUSES or status >= 500


def retry_after_seconds(value: str | None) -> float | None:
    """The retry-after header in seconds (a number or an HTTP date), None if absent or odd."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # the asctime form and `-0000` carry no zone: HTTP dates are GMT
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


@dataclass
class RetryPolicy:
    """How the gateway rides out transient upstream trouble before the CLI sees any of it:
    up to `attempts` tries with exponential backoff (with jitter), honouring retry-after, at
    most `max_wait` seconds of waiting per call. A retry-after longer than that is a usage-window
    limit: the call is answered at once and `on_long_limit(seconds, message)` is told, so the
    session can pause new runs instead of burning through its queue."""

    attempts: int = 4
    max_wait: float = 120.0
    base: float = 1.0
    cap: float = 30.0
    on_long_limit: Callable[[float, str], None] | None = None

    def delay(self, attempt: int, retry_after: str | None) -> float:
        hinted = retry_after_seconds(retry_after)
        if hinted is not None:
            return hinted
        backoff: float = min(self.cap, self.base * 2.0**attempt)
        return backoff * (0.5 + random.random() / 2)
