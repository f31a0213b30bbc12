"""Where the real repositories of the labelled benchmarks live on this machine.

The labels in ``benchmarks/labels/`` name public repositories by ``owner/name`` and
commits by sha; no third-party source is kept here. To score, clone each named
repository under one folder as ``<folder>/<owner>/<name>`` (a full clone: the labels
reach back into history) and point ``PORTWRIGHT_REAL_REPOS`` at the folder::

    export PORTWRIGHT_REAL_REPOS=~/src/real
    git clone https://github.com/markdown-it/linkify-it ~/src/real/markdown-it/linkify-it

Public API:

- ``root() -> Path | None`` — the folder, or None when unset or missing
- ``repo(name: str) -> Path | None`` — one repository's clone, or None when absent
- ``checkout(name: str, sha: str, cache: Path) -> Path`` — a clone of ``name`` whose HEAD is
  ``sha`` (detached), kept under ``cache`` so a rerun reuses it
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ENV = "PORTWRIGHT_REAL_REPOS"


def root() -> Path | None:
    """The folder holding the clones (``$PORTWRIGHT_REAL_REPOS``), or None."""
    value = os.environ.get(ENV, "").strip()
    if not value:
        return None
    path = Path(value).expanduser()
    return path if path.is_dir() else None


def repo(name: str) -> Path | None:
    """The clone of ``owner/name``, or None when it is not there."""
    base = root()
    if base is None:
        return None
    path = base / name
    return path if (path / ".git").exists() or (path / "HEAD").exists() else None


def _git(where: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(where), *args], capture_output=True, text=True,
                          check=True)
    return done.stdout.strip()


def checkout(name: str, sha: str, cache: Path) -> Path:
    """A clone of ``name`` with ``sha`` checked out (detached), under ``cache``."""
    source = repo(name)
    if source is None:
        raise FileNotFoundError(f"no clone of {name} under ${ENV}")
    target = cache / name.replace("/", "+") / sha[:12]
    if not (target / ".git").exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "-q", "--shared", "--no-checkout", str(source),
                        str(target)], check=True)
    if _git(target, "rev-parse", "HEAD") != sha:
        _git(target, "checkout", "-q", "--detach", sha)
    return target
