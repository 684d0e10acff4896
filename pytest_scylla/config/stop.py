"""The settings of sequential stopping (`--scylla-stop`, `--scylla-reference`, `--scylla-alpha`,
`--scylla-margin`), each checked here: a bad value is one `pytest.UsageError` naming the fix."""

from __future__ import annotations

import math
from typing import TypedDict

import pytest

from pytest_scylla.config.options import DEFAULTS, STOP_MODES, StopMode, one_of
from pytest_scylla.config.selection import SUBTEST_SELECTOR
from pytest_scylla.config.values import value


class StopPart(TypedDict):
    """The `Settings` fields of sequential stopping."""

    stop: StopMode
    reference: str | None
    alpha: float
    margin: float


def stop_settings(config: pytest.Config) -> StopPart:
    raw, origin = value(config, "scylla_stop")
    stop = str(raw).strip() if raw is not None else ""
    mode = next((m for m in STOP_MODES if m == (stop or DEFAULTS["stop"])), None)
    if mode is None:
        raise pytest.UsageError(f"{origin}={raw!r}: expected {one_of(STOP_MODES)}")
    raw, origin = value(config, "scylla_reference")
    reference = str(raw).strip() if raw is not None else ""
    if reference and not SUBTEST_SELECTOR.match(reference):
        raise pytest.UsageError(
            f"{origin}={raw!r}: expected a subtest such as T0-00 (a tier and two digits)"
        )
    return {
        "stop": mode,
        "reference": reference or None,
        "alpha": _share(config, "scylla_alpha", "--scylla-alpha=0.05"),
        "margin": _share(config, "scylla_margin", "--scylla-margin=0.10"),
    }


def _share(config: pytest.Config, dest: str, example: str) -> float:
    """A number strictly between 0 and 1."""
    raw, origin = value(config, dest)
    text = str(raw).strip() if raw is not None else ""
    if not text:
        return float(DEFAULTS[dest.removeprefix("scylla_")])
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    if not 0 < number < 1:
        raise pytest.UsageError(
            f"{origin}={raw!r}: expected a number between 0 and 1, e.g. {example}"
        )
    return number
