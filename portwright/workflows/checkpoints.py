"""The checkpoint store of a project's runs, and what its faults mean.

Checkpoints go to an SQLite file in the state folder (:data:`CHECKPOINTS`), or to the
Postgres server of ``[runs] checkpoint_url``. Whatever goes wrong with the store is one of
portwright's errors, never the driver's exception:

- a Postgres server that does not answer (nothing listens, out of reach, starting up) is
  :class:`~portwright.errors.CheckpointUnavailable`, exit 1;
- one that answers and refuses (a wrong password, no such role or database, a role that
  may not create the tables) is a :class:`~portwright.errors.ConfigError` naming
  ``[runs] checkpoint_url`` and where it was set, exit 2;
- an SQLite file that is not a database, or a damaged one, is a
  :class:`~portwright.errors.RunStateError` naming the file, with the fix (move it aside);
  one that cannot be opened or written (no rights, a full disk, held by another process)
  is :class:`~portwright.errors.CheckpointUnavailable`.

The same holds for a fault while the store is in use (a server that goes away mid-run, a
page found damaged on a read): the error is raised where the store was opened.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver

from portwright.config import CONFIG_FILE
from portwright.errors import (
    CheckpointUnavailable,
    ConfigError,
    PortwrightError,
    RunStateError,
    UsageError,
)
from portwright.redact import redact_data

if TYPE_CHECKING:
    from portwright.project import Project

logger = logging.getLogger(__name__)

CHECKPOINTS = "checkpoints.sqlite"
"""The SQLite checkpoint database, in a project's state folder."""

KEY = "runs.checkpoint_url"
CONNECT_TIMEOUT = 10
"""Seconds a Postgres server has to answer a connection (unless the URL sets
``connect_timeout``): a host out of reach is an error, not a hang."""
_DAMAGED = ("SQLITE_NOTADB", "SQLITE_CORRUPT")
_BUSY = ("starting up", "shutting down", "recovery mode", "too many", "connection slots",
         "not yet accepting")
"""What a Postgres server answers when it is there but cannot take a connection yet."""
_REFUSALS = ("28", "3D", "42501")
"""SQLSTATEs of a refusal: authorization (class 28), no such database (3D), insufficient
privilege (42501)."""


def checkpoint_file(project: Project) -> Path:
    """The project's SQLite checkpoint database (used when no ``checkpoint_url`` is set)."""
    return project.state_dir / CHECKPOINTS


@contextmanager
def open_checkpointer(project: Project) -> Iterator[BaseCheckpointSaver[Any]]:
    """The checkpoint saver of the project's runs; its faults are portwright's errors (see
    the module)."""
    url = project.config.runs.checkpoint_url
    if url:
        with _postgres(project, url) as saver:
            yield saver
        return
    with _sqlite(checkpoint_file(project)) as saver:
        yield saver


@contextmanager
def _sqlite(path: Path) -> Iterator[BaseCheckpointSaver[Any]]:
    if path.is_dir():
        raise RunStateError("is a folder, not the checkpoint database", file=path,
                            fix=f"move it aside (`mv {path} {path}.moved`); portwright makes "
                                "a new database there")
    try:
        conn = sqlite3.connect(path, check_same_thread=False)
    except sqlite3.Error as exc:
        raise sqlite_error(path, exc) from exc
    try:
        try:
            # WAL, synchronised at checkpoints of the log rather than at every commit: a
            # write is durable when the process dies (a kill, a crash: what resume is for)
            # and the file is never corrupt; an OS crash or power cut may lose the last
            # writes, and the run then resumes from an earlier step, as it does from a kill
            # — which is what the run's git commits and evidence files, never synced
            # either, already give. An fsync per write cost ~7 ms on a loaded disk, twice
            # per node.
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            saver = SqliteSaver(conn, serde=_serde())
            saver.setup()  # now, not at the first read: a damaged file is found here
        except sqlite3.Error as exc:
            raise sqlite_error(path, exc) from exc
        try:
            yield saver
        except sqlite3.Error as exc:
            raise sqlite_error(path, exc) from exc
    finally:
        conn.close()


def sqlite_error(path: Path, exc: sqlite3.Error) -> PortwrightError:
    """What an SQLite error on the checkpoint database means: damaged (the file), or out
    of reach (rights, space, a lock)."""
    if getattr(exc, "sqlite_errorname", "") in _DAMAGED:
        return RunStateError(
            f"the checkpoint database is damaged ({exc}): the checkpoints of this project's "
            "runs are lost; their run folders remain", file=path,
            fix=f"move it aside with its -wal and -shm files, if any (`mv {path} "
                f"{path}.damaged`): portwright makes a new one; the runs it held cannot be "
                "resumed (`portwright runs` lists them from their run folders)")
    return CheckpointUnavailable(
        f"the checkpoint database {path} cannot be used: {exc}",
        fix="check that the state folder is yours, writable and not full, and that no "
            "other process holds the database; or set [runs] checkpoint_url")


@contextmanager
def _postgres(project: Project, url: str) -> Iterator[BaseCheckpointSaver[Any]]:
    try:
        import psycopg
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg.rows import dict_row
    except ImportError as exc:
        raise UsageError("[runs] checkpoint_url needs the postgres extra", key=KEY,
                         fix="pip install 'portwright[postgres]', or unset it") from exc
    where = project.config.origin(KEY, project.root / CONFIG_FILE)
    options: dict[str, Any] = {}
    if "connect_timeout" not in parse_qs(urlsplit(url).query):
        options["connect_timeout"] = CONNECT_TIMEOUT
    try:
        conn = psycopg.Connection.connect(url, autocommit=True, prepare_threshold=0,
                                          row_factory=dict_row, **options)
    except psycopg.Error as exc:
        raise postgres_error(url, where, exc) from exc
    with conn:
        saver = PostgresSaver(conn)
        saver.serde = _serde()
        try:
            saver.setup()
            yield saver
        except psycopg.OperationalError as exc:  # the server went away, or refused a write
            raise postgres_error(url, where, exc) from exc
        except psycopg.Error as exc:
            if not str(exc.sqlstate or "").startswith(_REFUSALS):
                raise
            raise postgres_error(url, where, exc) from exc


def postgres_error(url: str, where: str, exc: Exception) -> PortwrightError:
    """What a Postgres error means: the server refused (the setting is wrong, exit 2) or
    did not answer (exit 1)."""
    text = " ".join(str(exc).split())
    parts = urlsplit(url)
    server = f"{parts.hostname or 'localhost'}:{parts.port or 5432}{parts.path}"
    sqlstate = str(getattr(exc, "sqlstate", None) or "")
    refused = sqlstate.startswith(_REFUSALS) or "no password supplied" in text \
        or ("FATAL:" in text and not any(busy in text for busy in _BUSY))
    if refused:
        return ConfigError(f"the Postgres server at {server} refused portwright: {text}",
                           file=where, key=KEY,
                           fix=f"correct the user, password or database of the URL in {where} "
                               "(or create them on the server; the role needs the right to "
                               "create tables), or unset it to keep checkpoints in the state "
                               "folder")
    return CheckpointUnavailable(
        f"[runs] checkpoint_url ({where}): the Postgres server at {server} does not answer: "
        f"{text}",
        fix=f"start the server (or make {server} reachable), or point checkpoint_url at one "
            "that runs; unset it to keep checkpoints in the state folder's SQLite file")


class _RedactingSerializer(JsonPlusSerializer):
    """Writes every checkpoint and pending write redacted (:mod:`portwright.redact`): no
    secret a failure, a model or a command echoed reaches the checkpoint store."""

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        return super().dumps_typed(redact_data(obj))


def _serde() -> JsonPlusSerializer:
    """Checkpoints deserialise only the state's own types (and LangGraph's safe ones), and
    are written redacted."""
    from portwright.workflows import state

    allowed = [("portwright.workflows.state", name) for name in
               ("CycleState", "Node", "RunStatus", "Step", "GateRef") if hasattr(state, name)]
    allowed += [("portwright.workflows.sync_state", name) for name in
                ("SyncState", "SyncCommit", "SyncNode", "SyncStatus", "SyncStep", "Account",
                 "PortResult", "PortTask")]
    return _RedactingSerializer(allowed_msgpack_modules=allowed)
