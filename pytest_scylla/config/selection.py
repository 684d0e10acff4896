"""What a session selects: its tier folders (`--scylla-tiers-dir`, layered over the package's
by `--scylla-packaged-tiers`), and the tiers and subtests it runs (`--scylla-tiers`,
`--scylla-subtests`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TypedDict

import pytest

from pytest_scylla.config.options import BY_NAME, DEFAULTS, one_of
from pytest_scylla.config.values import as_list, folder, ini, value
from pytest_scylla.core.tiers import TIER_NAME
from pytest_scylla.formats import PACKAGED
from pytest_scylla.formats.tiers import Subtest, TierSet, tier_files
from pytest_scylla.formats.yamlmarks import display

SUBTEST_SELECTOR = re.compile(r"^(?:(T\d+)-)?(\d{2})(?:-([a-z0-9][a-z0-9-]*))?$")


class SelectionPart(TypedDict):
    """The `Settings` fields of the selection."""

    tiers_dir: Path
    tier_dirs: tuple[Path, ...]
    tiers: tuple[str, ...] | None
    subtests: tuple[str, ...] | None


def selection_settings(config: pytest.Config) -> tuple[SelectionPart, str]:
    """The `Settings` fields of the selection, and where its subtests were given (checked
    against the tiers by `check_subtests`); a bad value is a `pytest.UsageError`."""
    tiers_dir = (
        folder(config, "scylla_tiers_dir", "tier files (T0.yaml ...)") or config.rootpath / "tiers"
    )
    tier_dirs = _tier_layers(config, tiers_dir)
    tiers, (subtests, origin) = _tiers(config, tier_dirs), _subtests(config)
    part: SelectionPart = {
        "tiers_dir": tier_dirs[0],
        "tier_dirs": tier_dirs,
        "tiers": tiers,
        "subtests": subtests,
    }
    return part, origin


def matches(selector: str, sub: Subtest) -> bool:
    match = SUBTEST_SELECTOR.match(selector)
    assert match, selector
    tier, number, words = match.groups()
    return (
        (tier is None or tier == sub.tier)
        and number == sub.number
        and (words is None or f"{number}-{words}" == sub.name)
    )


def _tier_layers(config: pytest.Config, tiers_dir: Path) -> tuple[Path, ...]:
    """The tier folders, first winning: the project's, the package's, or the one over the
    other (`--scylla-packaged-tiers`)."""
    raw, origin = value(config, "scylla_packaged_tiers")
    mode, allowed = str(raw).strip() or DEFAULTS["packaged_tiers"], BY_NAME["packaged-tiers"]
    if mode not in allowed.choices:
        raise pytest.UsageError(f"{origin}={mode!r}: expected {one_of(allowed.choices)}")
    named = bool(config.getoption("scylla_tiers_dir") or ini(config, "scylla_tiers_dir")[0])
    if mode == "under" and tiers_dir.resolve() != PACKAGED.resolve():
        return (tiers_dir, PACKAGED)
    if mode == "auto" and not named and not tiers_dir.is_dir():
        return (PACKAGED,)
    return (tiers_dir,)


def _tiers(config: pytest.Config, tiers_dir: tuple[Path, ...]) -> tuple[str, ...] | None:
    raw, origin = value(config, "scylla_tiers")
    tiers = as_list(raw)
    known = list(tier_files(tiers_dir)) if tiers is not None else []
    for tier in tiers or ():
        if not TIER_NAME.match(tier):
            raise pytest.UsageError(
                f"{origin}: '{tier}' is not a tier name; expected names "
                "such as T0 or T5, comma-separated"
            )
        if tier not in known:
            raise pytest.UsageError(
                f"{origin}: unknown tier '{tier}'; tiers in {display(tiers_dir[0])}: "
                f"{', '.join(known) or 'none (no T*.yaml files there)'}"
            )
    return tiers


def _subtests(config: pytest.Config) -> tuple[tuple[str, ...] | None, str]:
    raw, origin = value(config, "scylla_subtests")
    subtests = as_list(raw)
    for selector in subtests or ():
        if not SUBTEST_SELECTOR.match(selector):
            raise pytest.UsageError(
                f"{origin}: '{selector}' is not a subtest selector; "
                "expected e.g. 02, 02-core or T5-02"
            )
    return subtests, origin


def check_subtests(
    tiers: TierSet, selected: tuple[str, ...] | None, subtests: tuple[str, ...], origin: str
) -> None:
    """Each subtest selector matches a subtest of the selected tiers (all when None)."""
    subs = [
        s
        for t in tiers.tiers.values()
        if selected is None or t.name in selected
        for s in t.subtests
    ]
    for selector in subtests:
        if tiers.tiers and not any(matches(selector, s) for s in subs):
            raise pytest.UsageError(
                f"{origin}: '{selector}' matches no subtest of the selected tiers; "
                f"known: {', '.join(f'{s.tier}-{s.name}' for s in subs)}"
            )
