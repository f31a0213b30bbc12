"""The base build: what the run's base builds, carried into every gate phase's export.

Only a build of the run's base (a commit no agent made) writes what phases start from; a
phase that judges the same commit as the one before it starts from that phase's export.
So a commit cannot plant a build output that a later commit's build keeps: the stale
output attack below works in any tree that builds one commit after the other, and does
not reach the gates.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from portwright.config import SandboxConfig
from portwright.project import Project
from portwright.vcs import export
from portwright.workflows import basebuild
from portwright.workflows.context import open_run
from portwright.workflows.steps import judge
from tests.conftest import GitRepo, bwrap_works, docker_engine_running
from tests.sandboxes.conftest import open_tmp_path

__all__ = ["open_tmp_path"]

RULE = ("out/result: src.txt Makefile\n\tmkdir -p out && cp src.txt out/result && "
        "echo built >> out/log\n")
PLANT = ("out/result: src.txt Makefile\n\tmkdir -p out && echo GOOD > out/result && "
         "touch -d 2099-01-01 out/result\n")
GATES = '''# Rules

```toml portwright
[[gate]]
name = "focused"
run = "make -s && grep -qx GOOD out/result"
phases = ["focused", "full"]
timeout = 120
```
'''


def _backend(name: str) -> None:
    if name == "docker" and not docker_engine_running():
        pytest.skip("no Docker engine answers")
    if name == "bwrap" and not bwrap_works():
        pytest.skip("bubblewrap does not work here")


def _world(root: Path, backend: str, base_build: str = "make -s") -> tuple[GitRepo, str]:
    up = GitRepo(root / "upstream")
    up.commit("upstream", {"README.md": "upstream\n"})
    down = GitRepo(root / "downstream")
    base = down.commit("scaffold", {
        "portwright.toml": (f'[upstream]\nsource = "../upstream"\n\n[sandbox]\n'
                            f'backend = "{backend}"\nmemory = "512m"\n'
                            f'base_build = "{base_build}"\n'),
        "AGENTS.md": GATES, "Makefile": RULE, "src.txt": "BAD\n", ".gitignore": "out/\n",
        "upstream-sync.md": f"# Upstream sync\n\nPinned commit: `{up.head()}`\n"})
    return down, base


def _held_tree(ctx_slot: Path, repo: Path) -> Path:
    return ctx_slot / repo.name


@pytest.mark.parametrize("backend", ["bwrap", "docker"])
def test_a_commit_cannot_plant_an_output_a_later_commit_keeps(
        open_tmp_path: Path, backend: str) -> None:
    """The tests commit's build writes the expected output dated in the future; the next
    commit puts the build back as it was, its source still wrong. Built one after the other
    in one tree, make keeps the planted output and the gate passes; judged, it fails."""
    _backend(backend)
    down, base = _world(open_tmp_path, backend)
    planted = down.commit("tests", {"Makefile": PLANT})
    honest = down.commit("implementation (wrong)", {"Makefile": RULE})
    # the attack is real: one tree building both commits in turn passes the wrong one
    tree = open_tmp_path / "one-tree"
    subprocess.run(["git", "-C", str(down.path), "worktree", "add", "-q", "--detach",
                    str(tree), planted], check=True)
    subprocess.run(["make", "-s"], cwd=tree, check=True)
    subprocess.run(["git", "checkout", "-q", honest], cwd=tree, check=True)
    assert subprocess.run(["sh", "-c", "make -s && grep -qx GOOD out/result"],
                          cwd=tree).returncode == 0
    project = Project.load(down.path, at=base)
    with open_run(project, "test", run_id=f"plant-{backend}", open_ahead=False) as ctx:
        first = judge(ctx, planted, "focused", base=base)
        second = judge(ctx, honest, "focused", base=base)
    assert [r.passed for r in first] == [True], [r.messages for r in first]
    assert [r.passed for r in second] == [False], [r.messages for r in second]


def test_phases_build_only_what_their_commit_changed(open_tmp_path: Path) -> None:
    """A phase's build is incremental from the base's outputs: what the commit changed is
    rebuilt, nothing else; a second phase on the same commit builds nothing; the stored
    outputs are the base build's alone."""
    _backend("bwrap")
    down, base = _world(open_tmp_path, "bwrap")
    readme = down.commit("docs", {"README.md": "docs\n"})
    fixed = down.commit("implementation", {"src.txt": "GOOD\n"})
    project = Project.load(down.path, at=base)
    with open_run(project, "test", run_id="incremental", open_ahead=False) as ctx:
        docs = judge(ctx, readme, "focused", base=base)
        held = ctx.base_build(base)
        assert held is not None
        slot, built = held
        log = _held_tree(slot, down.path) / "out" / "log"
        assert built.outputs is not None
        assert not built.reused
        # the docs commit changed no input of out/result: the base's output (BAD) stands,
        # built once, by the base build
        assert log.read_text() == "built\n"
        focused = judge(ctx, fixed, "focused", base=base)
        assert log.read_text() == "built\nbuilt\n"
        full = judge(ctx, fixed, "full", base=base)
        assert log.read_text() == "built\nbuilt\n"
        assert (built.outputs / "out" / "log").read_text() == "built\n"
    assert [r.passed for r in docs] == [False]
    assert [r.passed for r in focused + full] == [True, True]
    assert not slot.exists()  # the slot, and the export it held, go with the run


def test_a_later_run_reuses_the_base_build(open_tmp_path: Path) -> None:
    _backend("bwrap")
    down, base = _world(open_tmp_path, "bwrap")
    fixed = down.commit("implementation", {"src.txt": "GOOD\n"})
    project = Project.load(down.path, at=base)
    seen = []
    for number in range(2):
        with open_run(project, "test", run_id=f"again-{number}", open_ahead=False) as ctx:
            assert [r.passed for r in judge(ctx, fixed, "focused", base=base)] == [True]
            held = ctx.base_build(base)
            assert held is not None
            seen.append(held[1].reused)
    assert seen == [False, True]


def test_a_failing_base_build_leaves_phases_to_build_from_scratch(open_tmp_path: Path) -> None:
    _backend("bwrap")
    down, base = _world(open_tmp_path, "bwrap", base_build="exit 3")
    fixed = down.commit("implementation", {"src.txt": "GOOD\n"})
    project = Project.load(down.path, at=base)
    with open_run(project, "test", run_id="failing", open_ahead=False) as ctx:
        results = judge(ctx, fixed, "focused", base=base)
        held = ctx.base_build(base)
    assert [r.passed for r in results] == [True]
    assert held is not None
    assert held[1].outputs is None
    assert held[1].exit_code == 3


def test_copies_keep_links_as_links_and_drop_what_is_no_file(tmp_path: Path) -> None:
    """What a base build left is copied without following a link, without set-id bits and
    without devices or pipes; a file the phase's commit tracks stays the commit's."""
    source = tmp_path / "source"
    (source / "build").mkdir(parents=True)
    (source / "build" / "tool").write_text("#!/bin/sh\n")
    (source / "build" / "tool").chmod(0o4755)
    (source / "build" / "passwd").symlink_to("/etc/passwd")
    os.mkfifo(source / "build" / "pipe")
    (source / "kept.txt").write_text("from the base build\n")
    built = basebuild.BaseBuild("k", source, 0.0, 3, reused=False)
    tree = GitRepo(tmp_path / "tree")
    tree.commit("commit", {"kept.txt": "the commit's\n", "src.c": "int x;\n"})
    basebuild.restore(built, tree.path, changed=["kept.txt"])
    assert (tree.path / "build" / "passwd").is_symlink()
    assert str((tree.path / "build" / "passwd").readlink()) == "/etc/passwd"
    assert not stat.S_IMODE((tree.path / "build" / "tool").stat().st_mode) & 0o7000
    assert not (tree.path / "build" / "pipe").exists()
    assert (tree.path / "kept.txt").read_text() == "the commit's\n"
    assert (tree.path / "src.c").stat().st_mtime == basebuild.EPOCH  # unchanged: dated back
    assert (tree.path / "kept.txt").stat().st_mtime > basebuild.EPOCH


def test_a_key_names_every_sandbox_setting() -> None:
    slot = Path("/exports/slot-0")
    one = basebuild.key("a" * 40, SandboxConfig(base_build="make"), slot)
    assert one != basebuild.key("b" * 40, SandboxConfig(base_build="make"), slot)
    assert one != basebuild.key("a" * 40, SandboxConfig(base_build="make -j2"), slot)
    assert one != basebuild.key("a" * 40, SandboxConfig(base_build="make", setup=["x"]), slot)
    assert one != basebuild.key("a" * 40, SandboxConfig(base_build="make"), Path("/e/slot-1"))


def test_slots_are_one_process_s_each(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "repo")
    repo.commit("one", {"a.txt": "a\n"})
    with export.slot(repo.path) as first, export.slot(repo.path) as second:
        assert first is not None
        assert second is not None
        assert first != second
        with export.slot(repo.path) as third, export.slot(repo.path) as fourth:
            assert third is not None
            assert fourth is not None
            with export.slot(repo.path) as none:
                assert none is None
    assert not first.exists()


def test_a_base_named_by_a_name_that_moves_is_the_commit_it_names(open_tmp_path: Path) -> None:
    """``gates run`` measures from ``HEAD~1``: a new commit moves it, and the outputs of
    the old one must not pass for the new one's."""
    _backend("bwrap")
    down, _ = _world(open_tmp_path, "bwrap")
    down.commit("one", {"README.md": "one\n"})
    project = Project.load(down.path, at="HEAD")
    with open_run(project, "test", run_id="moving", open_ahead=False) as ctx:
        first = ctx.base_build("HEAD~1")
        down.commit("two", {"src.txt": "GOOD\n"})
        second = ctx.base_build("HEAD~1")
    assert first is not None
    assert second is not None
    assert first[1].key != second[1].key
