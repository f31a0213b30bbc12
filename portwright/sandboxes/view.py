"""What bubblewrap shows of the host: a minimal read-only view, never the host root.

Binding ``/`` read-only would show the engine's socket (root on the host to whoever can
write to it), every home folder with its ``.ssh``, ``/etc/shadow``, the evidence key and a
writable global ``/proc/sys``. The view instead holds ``/usr``, the ``/bin``, ``/sbin`` and
``/lib*`` links of a merged-usr system (or those folders, read-only), a fresh ``/dev`` and
``/proc`` with ``/proc/sys`` read-only, and an ``/etc`` made of the entries toolchains read
(:data:`ETC_SHOWN`): copied, links kept as links, into a folder of the sandbox's own
(:func:`etc_copy`) and bound once — binding each entry would cost a mount apiece, about
half a millisecond every command. Nothing of ``/home``, ``/root``, ``/var``, ``/run`` or
``/opt``.

Commands never run as root: :func:`drop_to` makes bubblewrap's process the unprivileged
user before it creates its namespaces, so what it makes on the host is that user's.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

logger = logging.getLogger(__name__)

_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_SHOWN = (
    "alternatives", "bash.bashrc", "ca-certificates", "ca-certificates.conf",
    "debian_version", "environment", "fonts", "gai.conf", "group", "host.conf", "hostname",
    "hosts", "inputrc", "java-*", "ld.so.cache", "ld.so.conf", "ld.so.conf.d",
    "locale.alias", "locale.conf", "localtime", "magic", "magic.mime", "mime.types",
    "nsswitch.conf", "os-release", "passwd", "perl", "profile", "protocols", "python3",
    "python3.*", "resolv.conf", "rpc", "services", "shells", "ssl/certs", "ssl/openssl.cnf",
    "terminfo", "timezone",
)
"""What of ``/etc`` a command sees: what toolchains read, no secrets (no ``shadow``,
``gshadow``, ``sudoers``, ``ssh``, ``ssl/private``, ``docker``, ``pip.conf``, ``npmrc``)."""
KERNEL = ["--dev", "/dev", "--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys"]
"""A fresh ``/dev`` and ``/proc``; ``/proc/sys`` (the kernel's settings) read-only over it
(bubblewrap covers it only where it is writable to begin with)."""
ISOLATION = ["--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent",
             "--new-session", "--cap-drop", "ALL", "--clearenv"]
"""Every namespace of its own (no network), no nested user namespaces, no capabilities,
a new session (no terminal to push input into), no inherited environment."""


def _copy_entry(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    if source.is_symlink():
        target.symlink_to(source.readlink())
    elif source.is_dir():
        shutil.copytree(source, target, symlinks=True)
    elif source.is_file():
        shutil.copy2(source, target)


@contextlib.contextmanager
def etc_copy(parent: Path | None = None) -> Iterator[Path]:
    """A copy of the :data:`ETC_SHOWN` entries of ``/etc`` (modes kept, links kept as
    links) in a new folder others may enter, removed on exit; yields the copy's ``etc``.

    By default the folder is made in ``/tmp`` itself, not under ``$TMPDIR``: a private
    ``$TMPDIR`` (mode 0700) would keep the sandbox's unprivileged user from reaching it."""
    shared = Path("/tmp")
    base = Path(tempfile.mkdtemp(prefix="portwright-etc-", dir=parent if parent is not None
                                 else shared if shared.is_dir() else None))
    try:
        base.chmod(0o755)
        etc = base / "etc"
        etc.mkdir(mode=0o755)
        host = Path("/etc")
        for source in sorted({p for pattern in ETC_SHOWN for p in host.glob(pattern)}):
            try:
                _copy_entry(source, etc / source.relative_to(host))
            except OSError as exc:  # unreadable to this user: not shown
                logger.info("not showing %s in the sandbox: %s", source, exc)
        yield etc
    finally:
        shutil.rmtree(base, ignore_errors=True)


def system_view(etc: Path) -> list[str]:
    """bwrap arguments that show the host's system folders read-only, and ``etc`` (an
    :func:`etc_copy`) as ``/etc``."""
    args: list[str] = []
    for top in _SYSTEM:
        path = Path(top)
        if path.is_symlink():
            args += ["--symlink", str(path.readlink()), top]
        elif path.is_dir():
            args += ["--ro-bind", top, top]
    return [*args, "--ro-bind", str(etc), "/etc"]


def shown_paths() -> list[Path]:
    """The host folders the view binds (a folder they hold is visible to commands)."""
    return [Path(top) for top in _SYSTEM if Path(top).is_dir() and not Path(top).is_symlink()]


def probe_command(bwrap: str, etc: Path) -> list[str]:
    """The command :func:`~portwright.sandboxes.selection.bwrap_status` runs: the same view
    and isolation as every command, running ``true``."""
    return [bwrap, *system_view(etc), *KERNEL, "--tmpfs", "/tmp", "--remount-ro", "/",
            *ISOLATION, "--", "true"]


def drop_to(uid: int, gid: int) -> Callable[[], None]:
    """A ``preexec_fn`` that makes the child ``uid:gid`` (no supplementary groups) when this
    process runs as someone else; bwrap then creates its namespaces as that user."""

    def drop() -> None:
        if (uid, gid) != (os.getuid(), os.getgid()):
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)

    return drop
