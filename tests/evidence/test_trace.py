"""Traceability of the names a downstream change adds."""

from __future__ import annotations

from typing import Any

from portwright.evidence.trace import trace_changes


def test_trace_marks_traced_and_invented_names(pair: Any) -> None:
    down = pair.down
    base = down.head()
    pair.up.commit("docs mention it", {"docs/harmonic.md": "See harmonicMean.\n"})
    down.commit("port harmonic_mean", {"lib/harmonic.py": (
        "def harmonic_mean(xs):\n"
        "    reciprocal_total = sum(1 / x for x in xs)  # written_here by hand\n"
        "    assert xs, 'needs_values to average'\n"
        "    return len(xs) / reciprocal_total\n"
        "def clamp_range_fast(value):\n    return compute_scale_factor(value, 1)\n")})
    report = trace_changes(down.path, pair.up.path, base, "HEAD", pair.config)
    by_name = {item.name: item for item in report.items}
    assert set(by_name) == {"harmonic_mean", "reciprocal_total", "clamp_range_fast"}
    traced = by_name["harmonic_mean"]
    assert traced.status == "traced"
    assert traced.upstream_name == "harmonicMean"
    assert traced.how == "normalised"
    assert traced.upstream_anchor == f"src/harmonic.js:1@{pair.up.head()}"
    assert traced.downstream_anchor == "lib/harmonic.py:1"
    assert by_name["reciprocal_total"].status == "invented"
    assert by_name["clamp_range_fast"].status == "invented"
    # compute_scale_factor already existed downstream: not a name this change adds
    assert report.counts() == {"traced": 1, "invented": 2}


def test_trace_at_an_older_pin(pair: Any) -> None:
    down = pair.down
    base = down.head()
    down.commit("port harmonic_mean", {"lib/harmonic.py": "def harmonic_mean(xs):\n    pass\n"})
    report = trace_changes(down.path, pair.up.path, base, pair.base, pair.config)
    assert [(i.name, i.status) for i in report.items] == [("harmonic_mean", "invented")]


def test_trace_test_function_to_upstream_title(pair: Any) -> None:
    down = pair.down
    base = down.head()
    down.commit("port the clamp test", {"tests/test_clamp.py": (
        "def test_clamps_into_the_range():\n    assert clamp_range(5, 0, 3) == 3\n")})
    report = trace_changes(down.path, pair.up.path, base, "HEAD", pair.config)
    (item,) = report.items
    assert (item.status, item.how) == ("traced", "test title")
    assert item.upstream_anchor == f"tests/clamp.test.js:2@{pair.up.head()}"
