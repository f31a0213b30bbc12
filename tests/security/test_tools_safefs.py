"""safefs: files under an untrusted root are opened fd-relative, never through a link, capped,
and only when they are regular files (or directories, to list)."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from portwright import safefs
from portwright.errors import PortwrightError, UnsafePath


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A root with a file, a folder, and links out of it; ``outside`` holds a secret."""
    root = tmp_path / "root"
    (root / "src").mkdir(parents=True)
    (root / "src/mod.py").write_bytes(b"x = 1\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside/key").write_bytes(b"SECRET")
    (root / "out").symlink_to(tmp_path / "outside")            # a folder link out
    (root / "key").symlink_to(tmp_path / "outside/key")        # a file link out
    (root / "inner").symlink_to("src")                         # a link that stays inside
    (root / "a").symlink_to("b")                               # a loop
    (root / "b").symlink_to("a")
    (root / "self").symlink_to("self")                         # a self-loop
    return root


def outside_of(root: Path) -> dict[str, bytes]:
    outside = root.parent / "outside"
    return {p.name: p.read_bytes() for p in outside.iterdir()}


@pytest.mark.parametrize("rel", ["../outside/key", "src/../../outside/key", "/etc/passwd",
                                 "", "src//mod.py", "./src/mod.py", "src/mod.py/",
                                 "src/\0mod.py", ".."])
def test_malformed_paths_are_refused_before_any_open(tree: Path, rel: str) -> None:
    for call in (lambda: safefs.read_file(tree, rel, cap=100),
                 lambda: safefs.write_file(tree, rel, b"pwned"),
                 lambda: safefs.unlink(tree, rel),
                 lambda: safefs.stat(tree, rel),
                 lambda: safefs.is_file(tree, rel),
                 lambda: safefs.listdir(tree, rel)):
        with pytest.raises(UnsafePath):
            call()
    assert outside_of(tree) == {"key": b"SECRET"}


def test_unsafe_path_is_a_portwright_error() -> None:
    error = UnsafePath("a/b", "goes through a, which is a symbolic link")
    assert isinstance(error, PortwrightError)
    assert str(error) == "'a/b' goes through a, which is a symbolic link"


def test_read_is_capped_not_cut(tree: Path) -> None:
    assert safefs.read_file(tree, "src/mod.py", cap=6) == b"x = 1\n"
    with pytest.raises(UnsafePath, match="more than the 5"):
        safefs.read_file(tree, "src/mod.py", cap=5)
    with pytest.raises(FileNotFoundError):
        safefs.read_file(tree, "src/missing.py", cap=100)
    with pytest.raises(UnsafePath, match="is a directory"):
        safefs.read_file(tree, "src", cap=100)


@pytest.mark.parametrize(("rel", "why"), [
    ("key", "is a symbolic link"),
    ("out/key", "goes through out, which is a symbolic link"),
    ("inner/mod.py", "goes through inner, which is a symbolic link"),
    ("a", "is a symbolic link"),
    ("a/x", "goes through a, which is a symbolic link"),
    ("self", "is a symbolic link"),
    ("self/x", "goes through self, which is a symbolic link"),
    ("src/mod.py/x", "goes through src/mod.py, which is a regular file"),
])
def test_no_link_is_followed_on_read(tree: Path, rel: str, why: str) -> None:
    with pytest.raises(UnsafePath, match=why):
        safefs.read_file(tree, rel, cap=100)


def test_non_regular_files_are_refused(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    os.mkfifo(tree / "fifo")   # opening it to read would block a plain open()
    with pytest.raises(UnsafePath, match="is a fifo"):
        safefs.read_file(tree, "fifo", cap=100)
    with pytest.raises(UnsafePath, match="not a regular file"):
        safefs.write_file(tree, "fifo", b"x")
    monkeypatch.chdir(tree)    # a socket path must be short
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind("sock")
        with pytest.raises(UnsafePath, match="is a socket"):
            safefs.read_file(tree, "sock", cap=100)
    try:
        os.mknod(tree / "null", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    except PermissionError:
        return  # devices need CAP_MKNOD; the fifo and socket cover the rest
    with pytest.raises(UnsafePath, match="is a device"):
        safefs.read_file(tree, "null", cap=100)
    assert not safefs.is_file(tree, "null")


def test_write_replaces_whole_files_and_makes_parents(tree: Path) -> None:
    (tree / "src/mod.py").chmod(0o755)
    safefs.write_file(tree, "src/mod.py", b"x = 2\n")
    assert (tree / "src/mod.py").read_bytes() == b"x = 2\n"
    assert stat.S_IMODE((tree / "src/mod.py").stat().st_mode) == 0o755  # mode kept
    safefs.write_file(tree, "new/deep/file.txt", b"hi")
    assert (tree / "new/deep/file.txt").read_bytes() == b"hi"
    with pytest.raises(FileNotFoundError):
        safefs.write_file(tree, "none/file.txt", b"hi", make_parents=False)
    assert not (tree / "none").exists()
    assert not [p for p in tree.rglob("*.tmp")]


def test_write_never_goes_through_a_link(tree: Path) -> None:
    hard = tree / "src/hard"
    os.link(tree / "src/mod.py", hard)    # another name of the same file
    safefs.write_file(tree, "src/hard", b"changed")
    assert (tree / "src/mod.py").read_bytes() == b"x = 1\n"
    for rel, why in [("key", "is a symbolic link"), ("out/new.txt", "goes through out"),
                     ("out/key", "goes through out"), ("out/sub/new.txt", "goes through out"),
                     ("a/x", "goes through a"), ("self", "is a symbolic link"),
                     ("src", "is a directory")]:
        with pytest.raises(UnsafePath, match=why):
            safefs.write_file(tree, rel, b"pwned")
    assert outside_of(tree) == {"key": b"SECRET"}
    assert (tree / "key").is_symlink()
    assert not [p for p in tree.rglob("*.tmp")]


def test_unlink_removes_files_and_links_never_their_targets(tree: Path) -> None:
    safefs.unlink(tree, "key")
    assert not (tree / "key").is_symlink()
    assert outside_of(tree) == {"key": b"SECRET"}
    safefs.unlink(tree, "src/mod.py")
    assert not (tree / "src/mod.py").exists()
    safefs.unlink(tree, "src/mod.py")   # missing is fine by default
    with pytest.raises(FileNotFoundError):
        safefs.unlink(tree, "src/mod.py", missing_ok=False)
    with pytest.raises(UnsafePath, match="is a directory"):
        safefs.unlink(tree, "src")
    with pytest.raises(UnsafePath, match="goes through out"):
        safefs.unlink(tree, "out/key")
    assert outside_of(tree) == {"key": b"SECRET"}


def test_stat_and_is_file_do_not_follow(tree: Path) -> None:
    key = safefs.stat(tree, "key")
    assert key is not None
    assert stat.S_ISLNK(key.st_mode)
    assert safefs.stat(tree, "missing") is None
    assert safefs.stat(tree, "missing/deeper") is None
    with pytest.raises(UnsafePath, match="goes through out"):
        safefs.stat(tree, "out/key")
    assert safefs.is_file(tree, "src/mod.py")
    assert not safefs.is_file(tree, "key")
    assert not safefs.is_file(tree, "out/key")
    assert not safefs.is_file(tree, "src")
    assert not safefs.is_file(tree, "a")


def test_listings_do_not_descend_through_links(tree: Path) -> None:
    assert safefs.listdir(tree, ".") == ["a", "b", "inner", "key", "out", "self", "src"]
    assert safefs.listdir(tree, "src") == ["mod.py"]
    kinds = {name: stat.S_IFMT(info.st_mode) for name, info in safefs.entries(tree, ".")}
    assert kinds["out"] == stat.S_IFLNK
    assert kinds["src"] == stat.S_IFDIR
    for rel in ("out", "inner", "a", "self", "key"):
        with pytest.raises(UnsafePath, match="is a symbolic link, not a directory"):
            safefs.listdir(tree, rel)
    with pytest.raises(UnsafePath, match="is a regular file, not a directory"):
        safefs.listdir(tree, "src/mod.py")
    with pytest.raises(FileNotFoundError):
        safefs.listdir(tree, "missing")
