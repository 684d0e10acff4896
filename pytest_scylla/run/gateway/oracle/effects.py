"""The oracle's effects mode, for testing an ablation's analysis against known truth:
`SCYLLA_ORACLE_EFFECTS=<file.json>` in the gateway's environment, the file
`{"base": 0.5, "effects": {"<marker text>": 0.3, "<other marker>": -0.2}}`. A run applies the
solution with probability `base` plus the effect of every marker that reached the model (the
request's text: instructions, skill and agent listings, tool definitions; whitespace ignored),
clamped to [0, 1]; otherwise it answers without changing anything. The draw is fixed by the
run's key, so the same run always does the same thing, and an arm's runs differ only by what
their configuration put in front of the model."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

VARIABLE = "SCYLLA_ORACLE_EFFECTS"


class EffectsFileError(ValueError):
    """The effects file cannot be read; the message names the file and the fix."""


@dataclass(frozen=True)
class Effects:
    base: float
    markers: tuple[tuple[str, float], ...]
    draw: float  # uniform in [0, 1), from the run's key

    def applies(self, request: dict[str, Any]) -> bool:
        """Whether this run applies the solution, given what reached the model."""
        seen = _norm(" ".join(_texts(request)))
        p = self.base + sum(effect for text, effect in self.markers if _norm(text) in seen)
        return self.draw < min(1.0, max(0.0, p))


def _norm(text: str) -> str:
    return " ".join(text.split())


def _texts(value: Any) -> list[str]:
    """Every string in a request (its keys and values), in order."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [t for k, v in value.items() for t in (*_texts(k), *_texts(v))]
    if isinstance(value, list):
        return [t for item in value for t in _texts(item)]
    return []


def for_run(run_key: str) -> Effects | None:
    """The effects the environment names for the run with this key, or None."""
    value = os.environ.get(VARIABLE, "").strip()
    if not value:
        return None
    try:
        data = json.loads(Path(value).read_text(encoding="utf-8"))
    except OSError as exc:
        raise EffectsFileError(f"{VARIABLE}={value}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise EffectsFileError(f"{VARIABLE}={value}:{exc.lineno}: {exc.msg}") from None
    base = data.get("base") if isinstance(data, dict) else None
    effects = data.get("effects", {}) if isinstance(data, dict) else None
    if not (
        isinstance(base, int | float)
        and 0 <= base <= 1
        and isinstance(effects, dict)
        and all(isinstance(v, int | float) for v in effects.values())
    ):
        raise EffectsFileError(
            f'{VARIABLE}={value}: expected {{"base": 0..1, "effects": {{"marker": number}}}}'
        )
    digest = hashlib.sha256(f"{run_key}|effects".encode()).hexdigest()
    markers = tuple((str(k), float(v)) for k, v in effects.items())
    return Effects(float(base), markers, int(digest[:13], 16) / 16**13)
