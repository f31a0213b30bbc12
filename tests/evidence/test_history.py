"""HistoryIndex answers exactly like ``git log -S``, from a cache, incrementally."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from portwright.errors import RepositoryError, UsageError
from portwright.evidence.history import HistoryIndex, pickaxe

NEEDLES = ["foo", "foo_bar", "bar", "moved_fn", "zed_qux", "alpha", "o", "42", "nothing_here",
           "Beta", "beta", "gamma delta", "x = 1"]


def _history(make_repo: Any) -> Any:
    repo = make_repo("up")
    repo.commit("one", {"a.py": "def foo_bar():\n    return 42\n", "b.txt": "alpha foo\n"})
    repo.commit("substring only", {"b.txt": "alpha foo\nfoobar foofoo\n"})
    repo.commit("rename keeps counts", remove=["b.txt"],
                files={"c.txt": "alpha foo\nfoobar foofoo\n"})
    repo.commit("move between files", {"a.py": "def foo_bar():\n    pass\n",
                                        "d.py": "def moved_fn():\n    return 42\n"})
    repo.path.joinpath("bin.dat").write_bytes(b"\x00\x01zed_qux\n")
    repo.commit("binary")
    repo.commit("same count, different line", {"a.py": "def foo_bar():  # foo_bar\n    pass\n"})
    repo.git("checkout", "-q", "-b", "side")
    repo.commit("side branch", {"e.py": "Beta = 'gamma delta'\nx = 1\n"})
    repo.git("checkout", "-q", "main")
    repo.commit("main moves on", {"f.py": "beta = 2\n"})
    repo.git("merge", "-q", "--no-ff", "-m", "merge side", "side")
    repo.commit("remove", remove=["d.py"])
    return repo


@pytest.mark.parametrize("needle", NEEDLES)
def test_same_answers_as_git_log_s(make_repo: Any, needle: str) -> None:
    repo = _history(make_repo)
    index = HistoryIndex(repo.path)
    assert index.update() == 10
    assert index.search(needle) == pickaxe(repo.path, needle)


def test_known_answers(make_repo: Any) -> None:
    repo = _history(make_repo)
    repo.git("config", "diff.noprefix", "true")
    repo.git("config", "log.showSignature", "false")
    index = HistoryIndex(repo.path)
    index.update()
    def subject(sha: str) -> str:
        return repo.git("log", "-1", "--format=%s", sha)

    assert [subject(s) for s in index.search("moved_fn")] == ["remove", "move between files"]
    # a rename keeps the count: not listed; binary content is searched like git does
    assert [subject(s) for s in index.search("foobar")] == ["substring only"]
    assert [subject(s) for s in index.search("zed_qux")] == ["binary"]
    changes = index.changes("moved_fn")
    assert [c.delta for c in changes] == [-1, 1]
    assert len(index.token_changes(["moved_fn"])) == 2
    assert index.token_changes(["moved_fn"], exclude=lambda path: path == "d.py") == []
    # two spellings summed per file pair; the paths survive diff.noprefix
    assert [subject(c.sha) for c in index.token_changes(["Beta", "beta"])] == [
        "main moves on", "side branch"]
    # exact tokens do not match inside longer ones
    assert [subject(c.sha) for c in index.changes("foo", exact_token=True)] == ["one"]


def test_incremental_update_and_cache(make_repo: Any, tmp_path: Path) -> None:
    repo = _history(make_repo)
    cache = tmp_path / "cache"
    first = HistoryIndex.open(repo.path, cache_dir=cache)
    assert len(first) == 10
    assert len(list(cache.iterdir())) == 1
    repo.commit("later", {"g.py": "foo_bar = 3\n"})
    second = HistoryIndex(repo.path, cache_dir=cache)
    second._load()
    assert len(second) == 10
    assert second.update() == 1
    for needle in NEEDLES:
        assert second.search(needle) == pickaxe(repo.path, needle)
    second.save()
    third = HistoryIndex.open(repo.path, cache_dir=cache)
    assert third.update() == 0
    assert third.search("foo_bar") == pickaxe(repo.path, "foo_bar")


def test_rewritten_history_rebuilds(make_repo: Any, tmp_path: Path) -> None:
    repo = _history(make_repo)
    cache = tmp_path / "cache"
    HistoryIndex.open(repo.path, cache_dir=cache)
    repo.git("reset", "-q", "--hard", "HEAD~1")
    repo.commit("other", {"h.py": "moved_fn()\n"})
    index = HistoryIndex.open(repo.path, cache_dir=cache)
    assert len(index) == 10
    assert index.search("moved_fn") == pickaxe(repo.path, "moved_fn")


def test_bad_input(make_repo: Any, tmp_path: Path) -> None:
    with pytest.raises(RepositoryError, match="not a git repository"):
        HistoryIndex(tmp_path)
    repo = _history(make_repo)
    index = HistoryIndex(repo.path)
    index.update()
    with pytest.raises(UsageError, match="empty"):
        index.search("")


def test_a_quoted_path_is_read_as_the_file_name(make_repo: Any) -> None:
    """git quotes a path with bytes outside ASCII (``"b/caf\\303\\251.py"``); the index keeps
    the file's real name, so a path filter sees it."""
    repo = make_repo("up")
    sha = repo.commit("one", {"café.py": "unique_token = 1\n", "plain.py": "other = 2\n"})
    index = HistoryIndex(repo.path)
    index.update()
    assert [c.sha for c in index.token_changes(["unique_token"])] == [sha]
    assert index.token_changes(["unique_token"], exclude=lambda path: path == "café.py") == []


def test_an_added_line_that_starts_with_two_pluses_counts(make_repo: Any) -> None:
    """``git show`` writes an added ``++i;`` as ``+++i;``: an added line, not a file header."""
    repo = make_repo("up")
    repo.commit("one", {"a.c": "int i;\n"})
    sha = repo.commit("two", {"a.c": "int i;\n++i;\n"})
    gone = repo.commit("three", {"a.c": "int i;\n"})
    index = HistoryIndex(repo.path)
    index.update()
    assert [(c.sha, c.delta) for c in index.changes("++i")] == [(gone, -1), (sha, 1)]
