"""The pin sync's typed state: one entry per upstream commit of ``pin..target``, one
result per port run, references (shas, run ids, file names), never blobs.

The scan's report, each confirmation and each port run's evidence live in the sync's
folder and in the child runs' folders; the state says where.
"""

from __future__ import annotations

import operator
from datetime import datetime
from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from portwright.errors import UsageError
from portwright.project import Project
from portwright.workflows.state import GateRef

COMMAND = "sync"
"""First word of a sync's manifest command: how a sync's folder is told from a run's."""


def is_sync(project: Project, run_id: str) -> bool:
    """Whether ``run_id`` names a sync (its manifest says ``sync …``)."""
    try:
        manifest = project.store(run_id).manifest()
    except UsageError:
        return False
    return manifest is not None and manifest.command.split(" ", 1)[0] == COMMAND


class SyncNode(StrEnum):
    """The sync's nodes, in order."""

    SCAN = "scan"
    CONFIRM = "confirm"
    PORT = "port"
    INTEGRATE = "integrate"
    RECORD = "record"
    PIN_GATES = "pin_gates"
    FINISH = "finish"


class SyncStatus(StrEnum):
    RUNNING = "running"
    WAITING = "waiting"
    """A port run waits for a decision (``portwright approve CHILD``, then resume)."""
    BLOCKED = "blocked"
    """Something holds the pin back: ``holds`` says what, commit by commit."""
    DONE = "done"
    """Every commit accounted for, every pin gate green, the pin moved on the branch."""


class Account(StrEnum):
    """How one upstream commit stands."""

    PENDING = "pending"
    NOT_APPLICABLE = "not_applicable"
    LANDED = "landed"
    PORTED = "ported"
    WAITING = "waiting"
    BLOCKED = "blocked"
    UNCOVERED = "uncovered"
    """Missing, and no matrix row names what it changed: no run can port it."""


ACCOUNTED = (Account.NOT_APPLICABLE, Account.LANDED, Account.PORTED)


class SyncCommit(BaseModel):
    """One upstream commit of the range."""

    model_config = ConfigDict(extra="forbid")

    sha: str
    subject: str
    scan: str
    """The scan's candidate verdict."""
    confidence: float
    verdict: str = ""
    """The verdict recorded: the scan's, or a confirmation the evidence allows."""
    decided_by: str = "scan"
    """``scan`` or ``gap_verifier`` (then ``confirmation`` names its file)."""
    confirmation: str = ""
    """File of the gap verifier's verdict in the sync's folder."""
    reason: str = ""
    """Why the verdict, in one sentence."""
    evidence: list[str] = Field(default_factory=list)
    """The framework's evidence in short: ``signal: where`` per signal."""
    downstream: str = ""
    """Where the port carries it (a landed commit): a downstream path."""
    row: str = ""
    """The matrix row whose run ports it (missing and partial commits)."""
    run_id: str = ""
    """The port run."""
    account: Account = Account.PENDING
    hold: str = ""
    """What holds the pin back because of this commit (empty when accounted for)."""


class PortTask(BaseModel):
    """What one fanned-out port run is given (``Send`` payload)."""

    model_config = ConfigDict(extra="forbid")

    sync_id: str
    row: str
    run_id: str
    base: str
    target: str
    commits: list[str]


class PortResult(BaseModel):
    """How one port run ended."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    row: str
    run_id: str
    status: str
    """The child run's status: done, landed, waiting, blocked."""
    reason: str = ""
    branch: str = ""
    head: str = ""
    pr: str = ""
    spec: str = ""
    """The row's spec on the run's branch."""
    failed_gates: list[str] = Field(default_factory=list)
    """``phase/name`` of each gate the run saw fail last."""


def _merge(left: dict[str, PortResult], right: dict[str, PortResult]) -> dict[str, PortResult]:
    return {**left, **right}


class SyncStep(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    node: SyncNode
    started: datetime
    finished: datetime
    note: str = ""


class SyncState(BaseModel):
    """Everything the sync's nodes share through checkpoints."""

    model_config = ConfigDict(extra="forbid")

    sync_id: str = ""
    target: str = ""
    """The upstream revision the pin moves to (full sha)."""
    pin: str = ""
    """The recorded pin when the sync started (full sha)."""
    base: str = ""
    """Downstream commit the sync started from."""
    branch: str = ""
    commits: list[SyncCommit] = Field(default_factory=list)
    """Oldest first."""
    ports: Annotated[dict[str, PortResult], _merge] = Field(default_factory=dict)
    """Result of each port run, by row."""
    merged: list[str] = Field(default_factory=list)
    """Port runs whose branch the sync's branch carries."""
    gates: list[GateRef] = Field(default_factory=list)
    """The last pin gates run."""
    pin_commit: str = ""
    """The commit that moves the pin (on the sync's branch), once the gates passed."""
    timeline: Annotated[list[SyncStep], operator.add] = Field(default_factory=list)
    status: SyncStatus = SyncStatus.RUNNING
    reason: str = ""
    pr: str = ""
    """The pull-request body of the pin advance, relative to the sync's folder."""
    pr_url: str = ""
    """The pull request the ``[pr]`` backend opened for the sync's branch (``local``: the
    body file's URL); empty until the pin moved and the pull request was opened."""
    pr_number: int | None = None
    """Its number on the forge (None for ``local``)."""
