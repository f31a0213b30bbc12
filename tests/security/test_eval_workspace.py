"""An eval workspace holds no object of the port commit and shares no file with the task's
clones: its repositories are filled by fetches of the revisions they need, never by a
local clone (whose object files are hard links, and whose alternates are the source's).

The forks here share objects with the downstream, as real ones do: an upstream that has
the downstream as a second remote (the port fetched, a branch at it), and an upstream that
borrows its objects from the downstream's store (``objects/info/alternates``, the way a
forge keeps a fork network); each also packed (``git gc``)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from portwright.errors import UsageError
from portwright.eval.tasks import load_suite
from portwright.eval.workspace import Workspace, prepare
from tests.eval.conftest import Pair, build_pair, task_toml


def git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=check)


def second_remote(pair: Pair) -> None:
    """The upstream clone has the downstream as a remote, the port fetched and a branch of
    its own at it."""
    up = pair.upstream.path
    git(up, "remote", "add", "downstream", str(pair.downstream.path))
    git(up, "fetch", "-q", "downstream")
    git(up, "branch", "from-downstream", pair.port)


def shared_store(pair: Pair) -> None:
    """The upstream clone is a fork that keeps no objects of its own: they are the
    downstream's (which fetched the upstream's), read through ``objects/info/alternates``."""
    down, up = pair.downstream.path, pair.upstream.path
    git(down, "fetch", "-q", str(up), "main:refs/remotes/upstream/main")
    fork = up.with_name("calc-js.fork")
    git(up.parent, "clone", "-q", "--shared", "--no-checkout", str(down), fork.name)
    git(fork, "fetch", "-q", "--update-head-ok", str(up), "+main:refs/heads/main")
    git(fork, "symbolic-ref", "HEAD", "refs/heads/main")
    git(fork, "branch", "-q", "from-downstream", pair.port)
    subprocess.run(["rm", "-rf", str(up)], check=True)
    fork.rename(up)
    assert (up / ".git" / "objects" / "info" / "alternates").is_file()


FORKS: dict[str, Callable[[Pair], None]] = {"second-remote": second_remote,
                                            "shared-store": shared_store}


def make(tmp_path: Path, fork: str, packed: bool, *, seeds: bool = False
         ) -> tuple[Pair, Workspace]:
    pair = build_pair(tmp_path / "repos")
    FORKS[fork](pair)
    if packed:
        for repo in (pair.upstream.path, pair.downstream.path):
            git(repo, "gc", "-q", "--prune=now")
    tasks = tmp_path / "tasks" / "calc.toml"
    tasks.parent.mkdir(parents=True)
    tasks.write_text(task_toml(pair))
    task = load_suite(tasks).tasks[0]
    return pair, prepare(task, pair.repos, tmp_path / "work",
                         seeds=tmp_path / "seeds" if seeds else None)


def port_only(pair: Pair) -> list[str]:
    """Every object reachable from the port and from neither the parent nor the upstream
    change: the port commit, its trees, its new blobs."""
    listed = git(pair.downstream.path, "rev-list", "--objects", pair.port, f"^{pair.parent}"
                 ).stdout.split("\n")
    ours = {line.split()[0] for line in listed if line}
    upstream = git(pair.upstream.path, "rev-list", "--objects", pair.change).stdout.split("\n")
    return sorted(ours - {line.split()[0] for line in upstream if line} | {pair.port})


def repositories(where: Path) -> list[Path]:
    """Every git folder under ``where``."""
    return sorted(p for p in where.rglob("*") if p.is_dir() and (p / "objects").is_dir()
                  and (p / "HEAD").is_file())


def object_files(git_dir: Path) -> list[Path]:
    return [p for p in (git_dir / "objects").rglob("*") if p.is_file()]


def assert_no_port(pair: Pair, ws: Workspace, where: Path) -> None:
    hidden = port_only(pair)
    assert len(hidden) >= 4  # the commit, its root and tests trees, calc.py, test_sub.py
    for sha in hidden:  # the source clones hold them all (the upstream one too)
        assert git(pair.upstream.path, "cat-file", "-e", sha, check=False).returncode == 0
    assert repositories(where) == sorted([ws.upstream / ".git", ws.downstream / ".git"])
    for repo in (ws.upstream, ws.downstream):
        present = [sha for sha in hidden
                   if git(repo, "cat-file", "-e", sha, check=False).returncode == 0]
        assert present == [], f"{repo} holds objects of the port"
    assert git(ws.upstream, "rev-parse", "HEAD").stdout.strip() == pair.pin
    assert git(ws.upstream, "cat-file", "-e", f"{pair.change}^{{commit}}").returncode == 0


def assert_no_shared_file(ws: Workspace, *others: Path) -> None:
    """No object file of the workspace is a file of ``others`` (git folders), or has a
    name anywhere else."""
    taken = {(s.st_dev, s.st_ino) for repo in others for s in map(os.stat, object_files(repo))}
    for repo in (ws.upstream, ws.downstream):
        files = object_files(repo / ".git")
        assert files
        for path in files:
            info = path.stat()
            assert (info.st_dev, info.st_ino) not in taken, f"{path} is a source's file"
            assert info.st_nlink == 1, f"{path} has other names"


def assert_borrows_nothing(ws: Workspace) -> None:
    for repo in (ws.upstream, ws.downstream):
        info = repo / ".git" / "objects" / "info"
        assert not (info / "alternates").exists()
        assert not (info / "http-alternates").exists()
        assert git(repo, "remote").stdout == ""  # nothing to fetch the rest from


CASES = [pytest.param(fork, packed, id=f"{fork}{'-packed' if packed else ''}")
         for fork in FORKS for packed in (False, True)]


@pytest.mark.parametrize(("fork", "packed"), CASES)
def test_no_object_of_the_port_is_in_any_repository_of_the_workspace(
        tmp_path: Path, fork: str, packed: bool) -> None:
    pair, ws = make(tmp_path, fork, packed)
    assert_no_port(pair, ws, tmp_path / "work")


@pytest.mark.parametrize(("fork", "packed"), CASES)
def test_no_object_file_of_the_workspace_is_a_link_to_a_source_clone(
        tmp_path: Path, fork: str, packed: bool) -> None:
    pair, ws = make(tmp_path, fork, packed)
    assert_no_shared_file(ws, pair.upstream.path / ".git", pair.downstream.path / ".git")


@pytest.mark.parametrize(("fork", "packed"), CASES)
def test_no_repository_of_the_workspace_borrows_objects(
        tmp_path: Path, fork: str, packed: bool) -> None:
    _, ws = make(tmp_path, fork, packed)
    assert_borrows_nothing(ws)


@pytest.mark.parametrize("fork", FORKS)
def test_a_seeded_workspace_copies_seeds_that_hold_no_object_of_the_port(
        tmp_path: Path, fork: str) -> None:
    """The seeds (the parent's history, the upstream's up to the last commit) are fetched
    like a workspace: they hold nothing of the port either, and a workspace's packs are
    copies of theirs, not links."""
    pair, ws = make(tmp_path, fork, True, seeds=True)
    assert_no_port(pair, ws, tmp_path / "work")
    seeds = sorted((tmp_path / "seeds").iterdir())
    assert [p.name for p in seeds] == sorted([f"{pair.parent}.git", f"{pair.change}.git"])
    for seed in seeds:
        assert git(seed, "cat-file", "-e", pair.port, check=False).returncode != 0
    assert_no_shared_file(ws, pair.upstream.path / ".git", pair.downstream.path / ".git",
                          *seeds)
    assert_borrows_nothing(ws)


def test_an_upstream_clone_made_by_a_local_clone_is_made_again(tmp_path: Path) -> None:
    """A workspace an older portwright made (a local clone: hard links, the source's
    alternates, every branch) is not kept: its upstream is made again by a fetch."""
    pair = build_pair(tmp_path / "repos")
    shared_store(pair)
    old = tmp_path / "work" / "upstream" / "calc-js"
    old.parent.mkdir(parents=True)
    git(old.parent, "clone", "-q", "--no-checkout", str(pair.upstream.path), old.name)
    assert (old / ".git" / "objects" / "info" / "alternates").exists()
    tasks = tmp_path / "tasks" / "calc.toml"
    tasks.parent.mkdir(parents=True)
    tasks.write_text(task_toml(pair))
    ws = prepare(load_suite(tasks).tasks[0], pair.repos, tmp_path / "work")
    assert ws.upstream == old.resolve()
    assert not (old / ".git" / "objects" / "info" / "alternates").exists()
    assert git(old, "cat-file", "-e", pair.port, check=False).returncode != 0
    assert git(old, "rev-parse", "HEAD").stdout.strip() == pair.pin


def test_an_upstream_whose_history_holds_the_port_is_refused(tmp_path: Path) -> None:
    """A fork that merged the port and changed on top: porting that change would put the
    answer in the workspace's upstream, so the task is bad input, before any workspace."""
    pair = build_pair(tmp_path / "repos")
    second_remote(pair)
    up = pair.upstream.path
    git(up, "checkout", "-q", "from-downstream")
    (up / "NEWS").write_text("merged\n")
    git(up, "add", "NEWS")
    git(up, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "news")
    after = git(up, "rev-parse", "HEAD").stdout.strip()
    tasks = tmp_path / "tasks" / "calc.toml"
    tasks.parent.mkdir(parents=True)
    tasks.write_text(task_toml(pair, up=f'[upstream]\nrepo = "acme/calc-js"\n'
                                        f'commits = ["{after}"]'))
    with pytest.raises(UsageError, match="holds the port") as caught:
        prepare(load_suite(tasks).tasks[0], pair.repos, tmp_path / "work")
    assert caught.value.key == "upstream.commits"
    assert not (tmp_path / "work").exists()
