"""What the CLI asks of a run that Temporal drives: start it, see where it stands, send a
person's decision; start a sync, tell whether its workflow still runs; and which runs
Temporal drives at all (their ``run.json`` says so)."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import ssl
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode, TLSConfig

from portwright.config import TemporalConfig
from portwright.dist.models import (
    DECIDE_UPDATE,
    RUN_WORKFLOW,
    SYNC_WORKFLOW,
    VIEW_QUERY,
    Decide,
    RunRequest,
    RunSnapshot,
    SyncRequest,
    SyncSnapshot,
)
from portwright.errors import ConfigError, TemporalUnavailable, UsageError
from portwright.project import Project
from portwright.redact import register
from portwright.workflows.driver import RunView
from portwright.workflows.state import RunStatus

logger = logging.getLogger(__name__)

OnEvent = Callable[[dict[str, Any]], None]
POLL_SECONDS = 0.5


def _pem(config: TemporalConfig, key: str) -> bytes | None:
    """The PEM file ``[temporal] <key>`` names, read (None when unset)."""
    value = getattr(config, key)
    if value is None:
        return None
    path = Path(value).expanduser()
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}", key=f"temporal.{key}",
                          fix=f"point [temporal] {key} (PORTWRIGHT_TEMPORAL__{key.upper()}) "
                              "at a readable PEM file") from exc
    if b"-----BEGIN " not in data:
        raise ConfigError(f"{path} is not a PEM file (no -----BEGIN line)",
                          key=f"temporal.{key}", fix="give the PEM form of the file")
    return data


def _tls(config: TemporalConfig) -> TLSConfig | bool:
    if not config.tls:
        return False
    return TLSConfig(server_root_ca_cert=_pem(config, "server_ca"),
                     domain=config.server_name, client_cert=_pem(config, "client_cert"),
                     client_private_key=_pem(config, "client_key"))


def _api_key(config: TemporalConfig) -> str | None:
    if config.api_key_env is None:
        return None
    key = os.environ.get(config.api_key_env, "")
    if not key.strip():
        raise ConfigError(f"${config.api_key_env} is not set (it holds the frontend's API "
                          "key)", key="temporal.api_key_env",
                          fix=f"export {config.api_key_env}=<key>, or unset [temporal] "
                              "api_key_env for a frontend without keys")
    register(key)
    return key.strip()


def _refusal(config: TemporalConfig, exc: BaseException) -> ConfigError | None:
    """What a refused connection means, as the setting to change; None when the service
    simply did not answer."""
    text = str(exc)
    lower = text.lower()
    where = f"the Temporal frontend at {config.address}"
    if "unauthenticated" in lower or "permission" in lower or "unauthorized" in lower:
        if config.api_key_env is None:
            return ConfigError(f"{where} refused the call: it wants credentials ({text})",
                               key="temporal.api_key_env",
                               fix="set [temporal] api_key_env to the variable that holds "
                                   "the frontend's API key")
        return ConfigError(f"{where} refused the API key in ${config.api_key_env} ({text})",
                           key="temporal.api_key_env",
                           fix=f"put the key the frontend accepts in ${config.api_key_env}")
    if "certificate" in lower or "unknownissuer" in lower or "invalidcertificate" in lower:
        return ConfigError(f"{where} is not trusted: its certificate does not verify against "
                           f"{'the system roots' if config.server_ca is None else config.server_ca}"
                           f" for {config.server_name or config.address} ({text})",
                           key="temporal.server_ca",
                           fix="set [temporal] server_ca to the CA that signed the "
                               "frontend's certificate (and server_name to the name it "
                               "carries)")
    if config.tls and ("handshake" in lower or "alert" in lower or "tls" in lower
                       or "reset" in lower or "broken pipe" in lower or "eof" in lower):
        if config.client_cert is None:
            return ConfigError(f"{where} refused the TLS handshake: it wants a client "
                               f"certificate ({text})", key="temporal.client_cert",
                               fix="set [temporal] client_cert and client_key to this "
                                   "worker's certificate and key (mTLS)")
        return ConfigError(f"{where} refused the client certificate {config.client_cert} "
                           f"({text})", key="temporal.client_cert",
                           fix="use a certificate signed by the CA the frontend trusts")
    if not config.tls and _speaks_tls(config.address):
        return ConfigError(f"{where} speaks TLS and refused a connection without it ({text})",
                           key="temporal.tls", fix="set [temporal] tls = true (and server_ca "
                                                   "when its CA is not a system root)")
    return None


def _speaks_tls(address: str) -> bool:
    """Whether ``host:port`` answers a TLS handshake (told apart from a plain-text
    frontend that is down or broken); its certificate is not checked: only whether it
    speaks TLS at all."""
    host, _, port = address.rpartition(":")
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=3) as raw, \
                context.wrap_socket(raw, server_hostname=host.strip("[]")):
            return True
    except ssl.SSLError as exc:
        # an alert from the server (it wants a client certificate, …) is TLS; a reply
        # that is no TLS record at all is not
        return "WRONG_VERSION_NUMBER" not in str(exc).upper() and "RECORD" not in \
            str(exc).upper()
    except (OSError, ValueError):
        return False


async def connect(config: TemporalConfig) -> Client:
    """A client of ``[temporal]``'s service, speaking portwright's pydantic models: over TLS
    (the frontend's certificate checked against ``server_ca``, this process's own sent for
    mTLS) and with the API key of ``api_key_env`` when the config says so."""
    tls, key = _tls(config), _api_key(config)
    try:
        client = await Client.connect(config.address, namespace=config.namespace,
                                      data_converter=pydantic_data_converter, tls=tls,
                                      api_key=key)
        await _namespace_exists(client, config)
        return client
    except (RuntimeError, RPCError) as exc:
        refused = _refusal(config, exc)
        if refused is not None:
            raise refused from exc
        raise TemporalUnavailable(
            f"no Temporal service answers at {config.address} (namespace "
            f"{config.namespace}): {exc}",
            fix="start one (`temporal server start-dev`), or set [temporal] address / "
                "PORTWRIGHT_TEMPORAL__ADDRESS") from exc


async def _namespace_exists(client: Client, config: TemporalConfig) -> None:
    """A namespace the service lacks is a setting to change, said before any call needs it
    (a frontend that does not let this client describe namespaces is left to answer the
    calls themselves)."""
    from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest

    try:
        await client.workflow_service.describe_namespace(
            DescribeNamespaceRequest(namespace=config.namespace))
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            raise ConfigError(f"the Temporal service at {config.address} has no namespace "
                              f"{config.namespace!r}", key="temporal.namespace",
                              fix=f"create it (`temporal operator namespace create "
                                  f"--namespace {config.namespace}`), or set [temporal] "
                                  "namespace (PORTWRIGHT_TEMPORAL__NAMESPACE) to one it "
                                  "has") from exc


def workflow_id(project: Project, run_id: str) -> str | None:
    """The workflow driving ``run_id``, when Temporal drives it (its manifest says so)."""
    manifest = project.store(run_id).manifest()
    if manifest is None or manifest.engine != "temporal":
        return None
    return manifest.workflow_id or run_id


def _run_view(run_id: str, snapshot: RunSnapshot) -> RunView:
    values = snapshot.values
    status = RunStatus(values.get("status", RunStatus.RUNNING.value)) if values \
        else RunStatus.RUNNING
    if snapshot.failure:
        status = RunStatus.BLOCKED
    elif snapshot.waiting is not None:
        status = RunStatus.WAITING
    return RunView(run_id=run_id, status=status, values=values, next=tuple(snapshot.next),
                   waiting=snapshot.waiting, waiting_id=snapshot.question or None)


async def _snapshot(handle: WorkflowHandle[Any, Any]) -> RunSnapshot:
    described = await handle.describe()
    if described.status == WorkflowExecutionStatus.COMPLETED:
        return RunSnapshot.model_validate(await handle.result())
    if described.status == WorkflowExecutionStatus.RUNNING:
        found: RunSnapshot = await handle.query(VIEW_QUERY, result_type=RunSnapshot)
        return found
    try:
        await handle.result()
    except WorkflowFailureError as exc:
        reason = str(exc.cause or exc)
    else:  # pragma: no cover - a closed workflow that is neither completed nor failed
        reason = ""
    ended = described.status.name.lower() if described.status is not None else "unknown"
    return RunSnapshot(failure=f"the workflow ended {ended}"
                       + (f": {reason}" if reason else ""))


class _Progress:
    """Turns new timeline entries into the events a local run prints."""

    def __init__(self, on_event: OnEvent, seen: int = 0) -> None:
        self.on_event = on_event
        self.seen = seen

    def __call__(self, snapshot: RunSnapshot) -> None:
        from portwright.runs.report import step_seconds

        timeline = snapshot.values.get("timeline") or []
        for step in timeline[self.seen:]:
            self.on_event({"event": "node_finished", "node": step["node"],
                           "seconds": round(step_seconds(step), 3),
                           "status": "blocked" if step["node"] == "blocked" else "running"})
        self.seen = max(self.seen, len(timeline))


async def _settle(handle: WorkflowHandle[Any, Any], run_id: str, on_event: OnEvent,
                  asked: int, timeout: float | None, seen: int = 0) -> RunView:
    """Wait until the run ends, or parks at a request after the ``asked``-th; report the
    nodes that finish after the ``seen``-th."""
    progress = _Progress(on_event, seen)
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        snapshot = await _snapshot(handle)
        progress(snapshot)
        view = _run_view(run_id, snapshot)
        if snapshot.waiting is not None and snapshot.asked > asked:
            on_event({"event": "waiting", "run_id": run_id})
            return view
        if view.status is not RunStatus.RUNNING and snapshot.waiting is None \
                and (snapshot.failure or not snapshot.next):
            return view
        if deadline is not None and time.monotonic() > deadline:
            return view
        await asyncio.sleep(POLL_SECONDS)


async def start(project: Project, request: RunRequest, run_id: str, on_event: OnEvent, *,
                wait: bool = True) -> RunView:
    """Start ``run_id`` as a workflow on ``[temporal] task_queue``; with ``wait``, return
    when it ends or waits for a decision."""
    from temporalio.exceptions import WorkflowAlreadyStartedError

    config = project.config.temporal
    client = await connect(config)
    try:
        handle = await client.start_workflow(RUN_WORKFLOW, request, id=run_id,
                                             task_queue=config.task_queue,
                                             result_type=RunSnapshot)
    except WorkflowAlreadyStartedError as exc:
        raise UsageError(f"a workflow {run_id!r} exists already", key="--run-id",
                         fix="pick another run id") from exc
    on_event({"event": "run_started", "run_id": run_id, "row": request.row,
              "engine": "temporal", "task_queue": config.task_queue})
    if not wait:
        return RunView(run_id=run_id, status=RunStatus.RUNNING, values={}, next=(),
                       waiting=None)
    return await _settle(handle, run_id, on_event, 0, None)


async def view(project: Project, run_id: str) -> RunView:
    """Where a Temporal-driven run stands."""
    client = await connect(project.config.temporal)
    handle = client.get_workflow_handle(workflow_id(project, run_id) or run_id)
    return _run_view(run_id, await _snapshot(handle))


async def answer(project: Project, run_id: str, decision: dict[str, Any],
                 on_event: OnEvent, *, question: str | None = None) -> RunView:
    """Send a person's decision to a run parked at an approval; return when it ends or
    waits again. The decision names the question it answers (``question``, else the one
    the run waits at now): the workflow refuses it once the run has moved past it."""
    client = await connect(project.config.temporal)
    handle = client.get_workflow_handle(workflow_id(project, run_id) or run_id)
    before = await _snapshot(handle)
    seen = len(before.values.get("timeline") or [])
    try:
        asked = await handle.execute_update(
            DECIDE_UPDATE, Decide(question=question or before.question, decision=decision),
            result_type=int)
    except WorkflowUpdateFailedError as exc:
        cause = exc.cause
        kind = cause.type if isinstance(cause, ApplicationError) else None
        if kind == "NotWaiting":
            current = _run_view(run_id, await _snapshot(handle))
            raise UsageError(f"run {run_id} is not waiting for a decision (already decided, "
                             f"or {current.status})", key="RUN",
                             fix=f"see `portwright status {run_id}`") from exc
        if kind == "QuestionChanged":
            raise UsageError(f"run {run_id}: that question was already decided; it waits at "
                             "another question now", key="RUN",
                             fix=f"see what it asks now: `portwright status {run_id}`") from exc
        message = cause.message if isinstance(cause, ApplicationError) else str(exc)
        raise UsageError(message, key="RUN",
                         fix=f"see what the run asks: `portwright status {run_id}`") from exc
    except RPCError as exc:  # the workflow has ended: updates are refused outright
        current = _run_view(run_id, await _snapshot(handle))
        raise UsageError(f"run {run_id} is not waiting for a decision (already decided, or "
                         f"{current.status})", key="RUN",
                         fix=f"see `portwright status {run_id}`") from exc
    return await _settle(handle, run_id, on_event, asked, None, seen)


async def start_sync(project: Project, request: SyncRequest, sync_id: str,
                     on_event: OnEvent) -> SyncSnapshot:
    """Start sync ``sync_id`` as a workflow on ``[temporal] task_queue`` and wait until it
    ends, reporting each step's outcome; its state is then in the project's checkpoints."""
    from temporalio.exceptions import WorkflowAlreadyStartedError

    config = project.config.temporal
    client = await connect(config)
    try:
        handle = await client.start_workflow(SYNC_WORKFLOW, request, id=sync_id,
                                             task_queue=config.task_queue,
                                             result_type=SyncSnapshot)
    except WorkflowAlreadyStartedError as exc:
        raise UsageError(f"a workflow {sync_id!r} exists already", key="--sync-id",
                         fix="pick another sync id") from exc
    on_event({"event": "sync_started", "sync_id": sync_id, "engine": "temporal",
              "task_queue": config.task_queue})
    steps = 0
    while True:
        described = await handle.describe()
        if described.status != WorkflowExecutionStatus.RUNNING:
            break
        found: SyncSnapshot = await handle.query(VIEW_QUERY, result_type=SyncSnapshot)
        if found.steps > steps:
            steps = found.steps
            on_event({"event": "step_done", "sync_id": sync_id, "next": found.next})
        await asyncio.sleep(POLL_SECONDS)
    try:
        result: SyncSnapshot = await handle.result()
    except WorkflowFailureError as exc:
        return SyncSnapshot(sync_id=sync_id, status="blocked",
                            failure=f"the workflow failed: {exc.cause or exc}")
    return result


async def running(project: Project, run_id: str) -> bool:
    """Whether the workflow that drives ``run_id`` still runs (False: it ended, or the
    service has forgotten it)."""
    client = await connect(project.config.temporal)
    handle = client.get_workflow_handle(workflow_id(project, run_id) or run_id)
    try:
        described = await handle.describe()
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            return False
        raise
    return described.status == WorkflowExecutionStatus.RUNNING


def run_sync(coro: Any) -> Any:
    """Run one of this module's coroutines from synchronous code (the CLI)."""
    return asyncio.run(coro)


def resolve(path: Path | None) -> str | None:
    return str(path.resolve()) if path is not None else None
