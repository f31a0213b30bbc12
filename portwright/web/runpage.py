"""Everything one run's page shows, gathered from its checkpoint, its folder and git.

Evidence records are read with :meth:`RunStore.read`, the store's own verification (each
record's signature, run and number), and each log's digest is compared with
:meth:`RunStore.log_digest`; a record that does not verify is shown with the store's
reason, never hidden. Verdicts, classifications, reviews and transcripts are what the run
saved; they are model output and are only ever shown as text.
"""

from __future__ import annotations

import functools
import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from markupsafe import Markup

from portwright.errors import PortwrightError
from portwright.globs import match_any
from portwright.project import Project
from portwright.runs.models import EvidenceRecord, RunManifest
from portwright.runs.report import spend, step_seconds
from portwright.runs.store import CHAIN_HEAD, RunStore, UntrustedEvidence
from portwright.vcs import plumbing
from portwright.web import diffs, markdown
from portwright.web.checkpoints import Checkpoints
from portwright.web.summaries import label

logger = logging.getLogger(__name__)

LOG_TAIL = 64 * 1024
"""Characters of a log's end in the static report."""
LOG_TAIL_PAGE = 16 * 1024
"""Characters of a log's end on a served page (the whole log has its own route)."""


@dataclass
class Record:
    """One evidence file as the store verified it."""

    file: str
    record: EvidenceRecord | None
    verified: bool
    problem: str = ""
    log_ok: bool | None = None
    """The log on disk still has the digest the record signed (None: no log)."""
    log_tail: str = ""
    log_cut: bool = False

    @property
    def kind(self) -> str:
        return self.record.kind.value if self.record is not None else "unknown"


@dataclass
class Event:
    """One transcript line, ready to show."""

    kind: str
    role: str = ""
    text: str = ""
    calls: list[tuple[str, str]] = field(default_factory=list)
    detail: str = ""


@dataclass
class TranscriptView:
    name: str
    role: str
    events: list[Event]
    status: str = ""
    seconds: float = 0.0
    count: int = 0
    """Events in the file (``events`` may be left out: the page loads them when opened)."""


@dataclass
class RoleSpend:
    role: str
    calls: int
    tokens: int
    cost_usd: float
    seconds: float


@dataclass
class RunPage:
    """The page of one run."""

    run_id: str
    status: str
    values: dict[str, Any]
    next: tuple[str, ...]
    waiting: dict[str, Any] | None
    interrupt: str
    """Id of the interrupt the run waits at ('' when it does not wait)."""
    manifest: RunManifest | None = None
    timeline: list[dict[str, Any]] = field(default_factory=list)
    gap: dict[str, Any] | None = None
    surface: list[dict[str, str]] = field(default_factory=list)
    slice: str = ""
    spec_text: str = ""
    spec_front: str = ""
    spec_html: Markup = field(default_factory=Markup)
    records: list[Record] = field(default_factory=list)
    reviews: list[dict[str, Any]] = field(default_factory=list)
    diff: list[diffs.FileDiff] = field(default_factory=list)
    diff_cut: bool = False
    record_diff: list[diffs.FileDiff] = field(default_factory=list)
    spend: list[RoleSpend] = field(default_factory=list)
    transcripts: list[TranscriptView] = field(default_factory=list)
    interrupted: bool = False

    @property
    def label(self) -> str:
        return label(self.status)

    @property
    def request(self) -> dict[str, Any] | None:
        if self.waiting is None:
            return None
        return dict(self.waiting["action_requests"][0])

    @property
    def allowed(self) -> list[str]:
        if self.waiting is None:
            return []
        return list(self.waiting["review_configs"][0]["allowed_decisions"])


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _records(store: RunStore, tail: int) -> list[Record]:
    out: list[Record] = []
    if not store.evidence_dir.is_dir():
        return out
    read: list[EvidenceRecord] = []
    unread: set[int] = set()
    for path in sorted(store.evidence_dir.glob("*.json")):
        try:
            record = store.read(path)
        except UntrustedEvidence as exc:
            out.append(Record(file=path.name, record=None, verified=False, problem=exc.render()))
            number = store.number(path)
            if number is not None:
                unread.add(number)
            continue
        read.append(record)
        item = Record(file=path.name, record=record, verified=True)
        if record.log is not None:
            item.log_ok = store.log_digest(record) == record.log_sha256
            text = store.log_text(record)
            item.log_cut = len(text) > tail
            item.log_tail = text[-tail:]
        out.append(item)
    # a record removed, swapped or cut from the end: the chain says so, as a row of its own
    out += [Record(file=CHAIN_HEAD, record=None, verified=False, problem=exc.render())
            for exc in store.chain_problems(read, unread)]
    return out


def _surface(run_dir: Path) -> tuple[list[dict[str, str]], str]:
    classes = _json(run_dir / "classification.json") or {}
    report = _json(run_dir / "surface.json") or {}
    anchors: dict[str, tuple[str, str]] = {}
    seen: list[str] = []
    for item in report.get("items", []):
        name = f"{item.get('kind')}: {' '.join(str(item.get('name')).split())}"
        if name in seen:  # the labels the enumerator classified (candidate_labels)
            name = f"{name} ({item.get('anchor')})"
        seen.append(name)
        anchors[name] = (str(item.get("anchor", "")), str(item.get("detail", "")))
    rows = [{"item": str(i.get("item", "")), "classification": str(i.get("classification", "")),
             "reason": str(i.get("reason", "")),
             "anchor": anchors.get(str(i.get("item")), ("", ""))[0],
             "detail": anchors.get(str(i.get("item")), ("", ""))[1]}
            for i in classes.get("items", [])]
    return rows, str(classes.get("slice", ""))


def _arguments(text: str) -> str:
    """A tool call's JSON arguments as ``key: value`` lines, long strings (file contents)
    as they would read in the file."""
    try:
        data = json.loads(text)
    except ValueError:
        return text
    if not isinstance(data, dict):
        return json.dumps(data, indent=2)
    lines: list[str] = []
    for key, value in data.items():
        if isinstance(value, str) and "\n" in value:
            lines += [f"{key}:", value.rstrip("\n")]
        else:
            lines.append(f"{key}: {value if isinstance(value, str) else json.dumps(value)}")
    return "\n".join(lines)


def _event(raw: Mapping[str, Any]) -> Event:
    kind = str(raw.get("event", "?"))
    if kind == "message":
        message = raw.get("message") or {}
        calls = [(str(c.get("name", "")), _arguments(str(c.get("arguments", ""))))
                 for c in message.get("tool_calls") or []]
        return Event(kind, role=str(message.get("role", "")),
                     text=str(message.get("content") or ""), calls=calls)
    if kind == "usage":
        return Event(kind, detail=f"{raw.get('prompt_tokens', 0)} prompt + "
                                  f"{raw.get('completion_tokens', 0)} completion tokens, "
                                  f"${float(raw.get('cost_usd', 0) or 0):.4f}")
    if kind == "start":
        return Event(kind, detail=f"model {raw.get('model', '?')}, tools: "
                                  f"{', '.join(map(str, raw.get('tools', [])))}")
    if kind == "end":
        return Event(kind, detail=f"{raw.get('status', '?')}: {raw.get('reason', '')}",
                     text=json.dumps(raw.get("result"), indent=2)
                     if raw.get("result") is not None else "")
    return Event(kind, detail=json.dumps({k: v for k, v in raw.items() if k != "event"})[:4000])


TRANSCRIPT = re.compile(r"transcript-[A-Za-z0-9_]+-[0-9]+\.jsonl")
"""How a transcript file of a run is named."""


def read_transcript(path: Path, *, events: bool = True) -> TranscriptView:
    """One transcript file as the page shows it (``events``: with its events)."""
    role = path.stem.removeprefix("transcript-").rsplit("-", 1)[0]
    shown: list[Event] = []
    status, seconds, count = "", 0.0, 0
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            raw = json.loads(line)
        except ValueError:
            raw = {"event": "unreadable", "line": line[:4000]}
        if not isinstance(raw, dict):
            continue
        count += 1
        seconds = max(seconds, float(raw.get("t", 0) or 0))
        if raw.get("event") == "end":
            status = str(raw.get("status", ""))
        if events:
            shown.append(_event(raw))
    return TranscriptView(path.name, role, shown, status, seconds, count)


def transcript(project: Project, run_id: str, name: str) -> TranscriptView | None:
    """The transcript ``name`` of ``run_id`` with its events (None: no such file)."""
    if not TRANSCRIPT.fullmatch(name):
        return None
    path = project.run_dir(run_id) / name
    if path.is_symlink() or not path.is_file():
        return None
    return read_transcript(path)


def _transcripts(run_dir: Path, *, events: bool) -> list[TranscriptView]:
    paths = sorted((p for p in run_dir.glob("transcript-*.jsonl") if TRANSCRIPT.fullmatch(p.name)
                    and not p.is_symlink()), key=lambda p: p.stat().st_mtime_ns)
    return [read_transcript(path, events=events) for path in paths]


def _spend(run_dir: Path, transcripts: list[TranscriptView]) -> list[RoleSpend]:
    seconds: dict[str, float] = {}
    for t in transcripts:
        seconds[t.role] = seconds.get(t.role, 0.0) + t.seconds
    return [RoleSpend(role, int(v["calls"]), int(v["tokens"]), float(v["cost_usd"]),
                      round(seconds.get(role, 0.0), 3))
            for role, v in spend(run_dir).items()]


@functools.lru_cache(maxsize=256)
def _show(root: Path, commit: str, path: str) -> str | None:
    data = plumbing.show(root, commit, path)
    return data.decode("utf-8", errors="replace") if data is not None else None


@functools.lru_cache(maxsize=256)
def _rendered(text: str, pin: str, run_id: str, links: bool) -> tuple[str, Markup]:
    return markdown.render_spec(text, pin=pin, link=markdown.upstream_link(run_id)
                                if links else None)


def _spec(project: Project, page: RunPage, head: str, links: bool) -> None:
    values = page.values
    path = str(values.get("spec_path", ""))
    text: str | None = None
    request = page.request
    if request is not None and isinstance(request.get("args", {}).get("spec"), str):
        text = request["args"]["spec"]
    elif path and head:
        text = _show(project.root, head, path)
    if text:
        page.spec_text = text
        page.spec_front, page.spec_html = _rendered(
            text, str(values.get("target") or values.get("pin", "")), page.run_id, links)


def _head(project: Project, branch: str) -> str:
    if not branch:
        return ""
    try:
        return plumbing.rev_parse(project.root, branch)
    except PortwrightError:
        return ""


def build(project: Project, checkpoints: Checkpoints, run_id: str, *,
          static: bool = False) -> RunPage:
    """The page of ``run_id``; ``static``: for a file that stands alone (anchors do not
    link to the server, transcripts and longer log tails are inline)."""
    links = not static
    current, interrupt = checkpoints.pending(run_id)
    values = current.values
    run_dir = project.run_dir(run_id)
    store = project.store(run_id)
    page = RunPage(run_id=run_id, status=current.status.value, values=values,
                   next=current.next, waiting=current.waiting, interrupt=interrupt,
                   manifest=store.manifest(), interrupted=(run_dir / "interrupted").is_file())
    page.timeline = [{**step, "seconds": step_seconds(step)}
                     for step in values.get("timeline") or []]
    page.gap = _json(run_dir / "gap.json")
    page.surface, page.slice = _surface(run_dir)
    head = _head(project, str(values.get("branch", "")))
    _spec(project, page, head, links)
    page.records = _records(store, LOG_TAIL if static else LOG_TAIL_PAGE)
    page.reviews = [r for r in (_json(p) for p in sorted(run_dir.glob("review-*.json")))
                    if isinstance(r, dict)]
    page.diff, page.diff_cut = diffs.branch_diff(project.root, str(values.get("base", "")),
                                                 head)
    artifacts = project.config.artifacts
    kept = [artifacts.ledger, *artifacts.matrices]
    page.record_diff = [f for f in page.diff if match_any(f.path, kept)]
    page.transcripts = _transcripts(run_dir, events=static)
    page.spend = _spend(run_dir, page.transcripts)
    return page
