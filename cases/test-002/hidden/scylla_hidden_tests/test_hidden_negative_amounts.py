"""Hidden acceptance tests for the 'refunds under one unit' issue (run after the agent)."""

import subprocess
import sys
from pathlib import Path

import pytest

from fairshare import Expense, Ledger, format_cents, load_csv, parse_amount

ROOT = Path(__file__).resolve().parent.parent

ISSUE_LEDGER = """\
payer,amount,participants,description
dana,36.00,dana;eli;finn,cleaning supplies
eli,33.60,dana;eli;finn,internet (March)
dana,-0.90,dana;eli;finn,bottle deposit returned
finn,1.50,dana;finn,milk
"""


def run_cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "fairshare", *args],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )


@pytest.fixture
def issue_ledger(tmp_path):
    path = tmp_path / "flat.csv"
    path.write_text(ISSUE_LEDGER, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("text", "cents"),
    [
        ("-0.90", -90),
        ("-0.9", -90),
        ("-0.05", -5),
        ("-0.01", -1),
        ("-0.99", -99),
        ("-0", 0),
        ("-0.00", 0),
        ("-1.50", -150),
        ("-12.05", -1205),
        ("0.90", 90),
        ("12.05", 1205),
    ],
)
def test_parse_amount_keeps_the_sign(text, cents):
    assert parse_amount(text) == cents


@pytest.mark.parametrize(
    ("cents", "text"),
    [
        (-90, "-0.90"),
        (-5, "-0.05"),
        (-1, "-0.01"),
        (-99, "-0.99"),
        (-100, "-1.00"),
        (-1205, "-12.05"),
    ],
)
def test_format_cents_keeps_the_sign(cents, text):
    assert format_cents(cents) == text
    assert format_cents(cents, signed=True) == text


def test_format_cents_positive_unchanged():
    assert format_cents(40) == "0.40"
    assert format_cents(40, signed=True) == "+0.40"
    assert format_cents(0, signed=True) == "0.00"
    assert format_cents(123456) == "1234.56"


def test_round_trip():
    for cents in range(-1000, 1001):
        assert parse_amount(format_cents(cents)) == cents
        assert parse_amount(format_cents(cents, signed=True).lstrip("+")) == cents


def test_issue_ledger_balances(issue_ledger):
    ledger = load_csv(issue_ledger)
    assert [expense.amount for expense in ledger.expenses] == [3600, 3360, -90, 150]
    assert ledger.balances() == {"dana": 1145, "eli": 1070, "finn": -2215}


def test_small_debt_is_shown_as_negative():
    ledger = Ledger([Expense("ann", 80, ("ann", "ben"))])
    assert ledger.balances() == {"ann": 40, "ben": -40}


def test_cli_balances_for_the_issue(issue_ledger):
    result = run_cli("balances", str(issue_ledger))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "dana      +11.45\neli       +10.70\nfinn      -22.15\n"


def test_cli_settle_for_the_issue(issue_ledger):
    result = run_cli("settle", str(issue_ledger))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "finn pays dana 11.45\nfinn pays eli 10.70\n"


def test_cli_list_shows_the_refund_as_negative(issue_ledger):
    result = run_cli("list", str(issue_ledger))
    assert result.returncode == 0, result.stderr
    refund_line = result.stdout.splitlines()[2]
    assert "-0.90" in refund_line
    assert "bottle deposit returned" in refund_line


def test_cli_small_negative_balance(tmp_path):
    path = tmp_path / "small.csv"
    path.write_text("payer,amount,participants\nann,0.80,ann;ben\n", encoding="utf-8")
    result = run_cli("balances", str(path))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "ann       +0.40\nben       -0.40\n"


def test_example_output_unchanged():
    result = run_cli("balances", "examples/trip.csv")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "alice      +46.90\nbob        -12.43\ncarol      -34.47\n"
