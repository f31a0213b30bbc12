"""The evidence key: a per-machine secret that signs every evidence record.

Evidence records and logs live in the state folder, outside every sandbox; still, a
record counts only when it carries a signature made with this key, which lives outside
any repository and outside every sandbox, so a record written or edited by anyone else
does not verify:

1. ``$PORTWRIGHT_EVIDENCE_KEY`` (an absolute path), if set;
2. else ``$XDG_STATE_HOME/portwright/evidence.key``;
3. else ``~/.local/state/portwright/evidence.key``.

The key is 32 random bytes, created on first use with mode ``0600`` in a folder of mode
``0700`` (written to a private temporary file and hard-linked into place, so two processes
creating it at once agree on one key and nobody reads a half-written one). A key file or
folder that others can read or write, that another user owns, or that lies inside a git
repository is refused with :class:`EvidenceKeyError`.

Neither the Docker sandbox nor bubblewrap's minimal view of the host shows the key's
folder: whoever opens a sandbox passes it in (:func:`evidence_key_dir`, the ``key_dir`` of
:func:`portwright.sandboxes.open_sandbox`), and bubblewrap covers it where a view might
show it.
The local sandbox is no isolation: commands in it can read the key.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import stat
import tempfile
from pathlib import Path

from portwright.environment import default_state_home, private_folder
from portwright.errors import ConfigError

logger = logging.getLogger(__name__)

__all__ = ["ENV_VAR", "KEY_BYTES", "EvidenceKeyError", "evidence_key", "evidence_key_dir",
           "evidence_key_path"]

ENV_VAR = "PORTWRIGHT_EVIDENCE_KEY"
"""Environment variable naming the key file (an absolute path)."""
KEY_BYTES = 32
"""Length of the key."""


class EvidenceKeyError(ConfigError):
    """The evidence key cannot be created or read, or is not private to this user."""


def evidence_key_path() -> Path:
    """Where the key is (whether or not it exists yet)."""
    explicit = os.environ.get(ENV_VAR, "").strip()
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_absolute():
            raise EvidenceKeyError(f"{ENV_VAR} must be an absolute path, not {explicit!r}",
                                   key=ENV_VAR, fix="point it at a file outside any "
                                   "repository, e.g. ~/.local/state/portwright/evidence.key")
        return path
    return default_state_home() / "evidence.key"


def _fix() -> str:
    return (f"set {ENV_VAR} to a file in a folder only you can use (mode 0700), outside any "
            "repository")


def _refuse_inside_repository(path: Path) -> None:
    for parent in path.parents:
        if (parent / ".git").exists():
            raise EvidenceKeyError("the evidence key must not live inside a git repository "
                                   f"({parent}): sandboxes mount repositories",
                                   file=path, fix=_fix())


def _check_private(path: Path, st: os.stat_result, what: str, wanted: int) -> None:
    if st.st_uid != os.geteuid():
        raise EvidenceKeyError(f"the evidence key {what} belongs to uid {st.st_uid}, not to "
                               f"this user (uid {os.geteuid()})", file=path, fix=_fix())
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o077:
        raise EvidenceKeyError(f"the evidence key {what} has mode {mode:04o}: others can "
                               f"reach it", file=path,
                               fix=f"chmod {wanted:o} {path} (or {_fix()})")


def evidence_key_dir() -> Path:
    """The key's folder, created (mode ``0700``) if missing and checked to be private."""
    path = evidence_key_path()
    _refuse_inside_repository(path)
    folder = path.parent
    try:
        private_folder(folder)  # when missing: 0700 with its missing parents, whatever the umask
    except OSError as exc:
        raise EvidenceKeyError(f"cannot create the evidence key's folder: {exc.strerror}",
                               file=folder, fix=_fix()) from exc
    try:
        st = folder.stat()
    except OSError as exc:
        raise EvidenceKeyError(f"cannot read the evidence key's folder: {exc.strerror}",
                               file=folder, fix=_fix()) from exc
    if not stat.S_ISDIR(st.st_mode):
        raise EvidenceKeyError("the evidence key's folder is not a folder", file=folder,
                               fix=_fix())
    _check_private(folder, st, "folder", 0o700)
    return folder


def _read(path: Path) -> bytes | None:
    """The key's bytes, None when the file does not exist."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise EvidenceKeyError(f"cannot read the evidence key: {exc.strerror}", file=path,
                               fix=_fix()) from exc
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(handle.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise EvidenceKeyError("the evidence key is not a regular file", file=path,
                                   fix=_fix())
        _check_private(path, st, "file", 0o600)
        data = handle.read(KEY_BYTES + 1)
    if len(data) != KEY_BYTES:
        raise EvidenceKeyError(f"the evidence key has {len(data)} bytes, not {KEY_BYTES}",
                               file=path, fix="remove it (records it signed will no longer "
                               "verify) and let portwright create a new one")
    return data


def _create(path: Path) -> None:
    """Write a new key atomically: a private temporary file, hard-linked into place (a key
    another process linked first wins)."""
    fd, tmp = tempfile.mkstemp(prefix=".evidence-", dir=path.parent)  # mode 0600
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(secrets.token_bytes(KEY_BYTES))
            handle.flush()
            os.fsync(handle.fileno())
        with contextlib.suppress(FileExistsError):
            os.link(tmp, path)
            logger.info("created the evidence key %s", path)
    except OSError as exc:
        raise EvidenceKeyError(f"cannot create the evidence key: {exc.strerror}", file=path,
                               fix=_fix()) from exc
    finally:
        with contextlib.suppress(OSError):
            Path(tmp).unlink()


def evidence_key() -> bytes:
    """This machine's evidence key, created on first use."""
    evidence_key_dir()
    path = evidence_key_path()
    key = _read(path)
    if key is None:
        _create(path)
        key = _read(path)
        if key is None:
            raise EvidenceKeyError("the evidence key vanished right after it was created",
                                   file=path, fix=_fix())
    return key
