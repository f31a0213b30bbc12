"""Pad text to a number of terminal columns; wide (East Asian) characters take two.

A port of strpad (JavaScript). Column widths come from ``wcwidth`` (Unicode's East Asian
Width tables) where strpad keeps a table of its own.
"""

from wcwidth import wcswidth

__all__ = ["display_width", "pad_end"]


def display_width(text: str) -> int:
    """Columns ``text`` takes in a terminal."""
    width = wcswidth(text)
    if width < 0:
        raise ValueError("control character in text")
    return width


def pad_end(text: str, columns: int, fill: str = " ") -> str:
    """``text`` followed by ``fill`` up to ``columns`` columns (unchanged when wider)."""
    if display_width(fill) != 1:
        raise ValueError("fill must be one column wide")
    missing = columns - display_width(text)
    return text + fill * missing if missing > 0 else text
