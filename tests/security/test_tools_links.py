"""The agent file tools and links that sandboxed code leaves in the worktree: loops are a
ToolError (never a crash), and a link to a file or folder outside is never read or written
through."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from portwright.agents.tools import Toolbox, Workspace
from portwright.errors import ConfinementError, ToolError

SECRET = "EVIDENCE-KEY-0f9e"
FILE_TOOLS = ["read_file", "write_file", "edit_file", "list_dir", "search", "git_history"]


@pytest.fixture
def worktree(make_repo: Any, tmp_path: Path) -> Path:
    """A worktree holding link loops and links out; ``outside/evidence.key`` stands for the
    evidence key (it is in tmp_path, outside the worktree)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "evidence.key").write_text(f"{SECRET}\n")
    repo = make_repo("downstream")
    root: Path = repo.path
    (root / "tracked-key").symlink_to(outside / "evidence.key")   # committed, too
    repo.commit("start", {"src/mod.py": "x = 1\n", "notes.txt": "alpha\n"})
    (root / "a").symlink_to("b")
    (root / "b").symlink_to("a")
    (root / "self").symlink_to("self")
    (root / "src/loop").symlink_to("../src/loop")
    (root / "key").symlink_to(outside / "evidence.key")
    (root / "out").symlink_to(outside)
    return root


def tools(root: Path) -> Toolbox:
    return Toolbox(Workspace(worktree=root), FILE_TOOLS)


def snapshot(folder: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(folder)): p.read_bytes() if p.is_file() else None
            for p in sorted(folder.rglob("*")) if ".git" not in p.parts}


LOOPS = ["a", "b", "self", "src/loop"]


@pytest.mark.parametrize("rel", [*LOOPS, *(f"{r}/x.py" for r in LOOPS), "a/b/a"])
@pytest.mark.parametrize("tool", ["read_file", "write_file", "edit_file", "list_dir"])
def test_symlink_loops_are_tool_errors(worktree: Path, tool: str, rel: str) -> None:
    args = {"read_file": {"path": rel}, "list_dir": {"path": rel},
            "write_file": {"path": rel, "content": "x"},
            "edit_file": {"path": rel, "search": "x", "replace": "y"}}[tool]
    before = snapshot(worktree)
    with pytest.raises(ToolError):
        tools(worktree).call(tool, json.dumps(args))
    assert snapshot(worktree) == before


@pytest.mark.parametrize("rel", LOOPS)
def test_searches_pass_over_loops(worktree: Path, rel: str) -> None:
    box = tools(worktree)
    try:
        answer = box.call("search", json.dumps({"pattern": "x", "path": rel}))
    except ToolError:
        answer = "refused"
    assert SECRET not in answer
    assert box.call("search", json.dumps({"pattern": "x = 1"})) == "src/mod.py:1:x = 1"
    box.call("git_history", json.dumps({"term": "x", "path": rel}))


def test_listing_shows_links_without_following_them(worktree: Path) -> None:
    listed = tools(worktree).call("list_dir", json.dumps({"path": "."}))
    assert listed.splitlines() == ["a@", "b@", "key@", "notes.txt", "out@", "self@", "src/",
                                   "tracked-key@"]


@pytest.mark.parametrize("rel", ["key", "tracked-key", "out/evidence.key"])
def test_a_link_to_a_file_outside_is_never_read_or_written(worktree: Path, rel: str) -> None:
    key = worktree.parent / "outside/evidence.key"
    box = tools(worktree)
    with pytest.raises(ConfinementError):
        box.call("read_file", json.dumps({"path": rel}))
    with pytest.raises(ConfinementError):
        box.call("write_file", json.dumps({"path": rel, "content": "overwritten\n"}))
    with pytest.raises(ConfinementError):
        box.call("edit_file", json.dumps({"path": rel, "search": SECRET, "replace": "gone"}))
    assert key.read_text() == f"{SECRET}\n"
    assert (worktree / rel.split("/")[0]).readlink() == (
        key if rel != "out/evidence.key" else key.parent)
    for args in ({"pattern": SECRET}, {"pattern": SECRET, "path": rel},
                 {"pattern": "EVIDENCE", "fixed_strings": True}):
        try:
            answer = box.call("search", json.dumps(args))
        except ToolError as exc:
            answer = str(exc)
        assert SECRET not in answer
    with pytest.raises(ConfinementError):
        box.call("list_dir", json.dumps({"path": "out"}))
