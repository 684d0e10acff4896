import pytest

from fairshare.money import AmountError, format_cents, parse_amount


@pytest.mark.parametrize(
    ("text", "cents"),
    [
        ("0", 0),
        ("7", 700),
        ("12.5", 1250),
        ("12.50", 1250),
        ("0.05", 5),
        (" 3.99 ", 399),
        ("-4.20", -420),
        ("-15", -1500),
        ("-0.90", -90),
        ("-0.5", -50),
        ("-0.05", -5),
        ("-0", 0),
    ],
)
def test_parse_amount(text, cents):
    assert parse_amount(text) == cents


@pytest.mark.parametrize("text", ["", "abc", "1.234", "1,000.00", "$5", "1.", ".5", "--1"])
def test_parse_amount_rejects(text):
    with pytest.raises(AmountError):
        parse_amount(text)


@pytest.mark.parametrize(
    ("cents", "text"),
    [
        (0, "0.00"),
        (5, "0.05"),
        (1250, "12.50"),
        (100000, "1000.00"),
        (-420, "-4.20"),
        (-90, "-0.90"),
        (-1, "-0.01"),
    ],
)
def test_format_cents(cents, text):
    assert format_cents(cents) == text


def test_format_cents_signed():
    assert format_cents(1250, signed=True) == "+12.50"
    assert format_cents(-1250, signed=True) == "-12.50"
    assert format_cents(0, signed=True) == "0.00"


def test_small_negative_amounts_round_trip():
    for cents in range(-250, 251):
        assert parse_amount(format_cents(cents)) == cents
