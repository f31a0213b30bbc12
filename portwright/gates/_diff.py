"""Diffs of the downstream repo between a base revision and HEAD, via git.

Diffs are parsed with unidiff here, as in :mod:`~portwright.gates.weakening` and
:mod:`~portwright.gates.tamper`: a gate reads one small diff, where unidiff's cost does
not show. The hot paths that read whole histories use the one hand parser,
:func:`portwright.evidence.patch.parse_patch` (``benchmarks/diff_parse.py``)."""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path

from unidiff.patch import PatchSet

from portwright.errors import RepositoryError, RevisionError
from portwright.vcs import plumbing

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def git(repo: Path, *args: str) -> str:
    """``git args…`` in ``repo`` as text; a failure is a :class:`RevisionError`."""
    try:
        out = plumbing.git(repo, *args)
    except RepositoryError as exc:
        raise RevisionError(exc.message, file=repo,
                            fix="check the revision (does the base exist in this repo?)") from exc
    return out.decode("utf-8", errors="replace")


def default_base(repo: Path, base: str | None) -> str:
    """``base`` verified, or ``HEAD~1``, or the empty tree for a first commit."""
    if base == EMPTY_TREE:  # what this function gives for a first commit: no commit
        return base
    if base is not None:
        plumbing.rev_parse(repo, base)  # says why when it names no commit
        return base
    has_parent = plumbing.git(repo, "rev-parse", "--verify", "--quiet", "HEAD~1",
                              ok_codes=(0, 1)).strip()
    return "HEAD~1" if has_parent else EMPTY_TREE


@dataclass(frozen=True)
class Change:
    """One file of a diff."""

    status: str
    """``A``, ``M``, ``D``, ``R`` (rename), ``C``, ``T``."""
    path: str
    """Path at HEAD (for a deletion: the deleted path)."""
    old_path: str | None = None
    """Path at base, for renames and copies."""


_FULL_SHA = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")
_RAW: dict[tuple[str, str, str], bytes] = {}
"""What ``git diff --name-status`` printed between two full commit shas, by repository:
fixed by the commits themselves (the gates of a phase, and the phases run on one commit,
ask the same)."""
_RAW_LOCK = threading.Lock()


def _raw_name_status(repo: Path, base: str, head: str) -> bytes:
    """``git diff --name-status -M -z base head``; between two full shas, asked of git
    once per process."""
    fixed = bool(_FULL_SHA.fullmatch(base) and _FULL_SHA.fullmatch(head))
    key = (str(Path(repo).absolute()), base, head)
    if fixed:
        with _RAW_LOCK:
            known = _RAW.get(key)
        if known is not None:
            return known
    try:
        raw = plumbing.git(repo, "diff", "--name-status", "-M", "-z", base, head)
    except RepositoryError as exc:
        raise RevisionError(exc.message, file=repo,
                            fix="check the revision (does the base exist in this repo?)") from exc
    if fixed:
        with _RAW_LOCK:
            if len(_RAW) >= 256:
                _RAW.clear()
            _RAW[key] = raw
    return raw


def name_status(repo: Path, base: str, head: str = "HEAD", *, exact: bool = False) -> list[Change]:
    """The changed files of ``base..head``. ``exact`` keeps a file name that is not UTF-8 as
    ``os.fsdecode`` does, so that it names the same file when passed back to git (print it
    with ``errors="replace"``); otherwise such bytes read as U+FFFD."""
    raw = _raw_name_status(repo, base, head)
    fields = [os.fsdecode(f) if exact else f.decode("utf-8", errors="replace")
              for f in raw.split(b"\0") if f]
    changes: list[Change] = []
    index = 0
    while index < len(fields):
        status = fields[index][0]
        if status in "RC":
            changes.append(Change(status, fields[index + 2], fields[index + 1]))
            index += 3
        else:
            changes.append(Change(status, fields[index + 1]))
            index += 2
    return changes


def added_lines(repo: Path, base: str, path: str, head: str = "HEAD") -> set[int]:
    """Line numbers (at ``head``) of ``path`` that the diff adds or changes."""
    out = git(repo, "diff", "-U0", "--no-color", base, head, "--", path)
    return {line.target_line_no for patched in PatchSet(out) for hunk in patched
            for line in hunk if line.is_added and line.target_line_no is not None}


def unified(repo: Path, base: str, paths: list[str], head: str = "HEAD") -> str:
    """The diff of ``paths`` as text, whatever ``.gitattributes`` says (``-diff``, ``binary``,
    a textconv or external driver would hide or rewrite the lines the checks read)."""
    if not paths:
        return ""
    return git(repo, "diff", "-U3", "--no-color", "--text", "--no-ext-diff", "--no-textconv",
               "-M", base, head, "--", *paths)


def tracked(repo: Path) -> list[str]:
    return [p for p in git(repo, "ls-files", "-z").split("\0") if p]
