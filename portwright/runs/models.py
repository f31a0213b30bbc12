"""Evidence records: what the framework itself observed of one command."""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class EvidenceKind(StrEnum):
    """Why a command was run."""

    GATE = "gate"
    """A gate of the rules (command or built-in check)."""
    RED = "red"
    """Focused tests on the tree without the implementation: they must fail."""
    GREEN = "green"
    """The same focused tests on the final tree: they must pass."""


class EvidenceRecord(BaseModel):
    """One observation, written by the run store as ``evidence/<seq>-<gate>.json``.

    Only the framework writes these, from results it observed itself. The run store signs
    each one with this machine's evidence key (:attr:`mac`, which covers ``log_sha256`` and
    so the log); reading verifies the signature, and the red-green gate also re-hashes the
    log and re-reads its test ids, so an edited or forged record or log is detected.

    A record is bound to its place: the run id, its sequence number in the run, the phase,
    and the commit and tree it ran on are all signed, so a record copied from another run,
    moved to another place in this one, or replayed against another tree is refused.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    run_id: str = ""
    """The run that observed it (set by the run store; a record read back must carry its
    store's run id)."""
    seq: int = 0
    """Its place in the run (set by the run store: the number of its file)."""
    phase: str | None = None
    """The phase whose gates ran it (``red``, ``focused``, ``full``, …), if any."""
    gate: str
    """Gate (or focused-test step) name."""
    kind: EvidenceKind = EvidenceKind.GATE
    """``gate``, ``red`` or ``green``."""
    command: str
    """The command as run (``check:<name>`` for a built-in check)."""
    exit_code: int
    """Exit status (0 for a passing built-in check, 1 for a failing one)."""
    passed: bool
    """Whether the gate passed (exit 0, no timeout, no failed tests)."""
    duration: float
    """Wall seconds."""
    tests_passed: list[str] = Field(default_factory=list)
    """Test ids that passed (from JUnit XML when declared)."""
    tests_failed: list[str] = Field(default_factory=list)
    """Test ids that failed or errored."""
    log: str | None = None
    """Path of the full log, relative to the run directory."""
    log_sha256: str | None = None
    """sha256 of the log's bytes."""
    commit: str
    """Downstream commit (HEAD of the worktree) the command ran on."""
    tree: str = ""
    """git tree of the whole worktree when the command started: tracked, modified and
    untracked files (ignored ones excepted). Equal to ``commit``'s tree unless dirty."""
    dirty: bool = False
    """The worktree differed from ``commit`` when the command started (modified or
    untracked files)."""
    sandbox: str = ""
    """Sandbox backend the command ran in."""
    timestamp: datetime
    """When the command finished (UTC)."""
    messages: list[str] = Field(default_factory=list)
    """What a built-in check found, each naming file:line."""
    prev: str | None = None
    """The :attr:`mac` of the run's record before this one ("" for its first): the chain a
    missing, swapped or reordered record breaks. None in records written before chains,
    whose signatures do not cover it."""
    mac: str | None = None
    """HMAC-SHA256 (hex) with this machine's evidence key over the canonical JSON of the
    record without ``mac``; set by :meth:`~portwright.runs.RunStore.add`."""

    def canonical(self) -> bytes:
        """What :attr:`mac` signs: the record without ``mac`` as JSON, keys sorted, no
        whitespace, UTF-8."""
        data = self.model_dump(mode="json", exclude={"mac"} if self.prev is not None
                               else {"mac", "prev"})
        return json.dumps(data, sort_keys=True, separators=(",", ":"),
                          ensure_ascii=False).encode("utf-8")

    def sign(self, key: bytes) -> str:
        """The :attr:`mac` of this record under ``key``."""
        return hmac.new(key, self.canonical(), hashlib.sha256).hexdigest()

    def signed_by(self, key: bytes) -> bool:
        """Whether :attr:`mac` is present and was made with ``key`` (constant-time)."""
        return self.mac is not None and hmac.compare_digest(self.mac, self.sign(key))


class RunManifest(BaseModel):
    """What one run used, written once at its start (``run.json``)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    run_id: str
    """The run's id."""
    command: str
    """What started it (e.g. ``gates run --phase pin``)."""
    commit: str
    """Downstream HEAD when it started."""
    portwright: str
    """portwright's version."""
    created: datetime
    """When it started (UTC)."""
    rules: dict[str, str]
    """sha256 of every AGENTS.md it used, by path."""
    config: dict[str, Any]
    """The effective configuration (``portwright.toml`` with overrides applied)."""
    engine: Literal["local", "temporal"] = "local"
    """What drives the run: this machine's processes, or a Temporal workflow."""
    workflow_id: str | None = None
    """The Temporal workflow that drives the run (``engine = "temporal"``)."""
