"""String literals of a diff line: quotes paired from the left, in linear time."""

from __future__ import annotations

import pytest

from portwright.evidence import tokens


def test_a_short_string_does_not_open_a_fragment() -> None:
    line = "x = 'a' + 'bcd' + \"it's here\" + 'don\\'t'"
    assert tokens.string_literals(line) == ["bcd", "it's here", "don\\'t"]


@pytest.mark.timeout(5)
def test_unclosed_quote_before_many_backslashes_is_linear() -> None:
    line = "var re = /[!\"#$%&'()*+,\\-./:;<=>?@\\[\\]^_`{|}~" + "\\u0387\\u055A-\\u055F" * 2000
    assert all(len(found) < 100 for found in tokens.string_literals(line))
