"""The judges a panel can hold: their `--scylla-judges` spelling, parsed into a `JudgeSpec`,
and the `JudgeResult` each one's ask fills in. One module per kind answers (anthropic_judge,
openai_judge, gemini_judge, claude_cli_judge); `panel` asks them together."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

DEFAULT_JUDGES = ("claude-opus-4-8", "claude-sonnet-5", "claude-haiku-4-5")
MAX_ATTEMPTS = 3
KINDS = ("anthropic", "openai", "gemini", "claude-cli")


class JudgeSpecError(ValueError):
    """A `--scylla-judges` entry that cannot be understood."""


@dataclass(frozen=True)
class JudgeSpec:
    kind: str
    model: str
    base_url: str | None = None

    @property
    def label(self) -> str:
        return self.model if self.kind == "anthropic" else f"{self.kind}:{self.model}"


def parse(entry: str) -> JudgeSpec:
    text = entry.strip()
    head = text.split("@")[0]
    kind, _, rest = text.partition(":") if ":" in head else ("anthropic", "", text)
    if kind not in KINDS:
        raise JudgeSpecError(f"unknown judge kind '{kind}' in '{entry}'; use a model id, "
                             "anthropic:<model>, claude-cli:<model>, gemini:<model> or "
                             "openai:<model>@<base-url>")
    model, _, base_url = rest.partition("@")
    if not model or any(c.isspace() for c in model):
        raise JudgeSpecError(f"'{entry}' names no model")
    if kind == "openai" and not base_url.startswith(("http://", "https://")):
        raise JudgeSpecError(f"'{entry}': an openai judge needs its endpoint, e.g. "
                             "openai:llama3@http://127.0.0.1:11434/v1")
    return JudgeSpec(kind=kind, model=model, base_url=base_url or None)


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
