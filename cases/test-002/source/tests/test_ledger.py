import io
from pathlib import Path

import pytest

from fairshare.ledger import Expense, Ledger, LedgerError, Transfer, load_csv

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "trip.csv"


def test_example_balances():
    ledger = load_csv(EXAMPLE)
    assert ledger.balances() == {"alice": 4690, "bob": -1243, "carol": -3447}


def test_balances_add_up_to_zero():
    assert sum(load_csv(EXAMPLE).balances().values()) == 0


def test_example_settlement():
    assert load_csv(EXAMPLE).settle() == [
        Transfer("carol", "alice", 3447),
        Transfer("bob", "alice", 1243),
    ]


def test_refund_reduces_what_the_payer_is_owed():
    ledger = Ledger()
    ledger.add(Expense("ann", 3000, ("ann", "ben", "cid")))
    ledger.add(Expense("ann", -600, ("ann", "ben", "cid")))
    assert ledger.balances() == {"ann": 1600, "ben": -800, "cid": -800}


def test_settled_ledger_needs_no_transfers():
    ledger = Ledger([Expense("ann", 500, ("ann",))])
    assert ledger.settle() == []


def test_weighted_expense():
    expense = Expense("ann", 1000, ("ann", "ben"), weights=(3, 1))
    assert expense.shares() == {"ann": 750, "ben": 250}


@pytest.mark.parametrize(
    "text",
    [
        "payer,amount\nann,1.00\n",
        "payer,amount,participants\nann,ten,ann;ben\n",
        "payer,amount,participants\n,1.00,ann\n",
        "payer,amount,participants\nann,1.00,\n",
        "payer,amount,participants,weights\nann,1.00,ann;ben,1\n",
    ],
)
def test_load_csv_rejects_malformed_input(text):
    with pytest.raises(LedgerError):
        load_csv(io.StringIO(text))


def test_load_csv_reports_the_line():
    text = "payer,amount,participants\nann,1.00,ann\nben,oops,ann;ben\n"
    with pytest.raises(LedgerError, match="line 3"):
        load_csv(io.StringIO(text))
