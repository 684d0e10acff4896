from fractions import Fraction

import pytest

from fairshare.split import split_even, split_weighted


def test_split_even_exact():
    assert split_even(900, 3) == [300, 300, 300]


def test_split_even_gives_extra_cents_to_the_first_shares():
    assert split_even(1000, 3) == [334, 333, 333]
    assert split_even(1275, 2) == [638, 637]


def test_split_even_rejects_no_people():
    with pytest.raises(ValueError):
        split_even(100, 0)


def test_split_weighted_proportions():
    assert split_weighted(3600, [2, 1, 1]) == [1800, 900, 900]


def test_split_weighted_largest_remainder():
    # 100 * 1/3 = 33.33.., 100 * 2/3 = 66.66..: the second share lost more in rounding.
    assert split_weighted(100, [1, 2]) == [33, 67]


def test_split_weighted_accepts_fractions():
    assert split_weighted(1000, [Fraction(1, 2), Fraction(1, 2)]) == [500, 500]


@pytest.mark.parametrize("total", [0, 1, 99, 1001, 123457])
def test_split_weighted_always_adds_up(total):
    shares = split_weighted(total, [3, 5, 7, 11])
    assert sum(shares) == total


@pytest.mark.parametrize("weights", [[], [0, 0], [1, -1]])
def test_split_weighted_rejects_bad_weights(weights):
    with pytest.raises(ValueError):
        split_weighted(100, weights)
