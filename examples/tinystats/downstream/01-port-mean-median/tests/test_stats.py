import pytest

from pystats import mean, median


def test_mean_of_integers():
    assert mean([1, 2, 3, 4]) == 2.5


def test_mean_of_an_empty_list_raises():
    with pytest.raises(ValueError):
        mean([])


def test_median_odd_and_even():
    assert median([3, 1, 2]) == 2
    assert median([4, 1, 3, 2]) == 2.5
