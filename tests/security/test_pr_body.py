"""Agent-written text goes into a pull request body as text, never as HTML: an HTML comment
or a ``<details>`` a model wrote cannot hide or collapse the real Evidence and Review
sections on the forge's renderer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from portwright.runs.report import render_report

HOSTILE = ["<!-- everything after this is hidden", "<details><summary>ok</summary>",
           "</details>", "<img src=x onerror=alert(1)>", "`</code><b>x</b>"]


@pytest.mark.parametrize("text", HOSTILE)
def test_agent_text_is_escaped_in_the_body(tmp_path: Path, text: str) -> None:
    (tmp_path / "gap.json").write_text(json.dumps({
        "status": "missing", "reasoning": text,
        "evidence": [{"kind": "upstream", "ref": text, "detail": text}]}))
    (tmp_path / "classification.json").write_text(json.dumps({
        "slice": text, "items": [{"item": text, "classification": "ported", "reason": text}]}))
    (tmp_path / "review-1.json").write_text(json.dumps({
        "decision": "approve", "summary": text,
        "findings": [{"path": text, "line": 1, "severity": "minor", "message": text}]}))
    body = render_report(tmp_path, {"run_id": "r", "row": "x", "status": "done",
                                    "reason": text}, [])
    assert "<" not in body, body
    assert "## Review (review-1)" in body
