import pytest

from pystats import clamp, mean, median, percentile


def test_mean_of_integers():
    assert mean([1, 2, 3, 4]) == 2.5


def test_mean_of_an_empty_list_raises():
    with pytest.raises(ValueError):
        mean([])


def test_median_odd_and_even():
    assert median([3, 1, 2]) == 2
    assert median([4, 1, 3, 2]) == 2.5


def test_clamp_keeps_bounds_inclusive():
    assert clamp(5, 0, 5) == 5
    assert clamp(-1, 0, 5) == 0
    with pytest.raises(ValueError):
        clamp(1, 3, 2)


def test_percentile_interpolates_between_ranks():
    assert percentile([1, 2, 3, 4], 50) == 2.5
    with pytest.raises(ValueError):
        percentile([1], 101)
