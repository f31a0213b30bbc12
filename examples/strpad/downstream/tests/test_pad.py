import pytest
from pystrpad import display_width, pad_end


def test_display_width() -> None:
    assert display_width("abc") == 3
    assert display_width("日本") == 4


def test_pad_end() -> None:
    assert pad_end("日本", 6) == "日本  "
    assert pad_end("abc", 2) == "abc"
    assert pad_end("ab", 4, ".") == "ab.."


def test_errors() -> None:
    with pytest.raises(ValueError, match="one column"):
        pad_end("ab", 4, "日")
    with pytest.raises(ValueError, match="control"):
        display_width("a\u0007")
