"""One line per run for the runs page, cached in the state folder.

A run's summary (row, status, the node it is at, tokens and cost) comes from its last
checkpoint and its transcripts: a few milliseconds per run, too slow for a page listing a
thousand. Summaries are kept in ``<state>/web/summaries.json`` with a stamp per run: its
head checkpoint, the writes pending at it (an interrupt is one) and its folder's mtime. A
summary whose stamp still matches is reused; the others are read again. With the default
SQLite checkpointer every head comes from one query; with another saver, one lookup per
run. The cache is only ever a copy: deleting it costs one slow page.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import tempfile
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from portwright.errors import UsageError
from portwright.project import Project
from portwright.runs.report import spend
from portwright.runs.store import RunStore
from portwright.web.checkpoints import Checkpoints
from portwright.workflows import driver

logger = logging.getLogger(__name__)

CACHE = "summaries.json"
VERSION = 1

LABELS = {"running": "running", "waiting": "waiting for approval", "blocked": "blocked",
          "done": "done", "landed": "done (landed)"}
"""How a status reads on a page."""


def label(status: str) -> str:
    return LABELS.get(status, status)


class RunSummary(BaseModel):
    """What the runs page shows of one run."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    row: str
    status: str
    """running, waiting, blocked, done, landed."""
    node: str
    """The node it runs next or waits at ('-' when it has ended)."""
    asks: str = ""
    """The approval it waits for (``approve_spec``, …)."""
    reason: str = ""
    created: datetime
    updated: datetime | None = None
    """When its last node finished."""
    tokens: int = 0
    cost_usd: float = 0.0
    stamp: str = ""

    @property
    def label(self) -> str:
        return label(self.status)


def web_dir(project: Project) -> Path:
    folder = project.state_dir / "web"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


def heads(checkpoints: Checkpoints, run_ids: list[str]) -> dict[str, str]:
    """``checkpoint id:pending writes`` of each run's last checkpoint (missing: none)."""
    with checkpoints.lock:
        return _heads(checkpoints.saver, run_ids)


def _heads(saver: Any, run_ids: list[str]) -> dict[str, str]:
    conn = getattr(saver, "conn", None)
    if isinstance(conn, sqlite3.Connection):
        query = ("SELECT c.thread_id, c.cid, (SELECT COUNT(*) FROM writes w WHERE "
                 "w.thread_id = c.thread_id AND w.checkpoint_ns = '' AND "
                 "w.checkpoint_id = c.cid) FROM (SELECT thread_id, MAX(checkpoint_id) AS cid "
                 "FROM checkpoints WHERE checkpoint_ns = '' GROUP BY thread_id) AS c")
        try:
            rows = conn.execute(query).fetchall()
        except sqlite3.Error:  # not written yet: no tables
            return {}
        return {str(t): f"{c}:{n}" for t, c, n in rows}
    out: dict[str, str] = {}
    for run_id in run_ids:
        found = saver.get_tuple({"configurable": {"thread_id": run_id}})
        if found is not None:
            cid = found.config["configurable"].get("checkpoint_id", "")
            out[run_id] = f"{cid}:{len(found.pending_writes or [])}"
    return out


def stamp(project: Project, run_id: str, head: str) -> str:
    try:
        mtime = project.run_dir(run_id).stat().st_mtime_ns
    except OSError:
        mtime = 0
    return f"{head}|{mtime}"


def scan(runs_dir: Path) -> dict[str, int]:
    """The runs of the cycle in ``runs_dir`` (folders with a manifest, as
    :func:`portwright.workflows.driver.run_ids` counts them) and each folder's mtime; one
    directory read and two ``stat`` calls per run."""
    out: dict[str, int] = {}
    try:
        entries = os.scandir(runs_dir)
    except OSError:
        return out
    with entries:
        for entry in entries:
            if entry.name.startswith(("gates-", "verify-gap-", ".")) or not entry.is_dir(
                    follow_symlinks=False):
                continue
            try:
                os.stat(os.path.join(entry.path, "run.json"))  # noqa: PTH116,PTH118
                out[entry.name] = entry.stat(follow_symlinks=False).st_mtime_ns
            except OSError:
                continue
    return out


def _load(project: Project) -> dict[str, RunSummary]:
    path = web_dir(project) / CACHE
    try:
        data = json.loads(path.read_bytes())
        if data.get("version") != VERSION:
            return {}
        return {k: RunSummary.model_validate(v) for k, v in data["runs"].items()}
    except (OSError, ValueError, KeyError, AttributeError, ValidationError):
        return {}


def _save(project: Project, runs: dict[str, RunSummary]) -> None:
    folder = web_dir(project)
    data = {"version": VERSION, "runs": {k: v.model_dump(mode="json") for k, v in runs.items()}}
    fd, tmp = tempfile.mkstemp(prefix=".summaries-", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, separators=(",", ":"))
        Path(tmp).replace(folder / CACHE)
    except OSError as exc:
        logger.warning("could not keep the run summaries: %s", exc)
        with contextlib.suppress(OSError):
            Path(tmp).unlink()


def summarise(project: Project, run_id: str, current: driver.RunView, mark: str) -> RunSummary:
    """The summary of a run from its view and its folder."""
    values = current.values
    manifest = RunStore(project.runs_dir, run_id).manifest()
    steps = values.get("timeline") or []
    spent = spend(project.run_dir(run_id))
    asks = ""
    if current.waiting is not None:
        asks = str(current.waiting["action_requests"][0]["name"])
    return RunSummary(
        run_id=run_id, row=str(values.get("row", "")), status=current.status.value,
        node=asks or (current.next[0] if current.next else "-"), asks=asks,
        reason=str(values.get("reason", "")),
        created=manifest.created if manifest is not None else datetime.now(UTC),
        updated=datetime.fromisoformat(str(steps[-1]["finished"])) if steps else None,
        tokens=int(sum(v["tokens"] for v in spent.values())),
        cost_usd=round(sum(v["cost_usd"] for v in spent.values()), 6), stamp=mark)


class RunIndex:
    """The summaries of a project's runs, kept in memory and in the state folder, brought
    up to date on every look (only runs whose stamp changed are read again)."""

    def __init__(self, project: Project, checkpoints: Checkpoints) -> None:
        self.project = project
        self.checkpoints = checkpoints
        self._runs = _load(project)
        self._ordered = order(list(self._runs.values()))
        self._lock = threading.Lock()

    def _stamps(self) -> dict[str, str]:
        folders = scan(self.project.runs_dir)
        found = heads(self.checkpoints, list(folders))
        return {r: f"{found.get(r, '')}|{mtime}" for r, mtime in folders.items()}

    def stamp(self) -> str:
        """Changes whenever a run starts, moves or ends (what the runs page's stream
        watches)."""
        return ";".join(f"{k}={v}" for k, v in sorted(self._stamps().items()))

    def runs(self) -> list[RunSummary]:
        """Every run of the cycle, waiting ones first, then newest first."""
        marks = self._stamps()
        with self._lock:
            cached = self._runs
            fresh: dict[str, RunSummary] = {}
            changed = bool(set(cached) - set(marks))
            for run_id, mark in marks.items():
                hit = cached.get(run_id)
                if hit is not None and hit.stamp == mark:
                    fresh[run_id] = hit
                    continue
                try:
                    current = self.checkpoints.view(run_id)
                except UsageError:
                    continue  # no checkpoint yet (a run that stopped before its first node)
                fresh[run_id] = summarise(self.project, run_id, current, mark)
                changed = True
            if changed:
                _save(self.project, fresh)
                self._runs = fresh
                self._ordered = order(list(fresh.values()))
            return list(self._ordered)


def summaries(project: Project, checkpoints: Checkpoints) -> list[RunSummary]:
    """Every run of the cycle, waiting ones first, then newest first (see
    :class:`RunIndex`)."""
    return RunIndex(project, checkpoints).runs()


def order(runs: list[RunSummary]) -> list[RunSummary]:
    """Waiting runs first, then running, then the rest; newest first within each."""
    rank = {"waiting": 0, "running": 1}
    runs = sorted(runs, key=lambda r: r.created, reverse=True)
    return sorted(runs, key=lambda r: rank.get(r.status, 2))


def run_stamp(project: Project, checkpoints: Checkpoints, run_id: str) -> str:
    """Changes whenever the run moves (what its page's stream watches)."""
    head = heads(checkpoints, [run_id]).get(run_id, "")
    evidence = project.run_dir(run_id) / "evidence"
    with contextlib.suppress(OSError):
        head += f"|{evidence.stat().st_mtime_ns}"
    return stamp(project, run_id, head)
