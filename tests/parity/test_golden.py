from __future__ import annotations

import difflib
from pathlib import Path

import pytest

from tests.parity.golden_cases import CASES, GOLDEN


@pytest.mark.parametrize("name", sorted(CASES))
def test_writer_matches_golden(tmp_path: Path, name: str) -> None:
    produced = CASES[name](tmp_path)
    expected = (GOLDEN / f"{name}.out.md").read_bytes().decode()
    assert produced == expected, "".join(difflib.unified_diff(
        expected.splitlines(True), produced.splitlines(True), "golden", "produced"))


@pytest.mark.parametrize("name", ["matrix", "ledger"])
def test_untouched_lines_stay_byte_identical(tmp_path: Path, name: str) -> None:
    before = (GOLDEN / f"{name}.in.md").read_bytes().decode().splitlines(True)
    after = CASES[name](tmp_path).splitlines(True)
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    untouched = sum(block.size for block in matcher.get_matching_blocks())
    rewritten = {"matrix": 2, "ledger": 0}[name]
    assert untouched == len(before) - rewritten
