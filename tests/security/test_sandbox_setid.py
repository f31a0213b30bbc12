"""Attack: leave a set-id binary in the worktree for a host user to run.

A binary a command marks setuid runs as its owner for whoever starts it on the host — the
worktree's owner, whoever that is. Set-id bits are stripped from every file of the
worktree after each command, in a small worktree (a walk) and a big one (``find``).
Proven against bubblewrap and a real Docker engine.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from portwright.sandboxes.ownership import BIG_TREE
from tests.sandboxes.conftest import (
    BACKENDS,
    OWNER,
    make_worktree,
    new_sandbox,
    open_tmp,
    setid_files,
)

PLANT = ("mkdir -p {where} && cp /bin/sh {where}/su && chmod 4755 {where}/su && "
         "cp /bin/sh {where}/sg && chmod 2755 {where}/sg && echo planted")


@pytest.fixture(params=["small", "big"])
def tree(request: pytest.FixtureRequest) -> Iterator[tuple[Path, Path, Path]]:
    with open_tmp() as base:
        wt, main = make_worktree(base / "repos")
        if request.param == "big":
            for i in range(BIG_TREE // 100 + 5):
                folder = wt / "vendor" / f"pkg{i}"
                folder.mkdir(parents=True)
                for j in range(100):
                    (folder / f"f{j}.c").write_text("")
            if os.geteuid() == 0:
                subprocess.run(["chown", "-R", f"{OWNER}:{OWNER}", str(wt / "vendor")],
                               check=True)
        yield base, wt, main


@pytest.mark.parametrize("backend", BACKENDS)
def test_setid_bits_do_not_outlive_a_command(backend: str,
                                             tree: tuple[Path, Path, Path]) -> None:
    base, wt, main = tree
    with new_sandbox(backend, wt, base, run_id="test-setid", upstream=main) as sb:
        for where in ("bin", "vendor/deep/er", "bin"):  # the third runs once the size is known
            res = sb.exec(["sh", "-c", PLANT.format(where=where)])
            assert res.ok, res.stderr_head
            assert res.stdout_head == "planted\n"
            assert setid_files(wt) == []
            res = sb.exec(["sh", "-c", f"test -u {where}/su || test -g {where}/sg || echo clean"])
            assert res.stdout_head == "clean\n"
        assert sb._sweeper is not None
        assert sb._sweeper.uses_find == (wt / "vendor" / "pkg0").is_dir()  # the big tree
