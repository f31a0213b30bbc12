"""The parity commands as a CI job runs them: a real process, its output and exit code."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable

import pytest

from tests.conftest import GitRepo
from tests.parity.world import SPEC, World, make_world


def pw(world: World, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "portwright", "-C", str(world.repo), *args],
                          capture_output=True, text=True, check=False)


@pytest.fixture
def world(make_repo: Callable[[str], GitRepo]) -> World:
    return make_world(make_repo)


def test_rows_json_and_filters(world: World) -> None:
    done = pw(world, "rows", "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert [(r["id"], r["status"], r["line"]) for r in rows] == [("attn-fp8", "partial", 7),
                                                                 ("kv-cache", "missing", 8)]
    assert rows[0]["spec"] == "specs/attn-fp8.md"
    missing = json.loads(pw(world, "rows", "--json", "--status", "missing").stdout)
    assert [r["id"] for r in missing] == ["kv-cache"]
    table = pw(world, "rows", "--open")
    assert "attn-fp8" in table.stdout
    assert "2 row(s)" in table.stdout


def test_rows_bad_status_in_matrix_exits_2(world: World) -> None:
    path = world.repo / "docs/parity/models.md"
    path.write_text(path.read_text().replace("| missing |", "| later |"))
    done = pw(world, "rows")
    assert done.returncode == 2
    stderr = done.stderr.replace("\n", "")  # the console wraps long lines
    assert "docs/parity/models.md:8" in stderr
    assert "unknown status 'later'" in stderr


def test_anchors_check_and_remap(world: World) -> None:
    ledger = world.repo / "parity-ledger.md"
    ledger.write_text(ledger.read_text() + "| src/b.py | 0123abc | adaptation | | as in "
                      "ours/helper.py:3 |\n")
    assert pw(world, "anchors", "check", "--at", world.pin).returncode == 1  # no such commit
    ledger.write_text(ledger.read_text().replace("0123abc", world.pin[:12]))
    assert pw(world, "anchors", "check").returncode == 0
    text = world.upstream.path.joinpath("attn/fp8.py").read_text()
    new = world.upstream.commit("grow", {"attn/fp8.py": "import math\n\n" + text,
                                         "requirements.txt": "torch==2.5.0\n"})
    stale = pw(world, "anchors", "check", "--at", new)
    assert stale.returncode == 1
    remap = pw(world, "anchors", "remap", "--to", new, "--json", "--move-pin")
    assert remap.returncode == 1  # the torch line changed: reported, not guessed
    report = json.loads(remap.stdout)
    assert [m["new"] for m in report["moved"]][:2] == [
        'attn/fp8.py:6-8 "def fp8_attention(q, k, v):"', "attn/fp8.py:11-12"]
    assert report["unplaced"] == [{
        "where": "specs/attn-fp8.md:33", "anchor": 'requirements.txt:2 "torch==2.4.0"',
        "reason": "the cited lines changed by " + new[:12] + "; re-read upstream"}]
    # all or nothing: with one anchor unplaced, no record is rewritten and the pin stays
    assert report["written"] is False
    assert report["pin_moved"] is False
    spec_path = world.repo / "specs/attn-fp8.md"
    original = SPEC.format(pin=world.pin)
    assert spec_path.read_text() == original
    pin_text = f"# Upstream sync\n\nPinned commit: `{world.pin}`\n"
    assert (world.repo / "upstream-sync.md").read_text() == pin_text
    # once the anchor nobody could place is dealt with, the remap goes through
    cited = '- `requirements.txt:2 "torch==2.4.0"`\n'
    spec_path.write_text(original.replace(cited, ""))
    remap = pw(world, "anchors", "remap", "--to", new, "--json", "--move-pin")
    assert remap.returncode == 0, remap.stdout + remap.stderr
    report = json.loads(remap.stdout)
    assert report["written"] is True
    assert report["pin_moved"] is True
    assert spec_path.read_text() == original.replace(cited, "").replace(
        "attn/fp8.py:4-6", "attn/fp8.py:6-8").replace(
        "attn/fp8.py:9-10", "attn/fp8.py:11-12").replace("attn/fp8.py:5 ", "attn/fp8.py:7 "
                                                          ).replace(world.pin, new)
    pin_file = (world.repo / "upstream-sync.md").read_text()
    assert pin_file == f"# Upstream sync\n\nPinned commit: `{new}`\n"


def test_ledger_check(world: World) -> None:
    ok = pw(world, "ledger", "check")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    path = world.repo / "parity-ledger.md"
    path.write_text(path.read_text() + "| src/x.py | `attn/fp8.py:5-6 \"def nope\"` | port | | |\n"
                    "| src/y.py | `attn/fp8.py:5` | divergence | | |\n")
    bad = pw(world, "ledger", "check", "--json")
    assert bad.returncode == 1
    messages = json.loads(bad.stdout)["messages"]
    assert messages[0] == ("parity-ledger.md:7: the divergence of src/y.py has no cost; say what "
                           "it costs (speed, memory, behaviour) in the cost column")
    assert messages[1].startswith("parity-ledger.md:6: anchor `attn/fp8.py:5-6 \"def nope\"`: "
                                  "the excerpt 'def nope' is not in the cited lines")
