"""The judge panel: every judge asked at once, each through the gateway; one judge's failure
never breaks the others (it is an invalid judge, with its error)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from pytest_scylla.formats.rubric import RubricItem
from pytest_scylla.judging.judges import JudgeResult, JudgeSpec
from pytest_scylla.judging.prompt import Prompt

Asker = Callable[[JudgeSpec, Prompt, Sequence[RubricItem], str, JudgeResult], None]


def run_panel(
    specs: Sequence[JudgeSpec],
    prompt: Prompt,
    items: Sequence[RubricItem],
    base_url: Callable[[int, JudgeSpec], str],
    numbers: Sequence[int] | None = None,
) -> list[JudgeResult]:
    """Ask every judge at once; each result says whether its verdict is valid. `numbers` are
    the judges' numbers in the whole panel (default 1, 2, ...: a part of it keeps its own)."""

    def one(number: int, spec: JudgeSpec) -> JudgeResult:
        result = JudgeResult(number=number, model=spec.model, kind=spec.kind)
        began = time.monotonic()
        try:
            ask: Asker = spec.judge_kind.asker()
            ask(spec, prompt, items, base_url(number, spec), result)
        except Exception as exc:  # a judge that breaks is an invalid judge, not a crash
            result.errors.append(f"{type(exc).__name__}: {exc}")
            result.valid = False
        result.seconds = round(time.monotonic() - began, 3)
        return result

    with ThreadPoolExecutor(max_workers=max(1, len(specs))) as pool:
        futures = [
            pool.submit(one, n, spec)
            for n, spec in zip(numbers or range(1, len(specs) + 1), specs, strict=True)
        ]
        return [f.result() for f in futures]
