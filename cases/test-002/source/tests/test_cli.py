from pathlib import Path

from fairshare.cli import main

EXAMPLE = str(Path(__file__).resolve().parent.parent / "examples" / "trip.csv")


def test_balances(capsys):
    assert main(["balances", EXAMPLE]) == 0
    assert capsys.readouterr().out == "alice      +46.90\nbob        -12.43\ncarol      -34.47\n"


def test_settle(capsys):
    assert main(["settle", EXAMPLE]) == 0
    assert capsys.readouterr().out == "carol pays alice 34.47\nbob pays alice 12.43\n"


def test_list_shows_every_expense(capsys):
    assert main(["list", EXAMPLE]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4
    assert "120.00" in lines[0] and "cabin deposit" in lines[0]


def test_missing_file(capsys, tmp_path):
    assert main(["balances", str(tmp_path / "nope.csv")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_malformed_file(capsys, tmp_path):
    ledger = tmp_path / "bad.csv"
    ledger.write_text("payer,amount,participants\nann,x,ann\n", encoding="utf-8")
    assert main(["balances", str(ledger)]) == 1
    assert "line 2" in capsys.readouterr().err
