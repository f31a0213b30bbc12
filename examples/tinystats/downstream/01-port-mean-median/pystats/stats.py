"""Statistics helpers, ported from tinystats ``src/stats.js``."""

from __future__ import annotations

from collections.abc import Sequence


def mean(values: Sequence[float]) -> float:
    if len(values) == 0:
        raise ValueError("mean of an empty list")
    return sum(values) / len(values)


def median(values: Sequence[float]) -> float:
    if len(values) == 0:
        raise ValueError("median of an empty list")
    ordered = sorted(values)
    mid = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[mid]
    return (ordered[mid - 1] + ordered[mid]) / 2
