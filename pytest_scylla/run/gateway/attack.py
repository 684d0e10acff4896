"""The hostile oracle, for red-team tests: `SCYLLA_ORACLE_ATTACK=<file.json>` in the gateway's
environment replaces the main agent's plan with scripted tool calls.

The file: `{"steps": [[{"name": "Bash", "input": {...}}, ...], ...], "final": "..."}`; each step is
one assistant turn of tool calls, whatever the previous ones returned; after the last step the
agent ends with `final` as its message. Judges and side calls are answered as usual.
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class AttackFileError(ValueError):
    """The attack file cannot be used."""


@dataclass(frozen=True)
class Attack:
    steps: tuple[tuple[tuple[str, dict[str, Any]], ...], ...]
    final: str


def current() -> Attack | None:
    """The attack named by SCYLLA_ORACLE_ATTACK, if any."""
    value = os.environ.get("SCYLLA_ORACLE_ATTACK", "").strip()
    if not value:
        return None
    path = Path(value)
    try:
        stamp = path.stat().st_mtime_ns
    except OSError as exc:
        raise AttackFileError(f"SCYLLA_ORACLE_ATTACK={value}: {exc.strerror}") from None
    return _load(path, stamp)


@functools.lru_cache(maxsize=4)
def _load(path: Path, _stamp: int) -> Attack:
    problem = f'{path}: expected {{"steps": [[{{"name": ..., "input": {{...}}}}]], "final": ...}}'
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        steps = tuple(
            tuple((str(call["name"]), dict(call["input"])) for call in step)
            for step in data["steps"]
        )
        final = str(data.get("final", "Done."))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise AttackFileError(f"{problem} ({type(exc).__name__}: {exc})") from None
    if any(not step for step in steps):
        raise AttackFileError(f"{problem} (a step without tool calls)")
    return Attack(steps, final)
