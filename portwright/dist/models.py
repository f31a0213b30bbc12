"""What crosses process boundaries: a run's request (client → workflow), its reference
(workflow → activities) and the workflow's answers. Plain pydantic models, serialised by
Temporal's pydantic data converter."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

RUN_WORKFLOW = "portwright.run"
"""Workflow type of the port cycle."""
OPEN_RUN_ACTIVITY = "portwright.open_run"
"""Activity that opens a run: its worktree and manifest."""
SYNC_WORKFLOW = "portwright.sync"
"""Workflow type of the pin sync."""
OPEN_SYNC_ACTIVITY = "portwright.open_sync"
"""Activity that opens a sync: its worktree and manifest, and the target it moves to."""
SYNC_CHECKPOINT_ACTIVITY = "portwright.sync_checkpoint"
"""Activity that writes a checkpoint of a sync into the project's checkpoints."""
GRAPH = "portwright.cycle"
"""Name the cycle is registered under with the LangGraph plugin."""
SYNC_GRAPH = "portwright.sync"
"""Name the sync graph is registered under with the LangGraph plugin."""
VIEW_QUERY = "view"
DECIDE_UPDATE = "decide"

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def run_id_of(workflow_id: str) -> str:
    """The run id of a workflow: its id, less what a branch or folder name cannot hold
    (a scheduled workflow's id ends in a timestamp with colons)."""
    return _UNSAFE.sub("-", workflow_id).strip("-.") or "run"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RunRequest(_Model):
    """What starts a run of the cycle (``portwright run ROW``, or a schedule)."""

    root: str
    """The downstream repository (an absolute path every worker reaches)."""
    row: str
    """The parity row to port."""
    overrides: dict[str, str] = Field(default_factory=dict)
    """Config settings changed by the command's options (``section.key`` → value)."""
    base: str | None = None
    """Downstream commit to start from; unset: the repository's HEAD when the run opens."""
    replay: str | None = None
    """Cassette the agents are played from (an absolute path)."""
    allow_local: bool = False
    """Whether the unisolated ``local`` sandbox backend may be used."""


class RunRef(_Model):
    """A run as its nodes' activities see it: enough to open its context anywhere."""

    root: str
    run_id: str
    base: str
    command: str
    overrides: dict[str, str] = Field(default_factory=dict)
    replay: str | None = None
    allow_local: bool = False


class OpenRun(_Model):
    """Input of the activity that opens a run."""

    request: RunRequest
    run_id: str
    workflow_id: str


class RunSnapshot(_Model):
    """Where a Temporal-driven run stands (the ``view`` query, the workflow's result)."""

    values: dict[str, Any] = Field(default_factory=dict)
    """The cycle's state (JSON-ready); empty before the first node."""
    next: list[str] = Field(default_factory=list)
    """Nodes that run next."""
    waiting: dict[str, Any] | None = None
    """The approval request the run is parked at."""
    asked: int = 0
    """How many times the run has asked for a decision (tells a new request from the last)."""
    question: str = ""
    """The id of the request it waits at (``ask-<asked>``): a decision names it."""
    failure: str = ""
    """Why the workflow ended without finishing the graph (a node failed every attempt)."""


def question_id(asked: int) -> str:
    """The id of a run's ``asked``-th request for a decision."""
    return f"ask-{asked}"


class Decide(_Model):
    """The ``decide`` update: a person's decision, and the question it answers."""

    question: str
    """The request's id as the person was shown it (:attr:`RunSnapshot.question`)."""
    decision: dict[str, Any]
    """One decision of the request's protocol (``{"type": "approve"}``, …)."""


class SyncRequest(_Model):
    """What starts a pin sync (``portwright sync --to REV``, or a schedule)."""

    root: str
    """The downstream repository (an absolute path every worker reaches)."""
    to: str
    """Upstream revision to move the pin to, resolved when the sync opens (a schedule of
    ``--to main`` follows the branch)."""
    overrides: dict[str, str] = Field(default_factory=dict)
    """Config settings changed by the command's options (``section.key`` → value)."""
    concurrency: int | None = None
    """Port runs at once (None: ``[sync] concurrency``)."""
    allow_local: bool = False
    """Whether the unisolated ``local`` sandbox backend may be used."""


class OpenSync(_Model):
    """Input of the activity that opens a sync."""

    request: SyncRequest
    sync_id: str
    workflow_id: str


class OpenedSync(_Model):
    """What the opening activity answers (a workflow reads no config or repository; an
    activity's result is in its history)."""

    target: str
    """The upstream sha the pin moves to."""
    base: str
    """The downstream commit the sync starts from."""
    concurrency: int
    """Port runs at once (the request's, or ``[sync] concurrency``)."""


class SyncRef(_Model):
    """A sync as its nodes' activities see it: enough to open its context anywhere."""

    root: str
    sync_id: str
    base: str
    overrides: dict[str, str] = Field(default_factory=dict)
    allow_local: bool = False


class SyncCheckpoint(_Model):
    """A checkpoint of a sync's graph, as the workflow's checkpointer saved it, for the
    project's checkpoints (serialised by the checkpoints' own serialiser, base64)."""

    root: str
    sync_id: str
    overrides: dict[str, str] = Field(default_factory=dict)
    parent: str | None = None
    """The checkpoint it follows (None: the thread's first)."""
    checkpoint: tuple[str, str]
    """``(type, base64 data)`` of the checkpoint."""
    metadata: tuple[str, str]
    """``(type, base64 data)`` of its metadata."""


class SyncSnapshot(_Model):
    """Where a Temporal-driven sync stands (the ``view`` query, the workflow's result); its
    whole state is in the project's checkpoints (``portwright status SYNC``)."""

    sync_id: str = ""
    status: str = "running"
    reason: str = ""
    next: list[str] = Field(default_factory=list)
    """Nodes that run next (empty once the graph ended)."""
    steps: int = 0
    """Checkpoints written so far (one per superstep of the graph)."""
    pr_url: str = ""
    failure: str = ""
    """Why the workflow ended without finishing the graph (a node failed every attempt)."""
