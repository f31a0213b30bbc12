from __future__ import annotations

from collections.abc import Callable

import git
import pytest

from portwright.evidence.anchors import (
    Anchor,
    AnchorError,
    find_anchors,
    parse_anchor,
    remap_anchor,
    resolve_anchor,
)
from tests.conftest import GitRepo
from tests.parity.world import UPSTREAM_FILES

MakeRepo = Callable[[str], GitRepo]


@pytest.fixture
def upstream(make_repo: MakeRepo) -> tuple[GitRepo, str]:
    repo = make_repo("upstream")
    return repo, repo.commit("initial", UPSTREAM_FILES)


def test_parse_forms() -> None:
    assert parse_anchor("a/b.py:3") == Anchor(path="a/b.py", start=3, end=3)
    assert parse_anchor("`a/b.py:3-9@abcdef1`") == Anchor(path="a/b.py", start=3, end=9,
                                                         sha="abcdef1")
    anchor = parse_anchor('src/x.cc:10-12 "say \\"hi\\""')
    assert anchor.excerpt == 'say "hi"'
    assert parse_anchor(anchor.render()) == anchor
    with pytest.raises(AnchorError):
        parse_anchor("not an anchor")
    with pytest.raises(AnchorError):
        parse_anchor("a.py:9-3")


def test_find_anchors_skips_urls_times_and_versions() -> None:
    text = ("intro\nsee `attn/fp8.py:4-6@0123abc \"def f\"` and https://h.org/a.py:80\n"
            "at 12:30, v1.2:3, Makefile:3\nREADME.md:2\n")
    found = [(a.render(), line) for a, line in find_anchors(text)]
    assert found == [('attn/fp8.py:4-6@0123abc "def f"', 2), ("README.md:2", 4)]


def test_resolve_good_anchor(upstream: tuple[GitRepo, str]) -> None:
    repo, pin = upstream
    resolved = resolve_anchor(git.Repo(repo.path),
                              parse_anchor('attn/fp8.py:4-5 "def fp8_attention(q, k, v):"'), pin)
    assert resolved.commit == pin
    assert resolved.text.startswith("def fp8_attention")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('attn/fp8.py:3-4 "scale = q.shape"', "is not in the cited lines (it is at line 5 now)"),
        ('attn/fp8.py:5 "scale = q.shape[-1] ** -0.25"', "is not in the cited lines"),
        ("attn/missing.py:1", "does not exist upstream"),
        ("attn/fp8.py:10-11", "out of range (attn/fp8.py has 10 lines"),
        ("attn/fp8.py:1@deadbee", "revision 'deadbee' does not exist upstream"),
    ],
    ids=["off-by-one", "drifted-excerpt", "missing-file", "out-of-range", "unknown-sha"],
)
def test_resolve_failures_name_anchor_and_citation(
    upstream: tuple[GitRepo, str], text: str, message: str
) -> None:
    repo, pin = upstream
    anchor = parse_anchor(text)
    with pytest.raises(AnchorError) as info:
        resolve_anchor(git.Repo(repo.path), anchor, pin, cited_in="specs/a.md", cited_line=7)
    err = info.value
    assert message in err.message
    assert f"`{anchor.render()}`" in err.message
    assert (err.file, err.line) == ("specs/a.md", 7)


def test_remap_follows_moved_and_renamed_code(upstream: tuple[GitRepo, str]) -> None:
    repo, pin = upstream
    text = UPSTREAM_FILES["attn/fp8.py"]
    new = repo.commit("move and grow", {"attention/fp8.py": "import math\n\n" + text},
                      remove=["attn/fp8.py"])
    up = git.Repo(repo.path)
    moved = remap_anchor(up, parse_anchor('attn/fp8.py:4-6 "def fp8_attention"'), pin, new)
    assert moved.new is not None
    assert moved.new.render() == 'attention/fp8.py:6-8 "def fp8_attention"'
    resolve_anchor(up, moved.new, new)
    pinned = remap_anchor(up, parse_anchor(f"attn/fp8.py:9@{pin[:10]}"), pin, new)
    assert pinned.new is not None
    assert pinned.new.sha == new[:10]
    assert pinned.new.start == 11


def test_remap_reports_what_it_cannot_place(upstream: tuple[GitRepo, str]) -> None:
    repo, pin = upstream
    new = repo.commit("rewrite", {"attn/fp8.py": "def fp8_attention(q, k, v):\n    return q\n"},
                      remove=["kv/cache.py"])
    up = git.Repo(repo.path)
    changed = remap_anchor(up, parse_anchor("attn/fp8.py:5-6"), pin, new)
    assert changed.new is None
    assert "changed" in changed.reason
    deleted = remap_anchor(up, parse_anchor("kv/cache.py:1"), pin, new)
    assert deleted.new is None
    assert "does not exist" in deleted.reason


def test_prefetch_reads_many_files_at_once(upstream: tuple[GitRepo, str]) -> None:
    from portwright.evidence.anchors import BlobReader

    repo, pin = upstream
    up = git.Repo(repo.path)
    batch = BlobReader(up)
    batch.prefetch([(pin, "attn/fp8.py"), (pin, "kv/cache.py"), (pin, "nope.py"),
                    (pin, "attn"), (pin[:10], "requirements.txt")])
    single = BlobReader(up)
    for path in ("attn/fp8.py", "kv/cache.py", "nope.py", "attn", "requirements.txt"):
        assert batch.lines(pin, path) == single.lines(pin, path)
    assert batch.lines(pin, "kv/cache.py") == UPSTREAM_FILES["kv/cache.py"].splitlines()
