"""A ledger of shared expenses, the balances it implies and how to settle them."""

from __future__ import annotations

import csv
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import IO

from fairshare.money import AmountError, parse_amount
from fairshare.split import split_even, split_weighted


class LedgerError(ValueError):
    """A ledger file or an expense is malformed."""


@dataclass(frozen=True)
class Expense:
    """One payment made by ``payer`` on behalf of ``participants``.

    ``amount`` is in cents. A negative amount is a refund: the payer received money that
    belongs to all participants. ``weights``, when given, has one entry per participant.
    """

    payer: str
    amount: int
    participants: tuple[str, ...]
    weights: tuple[Fraction, ...] | None = None
    description: str = ""

    def __post_init__(self) -> None:
        if not self.payer:
            raise LedgerError("an expense needs a payer")
        if not self.participants:
            raise LedgerError("an expense needs at least one participant")
        if len(set(self.participants)) != len(self.participants):
            raise LedgerError("participants must be distinct")
        if self.weights is not None and len(self.weights) != len(self.participants):
            raise LedgerError("need exactly one weight per participant")

    def shares(self) -> dict[str, int]:
        """Return what each participant owes for this expense, in cents."""
        if self.weights is None:
            amounts = split_even(self.amount, len(self.participants))
        else:
            amounts = split_weighted(self.amount, self.weights)
        return dict(zip(self.participants, amounts))


@dataclass(frozen=True)
class Transfer:
    """``debtor`` pays ``amount`` cents to ``creditor``."""

    debtor: str
    creditor: str
    amount: int


class Ledger:
    """An ordered collection of expenses."""

    def __init__(self, expenses: Iterable[Expense] = ()) -> None:
        self._expenses: list[Expense] = list(expenses)

    def add(self, expense: Expense) -> None:
        self._expenses.append(expense)

    @property
    def expenses(self) -> tuple[Expense, ...]:
        return tuple(self._expenses)

    def people(self) -> list[str]:
        names = set()
        for expense in self._expenses:
            names.add(expense.payer)
            names.update(expense.participants)
        return sorted(names)

    def balances(self) -> dict[str, int]:
        """Net position of every person in cents: positive means others owe them money.

        The balances of a ledger always add up to zero.
        """
        balance = dict.fromkeys(self.people(), 0)
        for expense in self._expenses:
            balance[expense.payer] += expense.amount
            for person, share in expense.shares().items():
                balance[person] -= share
        return balance

    def settle(self) -> list[Transfer]:
        """Return transfers that bring every balance to zero.

        Greedy: the largest debtor repeatedly pays the largest creditor. Ties are broken by
        name so that the plan is stable. At most ``len(people) - 1`` transfers are needed.
        """
        balances = self.balances()
        creditors = [[name, amount] for name, amount in balances.items() if amount > 0]
        debtors = [[name, -amount] for name, amount in balances.items() if amount < 0]
        transfers: list[Transfer] = []
        while creditors and debtors:
            creditors.sort(key=lambda entry: (-entry[1], entry[0]))
            debtors.sort(key=lambda entry: (-entry[1], entry[0]))
            creditor, debtor = creditors[0], debtors[0]
            amount = min(creditor[1], debtor[1])
            transfers.append(Transfer(debtor[0], creditor[0], amount))
            creditor[1] -= amount
            debtor[1] -= amount
            if creditor[1] == 0:
                creditors.pop(0)
            if debtor[1] == 0:
                debtors.pop(0)
        return transfers


def _split_names(field: str) -> tuple[str, ...]:
    return tuple(name.strip() for name in field.split(";") if name.strip())


def _parse_row(row: dict[str, str], line: int) -> Expense:
    try:
        amount = parse_amount(row.get("amount") or "")
    except AmountError as error:
        raise LedgerError(f"line {line}: {error}") from None
    participants = _split_names(row.get("participants") or "")
    weights_field = (row.get("weights") or "").strip()
    weights = None
    if weights_field:
        try:
            weights = tuple(Fraction(part) for part in _split_names(weights_field))
        except (ValueError, ZeroDivisionError):
            raise LedgerError(f"line {line}: bad weights {weights_field!r}") from None
    try:
        return Expense(
            payer=(row.get("payer") or "").strip(),
            amount=amount,
            participants=participants,
            weights=weights,
            description=(row.get("description") or "").strip(),
        )
    except LedgerError as error:
        raise LedgerError(f"line {line}: {error}") from None


def load_csv(source: str | Path | IO[str]) -> Ledger:
    """Read a ledger from CSV with the columns payer, amount, participants.

    Optional columns are ``weights`` (``;``-separated, one per participant) and
    ``description``. Participants are separated by ``;``.
    """
    if isinstance(source, (str, Path)):
        with open(source, newline="", encoding="utf-8") as handle:
            return load_csv(handle)
    reader = csv.DictReader(source)
    missing = {"payer", "amount", "participants"} - set(reader.fieldnames or ())
    if missing:
        raise LedgerError(f"missing column(s): {', '.join(sorted(missing))}")
    ledger = Ledger()
    for row in reader:
        ledger.add(_parse_row(row, reader.line_num))
    return ledger
