"""One git process for many reads: ``show_many`` answers as ``show`` does, ``rev_parse_many``
as ``rev_parse`` does (its error included)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from portwright.errors import RevisionError
from portwright.vcs import plumbing
from tests.conftest import GitRepo


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    repo = GitRepo(tmp_path / "repo")
    repo.commit("first", {"a.txt": "a\n", "dir/b c.txt": "b\n", "dir/d/e.txt": "e\n"})
    (repo.path / "link").symlink_to("a.txt")
    repo.commit("second", {"a.txt": "a2\n"})
    return repo


def test_show_many_reads_as_show_does(repo: GitRepo) -> None:
    paths = ["a.txt", "dir/b c.txt", "missing.txt", "dir", "link", "a.txt", "new\nline"]
    for rev in ("HEAD", "HEAD~1", repo.git("rev-parse", "HEAD")):
        got = plumbing.show_many(repo.path, rev, paths)
        assert got == {p: plumbing.show(repo.path, rev, p) for p in paths}
    assert plumbing.show_many(repo.path, "HEAD", ["a.txt"]) == {"a.txt": b"a2\n"}
    assert plumbing.show_many(repo.path, "HEAD", []) == {}


def test_show_many_of_an_unknown_revision_is_all_absent(repo: GitRepo) -> None:
    assert plumbing.show_many(repo.path, "nope", ["a.txt"]) == {"a.txt": None}


def _answer(parse: Callable[[], list[str]]) -> list[str] | str:
    try:
        return parse()
    except RevisionError as exc:
        return exc.message


@pytest.mark.parametrize("revs", [
    ["HEAD", "HEAD~1", "main"], [], ["HEAD~1..HEAD", "HEAD"], ["HEAD^@", "HEAD"],
    ["HEAD^!"], ["^HEAD"], ["nope", "HEAD"], ["HEAD", "-x"], ["HEAD", ""],
    ["HEAD", "HEAD^{tree}"], ["HEAD:a.txt"]])
def test_rev_parse_many_answers_as_rev_parse(repo: GitRepo, revs: list[str]) -> None:
    expected = _answer(lambda: [plumbing.rev_parse(repo.path, rev) for rev in revs])
    assert _answer(lambda: plumbing.rev_parse_many(repo.path, revs)) == expected
    if revs and revs[0] == "HEAD" and len(revs) == 3:
        assert expected == [repo.git("rev-parse", "HEAD"), repo.git("rev-parse", "HEAD~1"),
                            repo.git("rev-parse", "HEAD")]


def test_head_commit_and_the_snapshot_after_it(repo: GitRepo) -> None:
    head = plumbing.head_commit(repo.path)
    assert head == repo.git("rev-parse", "HEAD")
    assert plumbing.snapshot(repo.path) == (head, repo.git("rev-parse", "HEAD^{tree}"), False)
    repo.write("a.txt", "changed\n")
    sha, tree, dirty = plumbing.snapshot(repo.path)
    assert (sha, dirty) == (head, True)
    assert tree != repo.git("rev-parse", "HEAD^{tree}")
    repo.commit("third")
    assert plumbing.snapshot(repo.path) == (repo.git("rev-parse", "HEAD"), tree, False)


def test_head_commit_of_a_repository_without_commits(tmp_path: Path) -> None:
    empty = GitRepo(tmp_path / "empty")
    with pytest.raises(RevisionError, match="no commits yet"):
        plumbing.head_commit(empty.path)


def test_a_full_sha_found_once_is_answered_again_but_a_ref_name_is_asked_each_time(
        repo: GitRepo, tmp_path: Path) -> None:
    first = plumbing.rev_parse(repo.path, "HEAD")
    assert plumbing.known_commit(repo.path, first)
    assert not plumbing.known_commit(repo.path, "HEAD")  # a ref moves: never remembered
    second = repo.commit("third", {"a.txt": "a3\n"})
    assert plumbing.rev_parse(repo.path, "HEAD") == second != first
    assert plumbing.rev_parse_many(repo.path, [first, "HEAD"]) == [first, second]
    assert plumbing.rev_parse(repo.path, first) == first
    # what is remembered is a commit of this repository, not of any other
    other = GitRepo(tmp_path / "other")
    other.commit("elsewhere", {"x.txt": "x\n"})
    assert not plumbing.known_commit(other.path, first)
    assert not plumbing.is_commit(other.path, first)
    with pytest.raises(RevisionError, match="does not exist"):
        plumbing.rev_parse(other.path, first)
    # a tree's or a blob's sha is not a commit, however often it is asked
    tree = repo.git("rev-parse", "HEAD^{tree}")
    for _ in range(2):
        assert not plumbing.is_commit(repo.path, tree)
        with pytest.raises(RevisionError, match="names a tree"):
            plumbing.rev_parse(repo.path, tree)
    # a commit git made here (head_commit) is one without asking again
    made = repo.commit("fourth", {"a.txt": "a4\n"})
    assert plumbing.head_commit(repo.path) == made
    assert plumbing.known_commit(repo.path, made)
    assert plumbing.is_commit(repo.path, made)


def test_the_listing_of_a_commit_is_kept_and_that_of_a_ref_is_not(repo: GitRepo) -> None:
    sha = repo.head()
    listed = plumbing.tree_entries(repo.path, sha)
    assert {p for _, _, p in listed} == {"a.txt", "dir/b c.txt", "dir/d/e.txt", "link"}
    listed.clear()  # the caller's own list: what is kept is not changed by it
    again = plumbing.tree_entries(repo.path, sha)
    assert again == plumbing.tree_entries(repo.path, "HEAD")
    assert len(again) == 4
    repo.commit("third", {"new.txt": "n\n"})
    assert "new.txt" in {p for _, _, p in plumbing.tree_entries(repo.path, "HEAD")}
    assert "new.txt" not in {p for _, _, p in plumbing.tree_entries(repo.path, sha)}


def test_a_tag_that_names_a_commit_is_not_remembered_as_one(repo: GitRepo) -> None:
    repo.git("tag", "-a", "-m", "v1", "v1")
    tag, commit = repo.git("rev-parse", "v1"), repo.head()
    assert tag != commit
    assert plumbing.is_commit(repo.path, tag)  # what it points at is one
    assert not plumbing.known_commit(repo.path, tag)
    for _ in range(2):  # its commit, each time
        assert plumbing.rev_parse(repo.path, tag) == commit
        assert plumbing.rev_parse_many(repo.path, [tag]) == [commit]
