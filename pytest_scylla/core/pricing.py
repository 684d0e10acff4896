"""A dated price table (USD per million tokens) and the cost of one call's usage.

Cache writes cost 1.25x the input price and cache reads 0.1x (5-minute cache), the way both the
API and Claude Code bill them. Model ids match by longest prefix, so dated snapshots
(`claude-sonnet-4-5-20250929`) find their family. An unknown model is priced like the most
expensive known one and flagged, so a budget is never under-counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

PRICES_AS_OF = "2026-11-22"
CACHE_WRITE_FACTOR = 1.25
CACHE_READ_FACTOR = 0.10

# model id prefix -> (input, output) USD per million tokens
PRICES: dict[str, tuple[float, float]] = {
    "claude-opus-4-8": (5.0, 25.0),
    "claude-opus-4-5": (5.0, 25.0),
    "claude-opus-4-1": (15.0, 75.0),
    "claude-opus-4": (15.0, 75.0),
    "claude-sonnet-5": (3.0, 15.0),
    "claude-sonnet-4-5": (3.0, 15.0),
    "claude-sonnet-4": (3.0, 15.0),
    "claude-haiku-4-5": (1.0, 5.0),
    "claude-3-5-haiku": (0.8, 4.0),
    # OpenAI's GPT-5 family (list prices as published 2025-08; cached input 0.1x, no cache
    # writes): for judges of kind `openai:` and the Chat Completions calls of other CLIs
    "gpt-5": (1.25, 10.0),
    "gpt-5-mini": (0.25, 2.0),
    "gpt-5-nano": (0.05, 0.40),
    # Google's Gemini 2.5 (list prices as published 2025-08, not re-checked at PRICES_AS_OF;
    # cached input at the 0.25x then published, thinking tokens as output): for Gemini CLI's
    # calls and `gemini:` judges. Prompts over 200k tokens cost more on 2.5 Pro (2x input, 1.5x
    # output), which this table does not model: such calls are under-counted
    "gemini-2.5-pro": (1.25, 10.0),
    "gemini-2.5-flash": (0.30, 2.50),
    "gemini-2.5-flash-lite": (0.10, 0.40),
}
# model id prefix -> the cached-input factor where it is not CACHE_READ_FACTOR
CACHE_READ_FACTORS = {"gemini-": 0.25}


@dataclass(frozen=True)
class Price:
    model: str
    input: float
    output: float
    known: bool
    cache_read: float = CACHE_READ_FACTOR

    def cost(self, usage: dict[str, Any]) -> float:
        def n(key: str) -> int:
            value = usage.get(key, 0)
            return value if isinstance(value, int) else 0

        dollars = (
            n("input_tokens") * self.input
            + n("output_tokens") * self.output
            + n("cache_creation_input_tokens") * self.input * CACHE_WRITE_FACTOR
            + n("cache_read_input_tokens") * self.input * self.cache_read
        )
        return dollars / 1_000_000


def price(model: str | None) -> Price:
    name = (model or "").strip()
    matches = [p for p in PRICES if name == p or name.startswith(p + "-")]
    if matches:
        best = max(matches, key=len)
        read = next(
            (f for p, f in CACHE_READ_FACTORS.items() if name.startswith(p)), CACHE_READ_FACTOR
        )
        return Price(name, *PRICES[best], known=True, cache_read=read)
    top = max(PRICES.values(), key=lambda io: io[1])
    return Price(name, *top, known=False)


def cost(model: str | None, usage: dict[str, Any]) -> float:
    return price(model).cost(usage)


def token_totals(usage: dict[str, dict[str, int]]) -> dict[str, int]:
    """Per-model usage summed over models, plus `total_tokens`."""
    total = {
        k: sum(u.get(k, 0) for u in usage.values())
        for k in (
            "input_tokens",
            "output_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
        )
    }
    total["total_tokens"] = sum(total.values())
    return total
