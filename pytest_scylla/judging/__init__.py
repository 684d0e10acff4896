"""The judge panel: several LLM judges score a run concurrently through the gateway, each
answering with a forced tool call whose input is validated; invalid verdicts are retried with
the validation errors fed back, a bounded number of times.

`--scylla-judges` entries: a bare model id or `anthropic:<model>` (Anthropic SDK through the
gateway), `openai:<model>@<base-url>` (any OpenAI-compatible endpoint, JSON-schema response),
`claude-cli:<model>` (`claude -p` with `--json-schema`, through the gateway).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

from pytest_scylla.formats.spec import RubricItem
from pytest_scylla.judging.prompt import Prompt

DEFAULT_JUDGES = ("claude-opus-4-8", "claude-sonnet-5", "claude-haiku-4-5")
DEFAULT_MIN_VALID = 2
MAX_ATTEMPTS = 3
KINDS = ("anthropic", "openai", "claude-cli")


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
                             "anthropic:<model>, claude-cli:<model> or "
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


Asker = Callable[[JudgeSpec, Prompt, Sequence[RubricItem], str, JudgeResult], None]


def run_panel(specs: Sequence[JudgeSpec], prompt: Prompt, items: Sequence[RubricItem],
              base_url: Callable[[int, JudgeSpec], str]) -> list[JudgeResult]:
    """Ask every judge at once; each result says whether its verdict is valid."""
    from pytest_scylla.judging import anthropic_judge, claude_cli_judge, openai_judge

    askers: dict[str, Asker] = {"anthropic": anthropic_judge.ask, "openai": openai_judge.ask,
                                "claude-cli": claude_cli_judge.ask}

    def one(number: int, spec: JudgeSpec) -> JudgeResult:
        result = JudgeResult(number=number, model=spec.model, kind=spec.kind)
        began = time.monotonic()
        try:
            askers[spec.kind](spec, prompt, items, base_url(number, spec), result)
        except Exception as exc:  # a judge that breaks is an invalid judge, not a crash
            result.errors.append(f"{type(exc).__name__}: {exc}")
            result.valid = False
        result.seconds = round(time.monotonic() - began, 3)
        return result

    with ThreadPoolExecutor(max_workers=max(1, len(specs))) as pool:
        futures = [pool.submit(one, n, spec) for n, spec in enumerate(specs, start=1)]
        return [f.result() for f in futures]
