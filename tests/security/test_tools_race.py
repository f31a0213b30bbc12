"""The agent file tools against a racer: code in the sandbox that keeps swapping a directory
of the worktree for a symlink to a folder outside it (and a file for a symlink to a file
outside), and back, while the tools run.

The racer is a real process, as sandboxed code would be. It swaps with
``renameat2(RENAME_EXCHANGE)`` (atomic, the strongest racer) where libc has it, else with
two renames. Whatever the timing, no tool call may create, change or read a file outside
the worktree, and every call either succeeds inside it or answers a ToolError.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from portwright.agents.tools import Toolbox, Workspace
from portwright.errors import ToolError

SECONDS = 3.0
SECRET = "OUTSIDE-SECRET-7f3a"

RACER = r"""
import ctypes, os, sys, time
root, outside, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
os.chdir(root)
os.symlink(outside, "d.swap")                          # the folder d <-> a link out
os.symlink(os.path.join(outside, "secret.txt"), "top.swap")  # the file top.txt <-> a link
libc = ctypes.CDLL(None, use_errno=True)
renameat2 = getattr(libc, "renameat2", None)
AT_FDCWD, RENAME_EXCHANGE = -100, 2

def swap(name):
    if renameat2 is not None:
        return renameat2(AT_FDCWD, name.encode(), AT_FDCWD, name.split(".")[0].encode()
                         + b".swap", RENAME_EXCHANGE) == 0
    other = name.split(".")[0] + ".swap"
    try:  # no renameat2: a slower, non-atomic swap through a third name
        os.rename(name, name + ".tmp")
        os.rename(other, name)
        os.rename(name + ".tmp", other)
    except OSError:
        return False
    return True

print("ready", flush=True)
swaps = 0
end = time.monotonic() + seconds
while time.monotonic() < end:
    swaps += swap("d") + swap("top.txt")
while os.path.islink("d") or not os.path.isdir("d"):
    swap("d")
while os.path.islink("top.txt"):
    swap("top.txt")
os.unlink("d.swap")
os.unlink("top.swap")
print(swaps, flush=True)
"""


def snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every entry under ``folder``, files with their bytes (no link followed)."""
    return {str(p.relative_to(folder)): p.read_bytes() if p.is_file() else None
            for p in sorted(folder.rglob("*"))}


def test_a_swapping_racer_gets_nothing_outside_the_worktree(make_repo: Any,
                                                             tmp_path: Path) -> None:
    repo = make_repo("downstream")
    repo.commit("start", {"d/secret.txt": "inside\n", "d/edit.txt": "count = 0\n",
                          "top.txt": "top\n"})
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(f"{SECRET}\n")   # stands for the evidence key
    (outside / "edit.txt").write_text("count = 0\n")     # what edit_file would rewrite
    (outside / "outside-only.txt").write_text("x\n")     # what a listing would leak
    before = snapshot(outside)
    tools = Toolbox(Workspace(worktree=repo.path),
                    ["read_file", "write_file", "edit_file", "list_dir", "search"])

    racer = subprocess.Popen([sys.executable, "-c", RACER, str(repo.path), str(outside),
                              str(SECONDS)], stdout=subprocess.PIPE, text=True)
    assert racer.stdout is not None
    assert racer.stdout.readline().strip() == "ready"
    outcomes: Counter[str] = Counter()
    escaped: list[str] = []
    leaks: list[str] = []
    i = 0
    deadline = time.monotonic() + SECONDS
    while time.monotonic() < deadline:
        i += 1
        calls: list[tuple[str, dict[str, Any]]] = [
            ("write_file", {"path": f"d/w{i}.txt", "content": f"write {i}\n"}),
            ("write_file", {"path": f"d/sub{i}/deep.txt", "content": "deep\n"}),
            ("edit_file", {"path": "d/edit.txt", "search": "count = 0",
                           "replace": "count = 0!"}),
            ("read_file", {"path": "d/secret.txt"}),
            ("list_dir", {"path": "d"}),
            ("search", {"pattern": SECRET, "path": "d"}),
            ("read_file", {"path": "top.txt"}),
            ("write_file", {"path": "top.txt", "content": f"top {i}\n"}),
            ("search", {"pattern": SECRET}),
        ]
        for name, args in calls:
            try:
                answer = tools.call(name, json.dumps(args))
            except ToolError:
                outcomes[f"{name}: ToolError"] += 1
                continue
            except Exception as exc:
                escaped.append(f"{name}: {type(exc).__name__}: {exc}")
                continue
            outcomes[f"{name}: ok"] += 1
            if SECRET in answer or "outside-only.txt" in answer:
                leaks.append(f"{name}: {answer[:80]!r}")
    swaps = int(racer.communicate(timeout=30)[0].strip())
    assert racer.returncode == 0

    after = snapshot(outside)
    created = sorted(set(after) - set(before))
    changed = sorted(k for k in before if after.get(k) != before[k])
    assert swaps > 100, f"the racer swapped only {swaps} times"
    assert outcomes["write_file: ok"] > 0, outcomes  # the tools did work inside
    assert (created, changed, leaks, escaped) == ([], [], [], []), (
        f"{len(created)} entries created outside ({created[:5]}…), {len(changed)} changed "
        f"({changed[:5]}), {len(leaks)} leaked reads "
        f"({dict(Counter(leak.split(':')[0] for leak in leaks))}: {leaks[:3]}), {len(escaped)} "
        f"non-ToolError exceptions ({escaped[:3]}); {swaps} swaps; {dict(outcomes)}")
