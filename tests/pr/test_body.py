"""A report longer than GitHub's limit is cut at a line's end, its open code block closed,
with a note that says where the whole report is."""

from __future__ import annotations

from portwright.vcs.pr import BODY_LIMIT, trim_body


def test_a_short_body_is_left_alone() -> None:
    assert trim_body("# report\n") == "# report\n"


def test_a_long_body_is_cut_at_a_line_and_its_code_block_closed() -> None:
    body = "# report\n\n## Ledger and matrix rows\n\n```diff\n" + "+| row | cell |\n" * 9000
    sent = trim_body(body, run_id="run-1")
    assert len(sent) <= BODY_LIMIT
    kept, _, note = sent.partition("\n\n---\n")
    assert kept.endswith("```")
    assert sum(line.startswith("```") for line in kept.splitlines()) % 2 == 0
    assert all(line == "+| row | cell |" for line in kept.splitlines()[5:-1])
    assert "`portwright report run-1`" in note
    assert str(BODY_LIMIT) in note
