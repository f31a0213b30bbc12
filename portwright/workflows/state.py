"""The port cycle's typed state: references (shas, paths, record numbers), never blobs.

Logs, diffs, transcripts, surface reports and verdicts live in git and in the run's folder;
the state says where. Node names are a :class:`Node` enum; ``timeline`` and ``gates``
accumulate through reducers, everything else is replaced by each node's partial update.
"""

from __future__ import annotations

import operator
from datetime import datetime
from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field


class Node(StrEnum):
    """The cycle's nodes, in order."""

    PREPARE = "prepare"
    VERIFY_GAP = "verify_gap"
    RECORD_LANDED = "record_landed"
    ENUMERATE_SURFACE = "enumerate_surface"
    WRITE_SPEC = "write_spec"
    CHECK_SPEC = "check_spec"
    APPROVE_SPEC = "approve_spec"
    PORT_TESTS = "port_tests"
    CAPTURE_RED = "capture_red"
    IMPLEMENT = "implement"
    FOCUSED_GREEN = "focused_green"
    FULL_GATE = "full_gate"
    REVIEW = "review"
    RECONCILE = "reconcile"
    CHECK_RECONCILED = "check_reconciled"
    APPROVE_ADVANCE = "approve_advance"
    COMMIT = "commit"
    APPROVE_PR = "approve_pr"
    OPEN_PR = "open_pr"
    BLOCKED = "blocked"


class RunStatus(StrEnum):
    RUNNING = "running"
    WAITING = "waiting"
    """Parked at an approval."""
    BLOCKED = "blocked"
    """A bound ran out, a gate cannot pass, the model failed: ``reason`` says which."""
    DONE = "done"
    """A reviewable branch and its pull-request body."""
    LANDED = "landed"
    """Nothing to port: the gap was already closed; recorded in the ledger."""


class Step(BaseModel):
    """One node execution, for the timeline."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    node: Node
    started: datetime
    finished: datetime
    note: str = ""


class GateRef(BaseModel):
    """One gate outcome: the evidence record (number in the run's store) holds the rest."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    phase: str
    name: str
    passed: bool
    record: int | None = None
    """Sequence number of the evidence record in the run's store."""
    message: str = ""
    """The first message (a failing gate's reason)."""


class CycleState(BaseModel):
    """Everything the cycle's nodes share through checkpoints."""

    model_config = ConfigDict(extra="forbid")

    row: str
    """The parity row being ported."""
    run_id: str = ""
    base: str = ""
    """Downstream commit the run started from."""
    branch: str = ""
    pin: str = ""
    """Upstream revision the port claims parity with (its recorded pin)."""
    target: str = ""
    """Upstream revision whose behaviour the run ports (``[upstream] branch``): a row is
    missing because upstream has it past the pin; its surface, spec anchors and ledger
    references are read there."""
    symbols: list[str] = Field(default_factory=list)
    """The row's upstream names."""
    symbol: str = ""
    """The upstream symbol whose surface is ported."""
    spec_path: str = ""
    """The row's spec, relative to the worktree."""
    gap: str = ""
    """The gap verifier's verdict: missing, partial, landed, stale."""
    commits: dict[str, str] = Field(default_factory=dict)
    """Commit of each step that made one (``spec``, ``tests``, ``implement-2``, …)."""
    red_commit: str = ""
    """The tests-only commit the red was observed on."""
    attempts: dict[str, int] = Field(default_factory=dict)
    """Uses of each bounded loop: ``spec``, ``red``, ``implement``, ``review``."""
    feedback: str = ""
    """What the next agent step must hear: a rejection's message, review findings, the
    output of a failing gate."""
    deferred: list[str] = Field(default_factory=list)
    """Surface items the spec defers (makes an ``unusual`` approval ask)."""
    review: str = ""
    """The reviewer's last decision."""
    approvals: dict[str, str] = Field(default_factory=dict)
    """Decision taken at each approval point."""
    timeline: Annotated[list[Step], operator.add] = Field(default_factory=list)
    gates: Annotated[list[GateRef], operator.add] = Field(default_factory=list)
    status: RunStatus = RunStatus.RUNNING
    reason: str = ""
    """Why the run is blocked (or how it ended)."""
    retry: Node | None = None
    """The node a ``blocked`` run runs again when it is resumed: the one whose model
    endpoint failed (a :class:`~portwright.errors.ModelError`), which the run goes on from
    once the endpoint answers. None: a resume has nothing to run again."""
    pr: str = ""
    """The pull-request body, relative to the run folder."""
    pr_url: str = ""
    """The pull request's page (``local``: the body's ``file://`` URL)."""
    pr_number: int | None = None
    """The pull request's number on the forge (None for ``local``)."""
