"""What of a call may go upstream: the run's models (and the ones its CLI uses for its own small
tasks), the request headers a model call needs, and the query parameters the CLIs send. The
rest of the headers and query is stripped and named in the call log; another model is refused."""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import unquote_plus

# request headers passed on (lower case); the credential is the gateway's own, added after
HEADERS = frozenset(
    {
        "accept",
        "content-type",
        "user-agent",
        "anthropic-version",
        "anthropic-beta",
        "x-app",  # Anthropic's API and Claude Code
        "openai-beta",
        "originator",
        "session_id",
        "conversation_id",
        "version",  # Codex
        "x-goog-api-client",  # Google's SDK
    }
)
# dropped without a note: the gateway's own HTTP client asks for the encodings it reads
QUIET = frozenset({"accept-encoding"})
HEADER_PREFIXES = ("x-stainless-",)  # the SDKs' own description of themselves
# anthropic-beta flags never passed on: they change the price of a call beyond the price table
# (long context, long cache, fast mode) or reach beyond the call (server-side tools, files,
# MCP servers, batches, hosted environments)
BETAS_REFUSED = (
    "context-1m-",
    "extended-cache-ttl-",
    "fast-mode-",
    "code-execution-",
    "web-search-",
    "web-fetch-",
    "mcp-client-",
    "mcp-servers-",
    "files-api-",
    "message-batches-",
    "managed-agents-",
    "environments-",
    "skills-",
    "advisor-tool-",
    "server-side-fallback-",
    "fallback-credit-",
    "ccr-",
)
QUERY = frozenset({"beta", "alt"})  # Claude Code's `?beta=true`, Gemini's `?alt=sse`


def headers(given: Iterable[tuple[str, str]]) -> tuple[dict[str, str], list[str]]:
    """The headers passed on, and the names (or `anthropic-beta=<flag>`) stripped."""
    kept: dict[str, str] = {}
    stripped: list[str] = []
    for name, value in given:
        low = name.lower()
        if low not in HEADERS and not low.startswith(HEADER_PREFIXES):
            stripped.append(low)
        elif low == "anthropic-beta":
            flags = [f.strip() for f in value.split(",") if f.strip()]
            refused = [f for f in flags if f.startswith(BETAS_REFUSED)]
            stripped += [f"anthropic-beta={f}" for f in refused]
            if len(refused) < len(flags):
                kept[name] = ",".join(f for f in flags if f not in refused)
        else:
            kept[name] = value
    return kept, stripped


def query(text: str) -> tuple[str, list[str]]:
    """The query passed on, and the names of the parameters stripped."""
    kept: list[str] = []
    stripped: list[str] = []
    for part in (p for p in text.split("&") if p):
        name = unquote_plus(part.split("=", 1)[0])
        (kept if name in QUERY else stripped).append(part if name in QUERY else name)
    return "&".join(kept), stripped


def model_refusal(allowed: frozenset[str] | None, model: str | None) -> str | None:
    """Why a call naming `model` is refused on a run that may call only `allowed` (None: any).
    A dated snapshot (`claude-haiku-4-5-20251001`) is its family's."""
    if allowed is None or model is None:
        return None
    if any(model == m or model.startswith(m + "-") for m in allowed):
        return None
    return (
        f"pytest-scylla gateway: model {model[:80]!r} is not this run's (allowed: "
        f"{', '.join(sorted(allowed))})"
    )


def run_models(agent: object, model: str) -> frozenset[str]:
    """The models a run may call: its own and the ones its CLI declares for its own small tasks
    (`side_models`)."""
    return frozenset({model, *getattr(agent, "side_models", ())})
