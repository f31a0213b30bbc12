"""The integrity checks: ``tamper`` and ``protected-paths``.

A signed evidence record proves what portwright saw run; these checks look at what the
change did to the run itself.

``tamper`` lists the added lines of ``base..HEAD`` outside the test paths that reach into
the test runner or its reporting (:mod:`portwright.gates.tamper`). The rules are patterns
with accepted false positives, so by default the flags are advisory: the gate passes and
lists them, for the reviewer and the approval step. ``options.fail = true`` makes any flag a
failure, for a repository whose maintainers prefer to clear flags with ``options.ignore``.

``protected-paths`` fails when a protected path (:mod:`portwright.protected`) changed:
committed in ``base..HEAD``, or in the working tree (tracked files changed since HEAD, and
untracked files, ignored ones included, since a new ignore rule is itself a change). The
working tree counts because a sandboxed command, not only an agent tool, can write there.
Files a command produced are read only as capped regular files, never through a link
(:mod:`portwright.safefs`); one that cannot be read so counts as changed.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from portwright import safefs
from portwright.errors import UnsafePath, UsageError
from portwright.gates import _diff
from portwright.gates.models import GateResult, result
from portwright.gates.tamper import has_rules, tamper_flags
from portwright.globs import match_any
from portwright.protected import SECTION_FILES, is_protected, protected_change
from portwright.rules import BuiltinCheck
from portwright.vcs import plumbing

__all__ = ["check_protected_paths", "check_tamper"]

READ_CAP = 4 * 1024 * 1024
"""Largest working-tree file read to compare its protected part."""


def _usage(name: str, exc: UsageError) -> GateResult:
    return GateResult(name=name, passed=False, messages=[exc.render()], check=name)


def _shown(text: str) -> str:
    """``text`` printable: a byte of a file name that is not UTF-8 shown as U+FFFD."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


# ---------------------------------------------------------------------------- tamper

def check_tamper(repo: Path, *, base: str | None, tests: list[str],
                 ignore: list[str] | None = None, fail: bool = False) -> GateResult:
    """Flags of the added lines of ``base..HEAD`` outside ``tests`` and ``ignore`` (globs).
    Advisory (the gate passes, listing them) unless ``fail``."""
    name = BuiltinCheck.TAMPER.value
    skip = [*tests, *(ignore or [])]

    def skipped(path: str) -> bool:
        # test-runner infrastructure (a conftest.py, a .pth) is scanned even where the test
        # globs would cover it: it is where a forged pass is planted
        shown = _shown(path)
        return match_any(shown, skip) and not is_protected(shown)

    try:
        base = _diff.default_base(repo, base)
        changes = [c for c in _diff.name_status(repo, base, exact=True)
                   if c.status != "D" and not skipped(c.path) and has_rules(c.path)]
        paths: set[str] = set()
        for change in changes:
            paths.add(change.path)
            if change.old_path is not None and not skipped(change.old_path):
                paths.add(change.old_path)  # a file moved out of the tests is new code
        flags = tamper_flags(_diff.unified(repo, base, sorted(paths)))
    except UsageError as exc:
        return _usage(name, exc)
    scanned = len(changes)
    if not flags:
        return result(name, [], check=name, notes=[f"no tamper flag in {scanned} changed "
                                                   "file(s)"])
    messages = [flag.render() for flag in flags]
    if fail:
        return result(name, messages, check=name)
    return result(name, [], check=name, notes=[
        *messages, f"{len(flags)} tamper flag(s), advisory: the reviewer and the approval "
                   "step see them (options.fail = true makes them fail this gate)"])


# ------------------------------------------------------------------- protected-paths

def _may_be_protected(path: str) -> bool:
    """Whether :func:`protected_change` can refuse a change of ``path`` (whole or by section)."""
    return is_protected(path) or path in SECTION_FILES


def _read(repo: Path, path: str) -> bytes | None:
    """Bytes of a working-tree file (None: absent), never read through a link; raises
    :class:`UnsafePath` for anything else."""
    try:
        return safefs.read_file(repo, path, cap=READ_CAP)
    except FileNotFoundError:
        return None


def _committed(repo: Path, base: str) -> list[tuple[str, str]]:
    """``(path, why)`` of each protected path ``base..HEAD`` changes."""
    found: list[tuple[str, str]] = []
    for change in _diff.name_status(repo, base, exact=True):
        sides: list[tuple[str, str | None, str | None]] = []  # path, rev before, rev after
        if change.old_path is not None:
            if change.status == "R":
                sides.append((change.old_path, base, None))
            sides.append((change.path, None, "HEAD"))
        else:
            sides.append((change.path, None if change.status == "A" else base,
                          None if change.status == "D" else "HEAD"))
        for path, old, new in sides:
            if not _may_be_protected(path):
                continue
            why = protected_change(path, None if old is None else plumbing.show(repo, old, path),
                                   None if new is None else plumbing.show(repo, new, path))
            if why is not None:
                found.append((path, why))
    return found


def _listed(repo: Path, *args: str) -> list[str]:
    """Paths git lists NUL-separated, byte for byte (``os.fsdecode``), so that a name that
    is not UTF-8 still opens the file it names."""
    return [os.fsdecode(p) for p in plumbing.git(repo, *args).split(b"\0") if p]


def _worktree(repo: Path) -> list[tuple[str, str, str]]:
    """``(path, why, where)`` of each protected path the working tree changed since HEAD."""
    tracked = _listed(repo, "diff", "--name-only", "-z", "--no-renames", "--no-ext-diff",
                      "--ignore-submodules", "HEAD")
    untracked = _listed(repo, "ls-files", "-z", "--others", "--exclude-standard")
    ignored = _listed(repo, "ls-files", "-z", "--others", "--ignored", "--exclude-standard")
    where = {**dict.fromkeys(ignored, "untracked and ignored by git, in the working tree"),
             **dict.fromkeys(untracked, "untracked in the working tree"),
             **dict.fromkeys(tracked, "uncommitted change in the working tree")}
    found: list[tuple[str, str, str]] = []
    for path, place in where.items():
        if not _may_be_protected(path):
            continue
        try:
            after = _read(repo, path)
        except (UnsafePath, OSError) as exc:
            reason = (exc.reason if isinstance(exc, UnsafePath)
                      else f"cannot be read ({exc.strerror or exc})")
            found.append((path, f"{path} {reason}; its protected part cannot be compared, so "
                                "it counts as changed", place))
            continue
        why = protected_change(path, plumbing.show(repo, "HEAD", path), after)
        if why is not None:
            found.append((path, why, place))
    return found


ADOPTED = ("portwright.toml", "**/AGENTS.md")
"""What the commit that adopts portwright adds (``portwright init``): not a change of the
config a run started with, since ``base`` had none."""


def _adopts_portwright(repo: Path, base: str) -> bool:
    """Whether ``base..HEAD`` adopts portwright: ``base`` has no ``portwright.toml`` (the
    empty tree of a first commit, or a commit from before ``portwright init``). A run never
    starts there (it needs the config), so inside a run nothing is exempt."""
    return base == _diff.EMPTY_TREE or plumbing.show(repo, base, "portwright.toml") is None


def _label(base: str) -> str:
    if base == _diff.EMPTY_TREE:
        return "the empty tree"
    return base[:12] if re.fullmatch(r"[0-9a-f]{40}", base) else base


def check_protected_paths(repo: Path, *, base: str | None,
                          ignore: list[str] | None = None) -> GateResult:
    """No protected path changed in ``base..HEAD`` or in the working tree; ``ignore``
    (globs, from the rules) exempts paths, e.g. a virtual environment the gates build."""
    name = BuiltinCheck.PROTECTED_PATHS.value
    try:
        base = _diff.default_base(repo, base)
        adopted = _adopts_portwright(repo, base)
        committed = [(path, why, f"committed in {_label(base)}..HEAD")
                     for path, why in _committed(repo, base)
                     if not (adopted and match_any(path, list(ADOPTED)))]
        found = committed + _worktree(repo)
    except UsageError as exc:
        return _usage(name, exc)
    shown = sorted((_shown(path), _shown(why), where) for path, why, where in found
                   if not match_any(path, ignore or []))
    messages = [f"{path}:1: {why} ({where})" for path, why, where in shown]
    return result(name, messages, check=name, notes=None if messages else [
        "no protected path changed (committed or in the working tree)"])
