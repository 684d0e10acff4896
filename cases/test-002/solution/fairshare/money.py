"""Amounts of money, kept as whole cents.

Binary floats cannot hold most decimal fractions exactly, so fairshare stores every amount as an
``int`` number of cents and converts only at the edges: when it reads user input and when it
prints a result.
"""

from __future__ import annotations

import re

_AMOUNT_RE = re.compile(r"-?\d+(?:\.\d{1,2})?")


class AmountError(ValueError):
    """A text could not be read as an amount of money."""


def parse_amount(text: str) -> int:
    """Read a decimal amount such as ``"12.5"``, ``"3"`` or ``"-4.20"`` and return cents.

    At most two decimals are allowed. Currency signs and thousands separators are rejected
    rather than guessed at.
    """
    cleaned = text.strip()
    if not _AMOUNT_RE.fullmatch(cleaned):
        raise AmountError(f"not an amount: {text!r}")
    # Take the sign off first: int("-0") is 0, so the sign of "-0.50" would be lost if it
    # were read from the whole part.
    negative = cleaned.startswith("-")
    whole, _, fraction = cleaned.lstrip("-").partition(".")
    cents = int(whole) * 100 + int(fraction.ljust(2, "0"))
    return -cents if negative else cents


def format_cents(cents: int, *, signed: bool = False) -> str:
    """Render cents as a decimal text with two decimals, e.g. ``1250 -> "12.50"``.

    With ``signed=True`` positive amounts get a leading ``+`` so that columns of balances
    line up with the negative ones.
    """
    units, rest = divmod(abs(cents), 100)
    if cents < 0:
        sign = "-"
    elif signed and cents > 0:
        sign = "+"
    else:
        sign = ""
    return f"{sign}{units}.{rest:02d}"
