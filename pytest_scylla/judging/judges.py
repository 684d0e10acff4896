"""The judges a panel can hold: their `--scylla-judges` spelling, parsed into a `JudgeSpec`,
and the `JudgeResult` each one's ask fills in. One module per kind answers (anthropic_judge,
openai_judge, gemini_judge, claude_cli_judge); `panel` asks them together."""

from __future__ import annotations

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

    ask: Callable[..., None]
    upstream: str = "anthropic"
    needs_url: bool = False
    pass_auth: bool = False


# the built-in kinds' upstreams (their `ask`s are in judging.panel): (upstream, needs_url,
# pass_auth)
BUILTIN = {"anthropic": ("anthropic", False, False), "openai": ("openai", True, False),
           "gemini": ("gemini", False, False), "claude-cli": ("anthropic", False, True)}


@dataclass(frozen=True)
class JudgeSpec:
    kind: str
    model: str
    base_url: str | None = None
    handler: JudgeKind | None = field(default=None, compare=False, repr=False)  # a plugin's

    @property
    def label(self) -> str:
        return self.model if self.kind == "anthropic" else f"{self.kind}:{self.model}"

    @property
    def upstream(self) -> tuple[str, bool]:
        """(the gateway upstream of its real calls, whether the caller's login is passed)."""
        if self.handler is not None:
            return self.handler.upstream, self.handler.pass_auth
        upstream, _, pass_auth = BUILTIN[self.kind]
        return upstream, pass_auth


def parse(entry: str, plugins: Mapping[str, JudgeKind] | None = None) -> JudgeSpec:
    """A --scylla-judges entry; `plugins`: the kinds plugins add (by name)."""
    text = entry.strip()
    head = text.split("@")[0]
    kind, _, rest = text.partition(":") if ":" in head else ("anthropic", "", text)
    handler = (plugins or {}).get(kind) if kind not in BUILTIN else None
    if kind not in BUILTIN and handler is None:
        others = "".join(f", {name}:<model>" for name in sorted(plugins or {}))
        raise JudgeSpecError(f"unknown judge kind '{kind}' in '{entry}'; use a model id, "
                             f"anthropic:<model>, claude-cli:<model>, gemini:<model>{others} "
                             "or openai:<model>@<base-url>")
    model, _, base_url = rest.partition("@")
    if not model or any(c.isspace() for c in model):
        raise JudgeSpecError(f"'{entry}' names no model")
    needs_url = handler.needs_url if handler is not None else BUILTIN[kind][1]
    if needs_url and not base_url.startswith(("http://", "https://")):
        raise JudgeSpecError(f"'{entry}': an {kind} judge needs its endpoint, e.g. "
                             f"{kind}:llama3@http://127.0.0.1:11434/v1")
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
