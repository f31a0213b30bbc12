"""The build cache's mount: a folder of its own beside the worktree, or refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from portwright.errors import SandboxError
from portwright.sandboxes.mounts import Mount, cache_mount


def test_a_cache_folder_beside_the_worktree_is_mounted_as_asked(tmp_path: Path) -> None:
    worktree, cache, keys = tmp_path / "tree", tmp_path / "cache", tmp_path / "keys"
    for folder in (worktree, cache, keys):
        folder.mkdir()
    assert cache_mount(cache, worktree, read_only=True, key_dir=keys) == Mount(
        cache.resolve(), read_only=True)
    assert cache_mount(cache, worktree, read_only=False, key_dir=keys) == Mount(
        cache.resolve(), read_only=False)


@pytest.mark.parametrize("where", ["in-tree", "holds-tree", "link", "missing", "keys", "home",
                                   "root"])
def test_a_cache_that_would_show_more_is_refused(where: str, tmp_path: Path) -> None:
    worktree, keys = tmp_path / "work" / "tree", tmp_path / "keys"
    worktree.mkdir(parents=True)
    keys.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    cache = {"in-tree": worktree / "build-cache", "holds-tree": tmp_path / "work",
             "link": tmp_path / "link", "missing": tmp_path / "nothing", "keys": keys,
             "home": Path.home(), "root": Path("/")}[where]
    if where == "in-tree":
        cache.mkdir()
    if where == "link":
        cache.symlink_to(elsewhere)
    with pytest.raises(SandboxError, match="refusing to mount the build cache"):
        cache_mount(cache, worktree, read_only=False, key_dir=keys)
