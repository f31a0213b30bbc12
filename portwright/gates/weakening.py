"""Does a diff of test files weaken them? New skips, removed assertions, looser tolerances.

Patterns cover Python (pytest, unittest, numpy/torch testing) and C++ (GoogleTest, Catch2,
``#if 0``). A line moved within a file (removed and added with the same text) is neither a
new skip nor a removed assertion.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

SKIP_PATTERNS = [
    re.compile(r"@pytest\.mark\.(?:skip|skipif|xfail)\b"),
    re.compile(r"\bpytest\.(?:skip|xfail|importorskip)\s*\("),
    re.compile(r"@(?:unittest\.)?(?:skip|skipIf|skipUnless|expectedFailure)\b"),
    re.compile(r"\bself\.skipTest\s*\("),
    re.compile(r"\braise\s+(?:unittest\.)?SkipTest\b"),
    re.compile(r"\bGTEST_SKIP\s*\("),
    re.compile(r"\bTEST(?:_F|_P)?\s*\(\s*\w+\s*,\s*DISABLED_\w+"),
    re.compile(r"\bTEST(?:_F|_P)?\s*\(\s*DISABLED_\w+"),
    re.compile(r"^\s*#\s*if\s+0\b"),
    re.compile(r"\bSKIP\s*\("),
    re.compile(r"\[!mayfail\]|\[\.\]|\[!shouldfail\]"),
]

ASSERT_PATTERNS = [
    re.compile(r"^\s*assert\b"),
    re.compile(r"\bself\.assert\w*\s*\("),
    re.compile(r"\bpytest\.(?:raises|warns|approx)\s*\("),
    re.compile(r"\b(?:np|numpy|torch)\.testing\.assert_\w+\s*\("),
    re.compile(r"\bassert_(?:allclose|close|equal|array_equal|almost_equal)\w*\s*\("),
    re.compile(r"\b(?:EXPECT|ASSERT)_[A-Z_]+\s*\("),
    re.compile(r"\b(?:CHECK|REQUIRE)(?:_[A-Z_]+)?\s*\("),
    re.compile(r"\bstatic_assert\s*\("),
]

_TOL_KW = re.compile(
    r"\b(rtol|atol|rel_tol|abs_tol|rel|abs|tol|tolerance|eps|epsilon|delta|places)\s*=\s*"
    r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)"
)
_TOL_CALL = re.compile(
    r"\b(?:EXPECT|ASSERT)_NEAR\s*\((?:[^,()]|\([^()]*\))*,(?:[^,()]|\([^()]*\))*,\s*"
    r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)"
)
_TOL_METHOD = re.compile(
    r"\.(epsilon|margin)\s*\(\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*\)"
)


@dataclass(frozen=True)
class Finding:
    """One way a test was weakened."""

    path: str
    """Test file."""
    line: int
    """Line (at HEAD for additions, at base for removals)."""
    message: str
    """What happened."""

    def render(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


def tolerances(line: str) -> dict[str, float]:
    """Tolerance values a line sets, by keyword (``near`` for ``EXPECT_NEAR``'s third arg)."""
    found: dict[str, float] = {}
    for key, value in _TOL_KW.findall(line):
        found[key] = float(value)
    for value in _TOL_CALL.findall(line):
        found["near"] = float(value)
    for key, value in _TOL_METHOD.findall(line):
        found[key] = float(value)
    return found


def _is_skip(text: str) -> bool:
    return any(p.search(text) for p in SKIP_PATTERNS)


def _is_assert(text: str) -> bool:
    return any(p.search(text) for p in ASSERT_PATTERNS)


def weakening(diff: str) -> list[Finding]:
    """Findings in a unified diff (of test files only)."""
    from unidiff.patch import PatchSet

    findings: list[Finding] = []
    for patched in PatchSet(diff):
        path = patched.path
        removed_text: Counter[str] = Counter()
        added_text: Counter[str] = Counter()
        removed: list[tuple[int, str]] = []
        added: list[tuple[int, str]] = []
        for hunk in patched:
            hunk_removed: list[tuple[int, str]] = []
            hunk_added: list[tuple[int, str]] = []
            for line in hunk:
                text = line.value.rstrip("\n")
                if line.is_removed:
                    hunk_removed.append((line.source_line_no or 0, text))
                elif line.is_added:
                    hunk_added.append((line.target_line_no or 0, text))
            findings += _looser(path, hunk_removed, hunk_added)
            removed += hunk_removed
            added += hunk_added
        removed_text.update(t.strip() for _, t in removed)
        added_text.update(t.strip() for _, t in added)
        for number, text in added:
            key = text.strip()
            if _is_skip(text) and added_text[key] > removed_text[key]:
                findings.append(Finding(path, number, f"adds a skip/xfail: `{key}`"))
        for number, text in _unmatched_asserts(removed, added):
            findings.append(Finding(path, number, f"removes an assertion (line {number} before "
                                    f"the change): `{text.strip()}`"))
    return findings


def _unmatched_asserts(removed: list[tuple[int, str]],
                      added: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Removed assertions that no added assertion replaces (an edited assertion is matched
    to its most similar added one; a tolerance change is judged by :func:`_looser`)."""
    from difflib import SequenceMatcher

    pool = [t.strip() for _, t in added if _is_assert(t)]
    lost: list[tuple[int, str]] = []
    for number, text in removed:
        if not _is_assert(text):
            continue
        key = text.strip()
        if key in pool:
            pool.remove(key)
            continue
        scored = [(SequenceMatcher(a=key, b=cand).ratio(), cand) for cand in pool]
        best = max(scored, default=(0.0, ""))
        if best[0] >= 0.6:
            pool.remove(best[1])
        else:
            lost.append((number, text))
    return lost


def _looser(path: str, removed: list[tuple[int, str]],
            added: list[tuple[int, str]]) -> list[Finding]:
    before: dict[str, float] = {}
    for _, text in removed:
        for key, value in tolerances(text).items():
            before[key] = max(before.get(key, value), value) if key != "places" \
                else min(before.get(key, value), value)
    out: list[Finding] = []
    for number, text in added:
        for key, value in tolerances(text).items():
            if key not in before:
                continue
            old = before[key]
            looser = value < old if key == "places" else abs(value) > abs(old)
            if looser:
                out.append(Finding(path, number,
                                   f"loosens a tolerance: {key} {old:g} -> {value:g}"))
    return out
