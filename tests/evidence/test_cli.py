"""``portwright gap``, ``surface`` and ``trace`` from the command line."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from portwright.cli import app
from portwright.cli.common import console
from tests.evidence.conftest import grammar_or_skip

MATRIX = """# Parity

| id | title | status | upstream |
| --- | --- | --- | --- |
| clamp | clamp a value | partial | clampRange, src/clamp.js |
| empty | nothing yet | missing | |
| harmonic | harmonic mean | missing | harmonicMean, weightedMedian |
"""


@pytest.fixture
def configured(pair: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(console, "width", 240)
    pair.down.commit("configure portwright", {
        "portwright.toml": '[upstream]\nsource = "../up"\npath_map = { "src/" = "lib/" }\n',
        "upstream-sync.md": f"# Upstream sync\n\nPin: `{pair.base}`\n",
        "docs/parity/matrix.md": MATRIX,
    })
    return pair


def _run(pair: Any, *args: str) -> Any:
    return CliRunner().invoke(app, ["-C", str(pair.down.path), *args])


def test_gap_json_from_the_pin(configured: Any) -> None:
    result = _run(configured, "gap", "--json")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["base"] == configured.base
    verdicts = [c["verdict"] for c in payload["commits"]]
    # the matrix names harmonicMean and weightedMedian: records are not the port
    assert verdicts == ["landed", "landed", "not_applicable", "partial", "missing", "missing"]
    never = payload["commits"][-1]
    assert {e["where"] for e in never["evidence"]} == {"absent"}


def test_gap_table(configured: Any) -> None:
    result = _run(configured, "gap", "--to", configured.commits["docs"])
    assert result.exit_code == 0, result.output
    assert "add computeScaleFactor" in result.stdout
    assert "1 not_applicable, 2 landed" in result.stdout


def test_gap_row(configured: Any) -> None:
    result = _run(configured, "gap", "--row", "clamp", "--json")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    symbols = payload["evidence"]["symbols"]
    assert [s["symbol"] for s in symbols] == ["clampRange", "src/clamp.js"]
    assert symbols[0]["downstream_at_head"][0]["text"] == "clamp_range"
    table = _run(configured, "gap", "--row", "clamp")
    assert "clamp_range lib/clamp.py:1" in table.stdout


def test_gap_row_errors(configured: Any) -> None:
    unknown = _run(configured, "gap", "--row", "nope")
    assert unknown.exit_code != 0
    assert "no parity row 'nope'" in str(unknown.exception)
    empty = _run(configured, "gap", "--row", "empty")
    assert "docs/parity/matrix.md:6" in str(empty.exception)


def test_surface_and_trace(configured: Any) -> None:
    grammar_or_skip("javascript")
    up = configured.up
    result = _run(configured, "surface", "computeScaleFactor", "--at", "HEAD", "--json")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["rev"] == up.head()
    assert {i["name"] for i in payload["items"] if i["kind"] == "parameter"} == {"width",
                                                                                "height"}
    table = _run(configured, "surface", "clampRange", "--at", "HEAD")
    assert "RangeError" in table.stdout
    configured.down.commit("port harmonic_mean",
                           {"lib/harmonic.py": "def harmonic_mean(xs):\n    pass\n"})
    traced = _run(configured, "trace", "--base", "HEAD~1", "--pin", "HEAD")
    assert traced.exit_code == 0, traced.output
    assert "1 traced, 0 invented" in traced.stdout


def test_gap_table_keeps_square_brackets(configured: Any) -> None:
    configured.up.commit("guard on state.sCount[startLine] and [bold]x[/bold]",
                         {"docs/notes.md": "state.sCount[startLine]\n"})
    result = _run(configured, "gap")
    assert result.exit_code == 0, result.output
    assert "guard on state.sCount[startLine] and [bold]x[/bold]" in result.stdout


def test_gap_table_at_80_columns_keeps_every_verdict(
        configured: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(console, "width", 80)
    result = _run(configured, "gap")
    assert result.exit_code == 0, result.output
    assert max(len(line) for line in result.stdout.splitlines()) <= 80
    words = result.stdout.split()
    for verdict in ("landed", "partial", "missing", "not_applicable"):
        assert verdict in words, verdict  # wrapped around, never cut


def test_gap_one_commit(configured: Any) -> None:
    sha = configured.commits["partial"]
    result = _run(configured, "gap", "--commit", sha[:10])
    assert result.exit_code == 0, result.output
    assert "partial" in result.stdout
    assert "clamps into the range" in result.stdout
    assert "lib/clamp.py" in result.stdout
    payload = json.loads(_run(configured, "gap", "--commit", sha, "--json").stdout)
    assert payload["sha"] == sha
    assert payload["verdict"] == "partial"


def test_gap_row_follows_renames_and_lists_every_commit(configured: Any) -> None:
    up = configured.up
    shas = [up.commit(f"tweak {n}", {"src/clamp.js": f"// v{n}\n" + "x\n" * n})
            for n in range(1, 5)]
    up.git("mv", "src/clamp.js", "src/clamp_range.js")
    moved = up.commit("rename clamp.js")
    matrix = MATRIX.replace("clampRange, src/clamp.js", "clampRange, src/clamp_range.js")
    configured.down.commit("follow the rename", {"docs/parity/matrix.md": matrix})
    payload = json.loads(_run(configured, "gap", "--row", "clamp", "--json").stdout)
    path = payload["evidence"]["symbols"][1]
    assert path["upstream_changes"][:5] == [moved, *reversed(shas)]
    assert path["renamed_from"] == ["src/clamp.js"]
    table = _run(configured, "gap", "--row", "clamp")
    assert all(sha[:10] in table.stdout for sha in shas)
    assert "renamed from src/clamp.js" in "".join(table.stdout.split("\n"))


def test_surface_detail_keeps_square_brackets(configured: Any) -> None:
    grammar_or_skip("javascript")
    configured.up.commit("heading rule", {"src/heading.js": (
        "export default function heading(state, startLine, endLine, silent) {\n"
        "  if (state.sCount[startLine] - state.blkIndent >= 4) { return false }\n"
        "  return true\n}\n")})
    result = _run(configured, "surface", "src/heading.js:heading", "--at", "HEAD")
    assert result.exit_code == 0, result.output
    assert "state.sCount[startLine] - state.blkIndent >= 4" in result.stdout


def test_evidence_commands_leave_no_untracked_files(configured: Any) -> None:
    """The index and the gap cache live in the state folder, never in the repository (init
    was not run here: nothing ignores a cache folder)."""
    for args in (["gap"], ["gap", "--commit", configured.commits["partial"]],
                 ["gap", "--row", "clamp"]):
        result = _run(configured, *args)
        assert result.exit_code == 0, result.output
    assert configured.down.git("status", "--porcelain", "--untracked-files=all") == ""
