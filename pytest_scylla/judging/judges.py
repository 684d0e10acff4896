"""The judges a panel can hold: their `--scylla-judges` spelling, parsed into a `JudgeSpec`,
and the `JudgeResult` each one's ask fills in. One module per kind answers (anthropic_judge,
openai_judge, gemini_judge, claude_cli_judge); `panel` asks them together."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

DEFAULT_JUDGES = ("claude-opus-4-8", "claude-sonnet-5", "claude-haiku-4-5")
MAX_ATTEMPTS = 3


class JudgeSpecError(ValueError):
    """A `--scylla-judges` entry that cannot be understood."""


@dataclass(frozen=True)
class JudgeKind:
    """A kind of judge (`<kind>:<model>` in --scylla-judges), as a plugin offers one through
    the `pytest_scylla_judge_kinds` hook: `ask(spec, prompt, items, base_url, result)` asks its
    model for a verdict through the gateway at `base_url` and fills in `result` (see
    openai_judge for the shape); `upstream` is where the gateway relays its calls for a real
    model (anthropic, openai or gemini, with the harness's key of that vendor); `needs_url`:
    spelled `<kind>:<model>@<url>` (its own endpoint); `pass_auth`: without a key of the
    harness's, the caller's own login is passed on."""

    ask: Callable[..., None] | str  # or "module:function", loaded when first asked
    upstream: str = "anthropic"
    needs_url: bool = False
    pass_auth: bool = False

    def asker(self) -> Callable[..., None]:
        if callable(self.ask):
            return self.ask
        module, _, name = self.ask.partition(":")
        asker: Callable[..., None] = getattr(importlib.import_module(module), name)
        return asker


# the built-in kinds, offered through `pytest_scylla_judge_kinds` like a plugin's (by
# `pytest_scylla.plugin`); each one's module is imported when it is first asked
BUILTIN_KINDS = {
    "anthropic": JudgeKind("pytest_scylla.judging.anthropic_judge:ask"),
    "openai": JudgeKind("pytest_scylla.judging.openai_judge:ask", "openai", needs_url=True),
    "gemini": JudgeKind("pytest_scylla.judging.gemini_judge:ask", "gemini"),
    "claude-cli": JudgeKind("pytest_scylla.judging.claude_cli_judge:ask", pass_auth=True),
}


@dataclass(frozen=True)
class JudgeSpec:
    kind: str
    model: str
    base_url: str | None = None
    handler: JudgeKind | None = field(default=None, compare=False, repr=False)  # else built-in

    @property
    def label(self) -> str:
        return self.model if self.kind == "anthropic" else f"{self.kind}:{self.model}"

    @property
    def judge_kind(self) -> JudgeKind:
        return self.handler or BUILTIN_KINDS[self.kind]

    @property
    def upstream(self) -> tuple[str, bool]:
        """(the gateway upstream of its real calls, whether the caller's login is passed)."""
        return self.judge_kind.upstream, self.judge_kind.pass_auth


def parse(entry: str, kinds: Mapping[str, JudgeKind] | None = None) -> JudgeSpec:
    """A --scylla-judges entry; `kinds`: every kind by name, the built-in ones and those plugins
    add (the registry's; default the built-in ones)."""
    kinds = BUILTIN_KINDS if kinds is None else kinds
    text = entry.strip()
    head = text.split("@")[0]
    kind, _, rest = text.partition(":") if ":" in head else ("anthropic", "", text)
    handler = kinds.get(kind)
    if handler is None:
        known = ", ".join(
            f"{name}:<model>@<base-url>" if k.needs_url else f"{name}:<model>"
            for name, k in kinds.items()
        )
        raise JudgeSpecError(
            f"unknown judge kind '{kind}' in '{entry}'; use a model id or one of {known}"
        )
    model, _, base_url = rest.partition("@")
    if not model or any(c.isspace() for c in model):
        raise JudgeSpecError(f"'{entry}' names no model")
    if handler.needs_url and not base_url.startswith(("http://", "https://")):
        raise JudgeSpecError(
            f"'{entry}': an {kind} judge needs its endpoint, e.g. "
            f"{kind}:llama3@http://127.0.0.1:11434/v1"
        )
    return JudgeSpec(kind=kind, model=model, base_url=base_url or None, handler=handler)


@dataclass
class JudgeResult:
    number: int
    model: str
    kind: str
    valid: bool = False
    attempts: int = 0
    errors: list[str] = field(default_factory=list)
    verdict: dict[str, Any] | None = None
    usage: dict[str, int] = field(default_factory=dict)
    cost_usd: float = 0.0
    seconds: float = 0.0
    response_model: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
