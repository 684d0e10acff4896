"""fairshare: split shared expenses between people without losing a cent."""

from fairshare.ledger import Expense, Ledger, LedgerError, Transfer, load_csv
from fairshare.money import AmountError, format_cents, parse_amount
from fairshare.split import split_even, split_weighted

__all__ = [
    "AmountError",
    "Expense",
    "Ledger",
    "LedgerError",
    "Transfer",
    "format_cents",
    "load_csv",
    "parse_amount",
    "split_even",
    "split_weighted",
]

__version__ = "0.4.1"
