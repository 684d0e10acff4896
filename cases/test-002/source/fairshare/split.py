"""Splitting an amount of cents into shares that add up exactly."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

Weight = int | Fraction


def split_even(total: int, count: int) -> list[int]:
    """Split ``total`` cents into ``count`` shares that differ by at most one cent.

    The first shares receive the extra cents, so the result is deterministic.
    """
    if count <= 0:
        raise ValueError("count must be positive")
    base, extra = divmod(total, count)
    return [base + 1 if index < extra else base for index in range(count)]


def split_weighted(total: int, weights: Sequence[Weight]) -> list[int]:
    """Split ``total`` cents in proportion to ``weights``.

    Uses the largest remainder method: every share is first rounded down, then the cents that
    are left over go to the shares that lost the most in rounding (ties go to the earlier
    share). The shares always sum to ``total``.
    """
    if not weights:
        raise ValueError("at least one weight is required")
    exact_weights = [Fraction(weight) for weight in weights]
    if any(weight < 0 for weight in exact_weights):
        raise ValueError("weights must not be negative")
    weight_sum = sum(exact_weights)
    if weight_sum == 0:
        raise ValueError("weights must not all be zero")

    ideal = [total * weight / weight_sum for weight in exact_weights]
    shares = [ideal_share.numerator // ideal_share.denominator for ideal_share in ideal]
    leftover = total - sum(shares)
    by_remainder = sorted(
        range(len(shares)), key=lambda index: (-(ideal[index] - shares[index]), index)
    )
    for index in by_remainder[:leftover]:
        shares[index] += 1
    return shares
