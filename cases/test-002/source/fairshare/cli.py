"""Command line interface: ``fairshare {list,balances,settle} LEDGER.csv``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from fairshare.ledger import Ledger, LedgerError, load_csv
from fairshare.money import format_cents


def _print_list(ledger: Ledger) -> None:
    for number, expense in enumerate(ledger.expenses, start=1):
        who = ", ".join(expense.participants)
        note = f"  {expense.description}" if expense.description else ""
        print(f"{number:>3}  {expense.payer:<10} {format_cents(expense.amount):>10}  [{who}]{note}")


def _print_balances(ledger: Ledger) -> None:
    balances = ledger.balances()
    width = max((len(name) for name in balances), default=0)
    for name in sorted(balances):
        print(f"{name:<{width}}  {format_cents(balances[name], signed=True):>10}")


def _print_settlement(ledger: Ledger) -> None:
    transfers = ledger.settle()
    if not transfers:
        print("Everyone is settled up.")
        return
    for transfer in transfers:
        amount = format_cents(transfer.amount)
        print(f"{transfer.debtor} pays {transfer.creditor} {amount}")


COMMANDS = {
    "list": (_print_list, "list the expenses in the ledger"),
    "balances": (_print_balances, "show what each person is owed (+) or owes (-)"),
    "settle": (_print_settlement, "show the transfers that settle all debts"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fairshare", description="Split shared expenses fairly, to the cent."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (_, help_text) in COMMANDS.items():
        command = commands.add_parser(name, help=help_text, description=help_text)
        command.add_argument("ledger", help="CSV file with payer, amount, participants columns")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        ledger = load_csv(args.ledger)
    except OSError as error:
        print(f"fairshare: cannot read {args.ledger}: {error.strerror}", file=sys.stderr)
        return 2
    except LedgerError as error:
        print(f"fairshare: {args.ledger}: {error}", file=sys.stderr)
        return 1
    COMMANDS[args.command][0](ledger)
    return 0
