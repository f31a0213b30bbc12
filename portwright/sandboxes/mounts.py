"""What a sandbox mounts, and what it refuses to mount.

The worktree is mounted read-write; everything git keeps is read-only:

- the worktree's own ``.git`` (a pointer file ``gitdir: …/.git/worktrees/NAME``, or a
  folder), bound over itself, and the main repository's ``.git`` folders the pointer
  names (git inside needs them at the same absolute path);
- every ``.git`` below the top, found when the sandbox starts: a submodule's pointer file,
  a nested repository's folder. Every folder on the way from the worktree to one of them
  is bound onto itself as well: a mount point cannot be renamed or removed, so a command
  cannot move ``sub/`` away and plant a new ``sub/.git`` where it was;
- the upstream checkout and the ``.git`` folders its pointer names.

A ``.git`` that is a symbolic link is refused (git never makes one, and a bind would
follow it). So is a mount that would show more of the host than a checkout: ``/``, a
home folder or a folder above one, a folder holding the evidence key (whose folder the
caller passes in as ``key_dir``: sandboxes do not import the run store) or a container
engine's socket, and — for the upstream and
git's folders — a folder that holds the worktree or is not the top of a git checkout.

Some host folders must stay out of reach even where a mounted folder holds them:
:func:`masked_dirs` names them (the evidence key's folder), for bubblewrap to cover.
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from portwright.errors import ConfigError, SandboxError

_UPSTREAM_FIX = ("point upstream.source in portwright.toml at a clone of the upstream "
                 "project of its own (a folder with .git, outside the downstream worktree "
                 "and the home folder)")
_ENGINE_SOCKETS = ("/run/docker.sock", "/var/run/docker.sock", "/run/containerd",
                   "/var/run/containerd", "/run/podman", "/run/crio")


@dataclass(frozen=True)
class Mount:
    """One bind mount, at the same absolute path inside as outside."""

    path: Path
    read_only: bool


def _gitdir(pointer: Path) -> Path | None:
    """The folder a ``.git`` pointer file names (None when it names none)."""
    text = pointer.read_text(encoding="utf-8", errors="replace").strip()
    if not text.startswith("gitdir:"):
        return None
    gitdir = Path(text.removeprefix("gitdir:").strip())
    return gitdir if gitdir.is_absolute() else (pointer.parent / gitdir).resolve()


def _git_admin_dirs(checkout: Path) -> list[Path]:
    """The ``.git`` folders outside ``checkout`` that git inside it needs."""
    dot_git = checkout / ".git"
    if dot_git.is_symlink() or not dot_git.is_file():
        return []
    gitdir = _gitdir(dot_git)
    if gitdir is None:
        return []
    common_file = gitdir / "commondir"
    common = gitdir
    if common_file.is_file():
        rel = Path(common_file.read_text(encoding="utf-8").strip())
        common = (rel if rel.is_absolute() else gitdir / rel).resolve()
    if common == checkout or checkout in common.parents:
        return []
    return [common] if gitdir == common or common in gitdir.parents else [common, gitdir]


def nested_git(worktree: Path) -> tuple[list[Path], list[Path]]:
    """Every ``.git`` below the top of ``worktree`` (not inside a ``.git``), and every folder
    between the worktree and one of them; links are not followed.

    Raises :class:`SandboxError` for a ``.git`` that is a symbolic link.
    """
    found: list[Path] = []
    folders: set[Path] = set()
    stack = [worktree]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if entry.name == ".git":
                if entry.is_symlink():
                    raise SandboxError(
                        f"{entry.path} is a symbolic link (git never makes one; a command "
                        "may have planted it)",
                        fix=f"remove it (`rm {entry.path}`) and check the worktree's history")
                if folder != worktree:
                    found.append(Path(entry.path))
                    step = folder
                    while step != worktree:
                        folders.add(step)
                        step = step.parent
            elif entry.is_dir(follow_symlinks=False):
                stack.append(Path(entry.path))
    return sorted(found), sorted(folders)


def homes() -> list[Path]:
    """The home folders of this process's user and of the user who ran ``sudo``."""
    found = {Path.home()}
    users = [os.getuid()]
    if os.environ.get("SUDO_UID", "").isdigit():
        users.append(int(os.environ["SUDO_UID"]))
    for uid in users:
        try:
            found.add(Path(pwd.getpwuid(uid).pw_dir))
        except KeyError:
            continue
    return sorted({home.resolve() for home in found if str(home) not in ("", "/")})


def engine_sockets() -> list[Path]:
    """Where container engines listen (whether or not they run here): whoever can write to
    one is root on the host."""
    found = [Path(p) for p in _ENGINE_SOCKETS]
    host = os.environ.get("DOCKER_HOST", "")
    if host.startswith("unix://"):
        found.append(Path(host.removeprefix("unix://")))
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if runtime.startswith("/"):
        found.append(Path(runtime) / "docker.sock")
    return sorted({path.resolve() for path in found})


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def exposure(path: Path, key_dir: Path) -> str | None:
    """What mounting ``path`` would show of the host that no sandbox may see (``key_dir``:
    the evidence key's folder), or None."""
    if path == Path("/"):
        return "it is the host's root folder"
    for home in homes():
        if _inside(home, path):
            return f"it is or holds the home folder {home}"
    key = key_dir.resolve()
    if _inside(key, path):
        return f"it holds the evidence key ({key})"
    for socket in engine_sockets():
        if _inside(socket, path):
            return f"it holds a container engine's socket ({socket})"
    return None


def _check_worktree(worktree: Path, key_dir: Path) -> None:
    problem = exposure(worktree, key_dir)
    if problem is not None:
        raise SandboxError(f"refusing to mount the worktree {worktree} read-write: {problem}",
                           fix="run in a worktree of its own (a git checkout of the project)")


def _check_git_dir(path: Path, worktree: Path, named_by: Path, key_dir: Path) -> None:
    problem = exposure(path, key_dir)
    if problem is None and _inside(worktree, path):
        problem = "it holds the worktree"
    if problem is None and not (path / "HEAD").is_file():
        problem = "it is not a git folder (no HEAD)"
    if problem is not None:
        raise SandboxError(f"refusing to mount {path}, named by {named_by / '.git'}: {problem}",
                           fix=f"repair {named_by / '.git'} (`git worktree repair`) or "
                               "recreate the worktree")


def check_upstream(upstream: Path, worktree: Path, key_dir: Path) -> None:
    """Refuse (:class:`ConfigError`) an upstream that is not the top of a git checkout of its
    own, or whose mount would show the worktree's surroundings or host secrets."""
    problem = exposure(upstream, key_dir)
    if problem is None and _inside(worktree, upstream):
        problem = f"it holds the worktree {worktree}"
    if problem is None and not upstream.is_dir():
        problem = "it is not a folder"
    if problem is None:
        dot_git = upstream / ".git"
        if dot_git.is_symlink() or not (dot_git.is_dir() or dot_git.is_file()):
            problem = "it is not the top of a git checkout (no .git in it)"
    if problem is not None:
        raise ConfigError(f"refusing to mount the upstream {upstream}: {problem}",
                          key="upstream.source", fix=_UPSTREAM_FIX)


def _dot_git(checkout: Path) -> Path | None:
    dot_git = checkout / ".git"
    if dot_git.is_symlink():
        raise SandboxError(f"{dot_git} is a symbolic link (git never makes one)",
                           fix=f"remove it and recreate the worktree of {checkout}")
    return dot_git if dot_git.exists() else None


def _admin_mounts(checkout: Path, worktree: Path, key_dir: Path) -> list[Mount]:
    admin = _git_admin_dirs(checkout)
    for path in admin:
        _check_git_dir(path, worktree, checkout, key_dir)
    return [Mount(p, read_only=True) for p in admin]


def sandbox_mounts(worktree: Path, upstream: Path | None = None, *,
                   key_dir: Path) -> list[Mount]:
    """Mounts for a run, checked: outer paths first, so later (deeper) ones bind over them.
    ``key_dir`` is the evidence key's folder, which no mount may show.

    Raises :class:`SandboxError` for a worktree or git folder that may not be mounted, and
    :class:`ConfigError` for such an upstream (see the module's docstring).
    """
    worktree = worktree.resolve()
    _check_worktree(worktree, key_dir)
    mounts = [Mount(worktree, read_only=False)]
    top = _dot_git(worktree)
    if top is not None:
        mounts += _admin_mounts(worktree, worktree, key_dir)
        mounts.append(Mount(top, read_only=True))
    found, folders = nested_git(worktree)
    mounts += [Mount(folder, read_only=False) for folder in folders]
    mounts += [Mount(dot_git, read_only=True) for dot_git in found]
    if upstream is not None:
        upstream = upstream.resolve()
        if upstream != worktree:
            check_upstream(upstream, worktree, key_dir)
            mounts.append(Mount(upstream, read_only=True))
            mounts += _admin_mounts(upstream, worktree, key_dir)
    return _unique(mounts)


def cache_mount(cache: Path, worktree: Path, *, read_only: bool, key_dir: Path) -> Mount:
    """A build cache's folder (a compiler cache kept between sandboxes), checked: a folder
    of its own, outside the worktree and holding none of it, showing nothing
    :func:`exposure` refuses.

    Raises :class:`SandboxError` for a cache that may not be mounted.
    """
    folder, worktree = cache.resolve(), worktree.resolve()
    problem = exposure(folder, key_dir)
    if problem is None and (_inside(worktree, folder) or _inside(folder, worktree)):
        problem = "it holds the worktree or lies in it"
    if problem is None and (cache.is_symlink() or not folder.is_dir()):
        problem = "it is not a folder"
    if problem is not None:
        raise SandboxError(f"refusing to mount the build cache {cache}: {problem}",
                           fix="keep the cache in a folder of its own beside the worktree")
    return Mount(folder, read_only=read_only)


def _unique(mounts: Iterable[Mount]) -> list[Mount]:
    """One mount per path (read-only wins), outer paths first."""
    read_only: dict[Path, bool] = {}
    for mount in mounts:
        read_only[mount.path] = read_only.get(mount.path, False) or mount.read_only
    return sorted((Mount(p, ro) for p, ro in read_only.items()),
                  key=lambda m: (len(m.path.parts), str(m.path)))


def repository_tops(worktree: Path, mounts: Iterable[Mount]) -> frozenset[str]:
    """The worktree and the top folder of every repository mounted in it (the folders that
    hold a read-only ``.git``)."""
    worktree = worktree.resolve()
    tops = {str(m.path.parent) for m in mounts if m.read_only and m.path.name == ".git"
            and worktree in m.path.parents}
    return frozenset(tops | {str(worktree)})


def read_only_paths(mounts: Iterable[Mount]) -> frozenset[str]:
    """The paths of the read-only mounts: no command can change what is in them."""
    return frozenset(str(m.path) for m in mounts if m.read_only)


def masked_dirs(key_dir: Path) -> list[Path]:
    """Host folders a sandbox must cover with an empty tmpfs where a mounted folder holds
    them: the evidence key's folder ``key_dir``, when it exists."""
    return [key_dir.resolve()] if key_dir.is_dir() else []
