"""What the run's base builds, carried into every gate phase's export.

Gates judge a clean export of each commit (:mod:`portwright.vcs.export`), so each phase
would build from scratch what the agents' worktree builds incrementally: for a compiled
port, most of a phase's time. ``[sandbox] base_build`` names the command that builds the
tree; it runs once per base on a clean export of the **run's base** — the commit the run
started from, never one an agent made — in a fresh sandbox, and what it leaves (every file
of the export that the commit does not track) is kept in the state folder. Each phase's
export then starts from a copy of it: as a CI job starts from a cache that only builds of
its base branch write.

No phase writes it: each gets a copy, and nothing a phase (or an agent) does reaches the
stored outputs or the base's export. So what the gates see is still a function of the
commit judged and of the trusted base alone — the stale-output attack (a commit that
plants a build output, dated in the future, that a later commit's build then keeps) has
nothing to plant into.

Timestamps make the build incremental and correct: the base's export has every tracked file
dated :data:`EPOCH` before it builds, so its outputs are newer than their sources; a phase's
export has the files its commit did not change (against the base) dated :data:`EPOCH` too,
and the ones it changed dated when they were checked out, newer than every stored output:
make, Ninja and CMake rebuild exactly what changed. Outputs name their tree by its absolute
path (CMake's cache, compilers' dependency files), so base build and phases export into one
slot (:func:`portwright.vcs.export.slot`), the same path each time; the stored outputs are
keyed by it, the base, the command and the sandbox's settings.

Copies never follow links (a link is copied as a link), never keep set-id bits, never copy
a device or a pipe. A base build that fails is logged, and the run's phases build from
scratch, as without ``base_build``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from portwright.config import SandboxConfig
from portwright.gates._diff import tracked as tracked_files
from portwright.sandboxes.base import Sandbox
from portwright.vcs.export import exported

logger = logging.getLogger(__name__)

EPOCH = 946_684_800
"""2000-01-01T00:00:00Z: when every file a phase's commit did not change was last modified,
as far as its build can tell."""
FOLDER = "base-builds"
"""Folder of the state folder that keeps base builds' outputs, one folder per key."""
KEEP = 6
"""Base builds kept per state folder (the newest; a base a night's runs share is used and
kept, older ones go)."""
OUTPUTS = "outputs"
META = "build.json"


@dataclass(frozen=True)
class BaseBuild:
    """The outputs of one base build (``outputs`` None: it failed; phases build from
    scratch) and what it took."""

    key: str
    outputs: Path | None
    seconds: float
    files: int
    reused: bool
    exit_code: int = 0
    log: str = ""


def key(base: str, config: SandboxConfig, slot: Path) -> str:
    """The digest that names a base build: the base, the slot it was built in and every
    sandbox setting (the command, the image and its setup among them)."""
    payload = json.dumps({"format": 1, "base": base, "slot": str(slot),
                          "sandbox": config.model_dump(mode="json")}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


def ensure(repo: Path, base: str, config: SandboxConfig, slot: Path, state_dir: Path,
           new_sandbox: Callable[[Path], Sandbox]) -> BaseBuild:
    """The stored outputs of ``base``'s build, built now (in ``slot``, by a sandbox of
    ``new_sandbox``) when no earlier run of this state folder built them."""
    name = key(base, config, slot)
    home = state_dir / FOLDER / name
    if (home / OUTPUTS).is_dir() and not (home / OUTPUTS).is_symlink():
        with contextlib.suppress(OSError):
            os.utime(home)  # the newest kept
        files = _meta(home).get("files", 0)
        return BaseBuild(name, home / OUTPUTS, 0.0, files if isinstance(files, int) else 0,
                         reused=True)
    assert config.base_build is not None
    began = time.perf_counter()
    with exported(repo, base, label="base", at=slot) as tree:
        tracked = tracked_files(tree)
        date(tree, tracked)
        with new_sandbox(tree) as box:
            result = box.exec(["sh", "-c", config.base_build], timeout=config.base_build_timeout)
        seconds = time.perf_counter() - began
        if not result.ok:
            logger.warning("the base build failed (exit %d); gate phases build from scratch: "
                           "see %s", result.exit_code, result.log_path)
            return BaseBuild(name, None, seconds, 0, reused=False,
                             exit_code=result.exit_code, log=str(result.log_path or ""))
        files = _keep(tree, set(tracked), home)
    _prune(state_dir / FOLDER)
    return BaseBuild(name, home / OUTPUTS, time.perf_counter() - began, files, reused=False)


def restore(build: BaseBuild, tree: Path, changed: Iterable[str]) -> None:
    """``build``'s outputs copied into the export ``tree`` (a file the commit tracks stays
    the commit's), and the tracked files ``changed`` does not name dated :data:`EPOCH`."""
    if build.outputs is None:
        return
    tracked = tracked_files(tree)
    keep = set(changed)
    date(tree, [path for path in tracked if path not in keep])
    _copy_tree(build.outputs, tree, skip_existing=True)


def date(tree: Path, paths: Iterable[str]) -> None:
    """Each of ``paths`` (relative to ``tree``) dated :data:`EPOCH`, links themselves."""
    for path in paths:
        with contextlib.suppress(OSError):
            os.utime(tree / path, (EPOCH, EPOCH), follow_symlinks=False)


def _keep(tree: Path, tracked: set[str], home: Path) -> int:
    """Every file of ``tree`` that is neither tracked nor in ``.git``, copied into
    ``home``'s outputs (made aside, then moved into place: a reader never sees half)."""
    home.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    scratch = Path(tempfile.mkdtemp(prefix=".new-", dir=home.parent))
    outputs = scratch / OUTPUTS
    outputs.mkdir()
    folders = {parent.as_posix() for p in tracked for parent in Path(p).parents}
    files = _copy_untracked(tree, outputs, "", tracked, folders)
    (scratch / META).write_text(json.dumps({"files": files}), encoding="utf-8")
    try:
        scratch.rename(home)
    except OSError:  # another run stored the same build first
        shutil.rmtree(scratch, ignore_errors=True)
    return files


def _copy_untracked(tree: Path, dest: Path, rel: str, tracked: set[str],
                    folders: set[str]) -> int:
    count = 0
    here = tree / rel if rel else tree
    with os.scandir(here) as entries:
        for entry in entries:
            path = f"{rel}/{entry.name}" if rel else entry.name
            if path == ".git" or path in tracked:
                continue
            if entry.is_dir(follow_symlinks=False):
                if path in folders:
                    (dest / path).mkdir(exist_ok=True)
                    count += _copy_untracked(tree, dest, path, tracked, folders)
                else:
                    count += _copy_tree(Path(entry.path), dest / path)
            else:
                count += _copy_one(Path(entry.path), dest / path)
    return count


def _copy_tree(source: Path, dest: Path, *, skip_existing: bool = False) -> int:
    """``source``'s files into ``dest`` (merged with what is there; with ``skip_existing``
    a file already there stays), links as links, dates kept."""
    count = 0
    dest.mkdir(exist_ok=True)
    for top, dirs, names in os.walk(source, followlinks=False):
        rel = os.path.relpath(top, source)
        target = dest if rel == "." else dest / rel
        for name in list(dirs):
            made = target / name
            if (Path(top) / name).is_symlink():
                dirs.remove(name)
                names.append(name)
            elif not os.path.lexists(made):
                made.mkdir()
            elif made.is_symlink() or not made.is_dir():
                dirs.remove(name)  # the commit has a file there: it stays
        for name in names:
            made = target / name
            if os.path.lexists(made):
                if skip_existing:
                    continue
                made.unlink()
            count += _copy_one(Path(top) / name, made)
        with contextlib.suppress(OSError):
            info = os.lstat(top)
            os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns))
    return count


def _copy_one(source: Path, dest: Path) -> int:
    """One file or link; a device, pipe or socket is not copied (0)."""
    info = os.lstat(source)
    if stat.S_ISLNK(info.st_mode):
        dest.symlink_to(source.readlink())
    elif stat.S_ISREG(info.st_mode):
        shutil.copyfile(source, dest, follow_symlinks=False)
        dest.chmod(stat.S_IMODE(info.st_mode) & 0o777)
    else:
        return 0
    os.utime(dest, ns=(info.st_atime_ns, info.st_mtime_ns), follow_symlinks=False)
    return 1


def _meta(home: Path) -> dict[str, object]:
    try:
        loaded = json.loads((home / META).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def _prune(folder: Path) -> None:
    """The newest :data:`KEEP` base builds kept, the others removed (best effort)."""
    try:
        kept = sorted((p for p in folder.iterdir() if not p.name.startswith(".")),
                      key=lambda p: p.stat().st_mtime, reverse=True)
    except OSError:
        return
    for old in kept[KEEP:]:
        shutil.rmtree(old, ignore_errors=True)
    with contextlib.suppress(OSError):  # what a killed base build left half stored
        for half in folder.glob(".new-*"):
            if time.time() - half.stat().st_mtime > 3600:
                shutil.rmtree(half, ignore_errors=True)
