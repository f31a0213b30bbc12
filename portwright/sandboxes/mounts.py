"""What a sandbox mounts: the worktree read-write, git metadata and upstream read-only.

A git worktree's ``.git`` is a pointer file (``gitdir: …/.git/worktrees/NAME``); git
inside the sandbox needs the main repository's ``.git`` at the same absolute path,
and the pointer must not be rewritable from inside (``gitdir: /tmp/evil``). So the
main ``.git`` is mounted read-only, and the pointer file (or a plain repository's
``.git`` folder) is bound read-only over itself.

Some host folders must stay out of reach even where the host root is visible (bubblewrap
binds ``/`` read-only): :func:`masked_dirs` names them, the folder of the evidence key
that signs evidence records first of all.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Mount:
    """One bind mount, at the same absolute path inside as outside."""

    path: Path
    read_only: bool


def _git_admin_dirs(checkout: Path) -> list[Path]:
    """The ``.git`` folders outside ``checkout`` that git inside it needs."""
    dot_git = checkout / ".git"
    if not dot_git.is_file():
        return []
    text = dot_git.read_text(encoding="utf-8", errors="replace").strip()
    if not text.startswith("gitdir:"):
        return []
    gitdir = Path(text.removeprefix("gitdir:").strip())
    if not gitdir.is_absolute():
        gitdir = (checkout / gitdir).resolve()
    common_file = gitdir / "commondir"
    common = gitdir
    if common_file.is_file():
        rel = Path(common_file.read_text(encoding="utf-8").strip())
        common = (rel if rel.is_absolute() else gitdir / rel).resolve()
    if common == checkout or checkout in common.parents:
        return []
    return [common] if gitdir == common or common in gitdir.parents else [common, gitdir]


def sandbox_mounts(worktree: Path, upstream: Path | None = None) -> list[Mount]:
    """Mounts for a run: outer paths first, so later (deeper) ones bind over them."""
    worktree = worktree.resolve()
    mounts = [Mount(worktree, read_only=False)]
    mounts += [Mount(p, read_only=True) for p in _git_admin_dirs(worktree)]
    if (worktree / ".git").exists():
        mounts.append(Mount(worktree / ".git", read_only=True))
    if upstream is not None:
        upstream = upstream.resolve()
        if upstream != worktree:
            mounts.append(Mount(upstream, read_only=True))
            mounts += [Mount(p, read_only=True) for p in _git_admin_dirs(upstream)]
    seen: set[Path] = set()
    unique: list[Mount] = []
    for mount in mounts:
        if mount.path not in seen:
            seen.add(mount.path)
            unique.append(mount)
    return sorted(unique, key=lambda m: len(m.path.parts))


def masked_dirs() -> list[Path]:
    """Host folders a sandbox that shows the host root must cover with an empty tmpfs: the
    evidence key's folder (:mod:`portwright.runs.keys`), when it exists."""
    from portwright.runs.keys import evidence_key_path

    folder = evidence_key_path().parent
    return [folder.resolve()] if folder.is_dir() else []
