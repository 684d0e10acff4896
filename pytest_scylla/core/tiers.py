"""Tier names and their one order: T0, T1, ..., T9, T10, then any other name by itself. Every
table, figure, plan and matrix sorts tiers with `tier_key`."""

from __future__ import annotations

import re

TIER_NAME = re.compile(r"^T(\d+)$")
OTHER = 1 << 30  # a name that is no tier's sorts after every tier


def tier_key(name: str) -> tuple[int, str]:
    match = TIER_NAME.match(name)
    return (int(match.group(1)) if match else OTHER, name)


def subtest_key(ref: str) -> tuple[tuple[int, str], str]:
    """A subtest's place (`T1-03`): by its tier's number, then its own; the one spelling of that
    order (a name that is no tier's sorts last)."""
    tier, _, rest = ref.partition("-")
    return tier_key(tier), rest
