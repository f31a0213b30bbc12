"""CLI commands of scale-out on Temporal: ``worker``, ``schedule create / list / delete /
trigger``; and what ``run``, ``status``, ``approve``, ``reject`` and ``edit`` ask of a run
that Temporal drives (its ``run.json`` says ``engine = "temporal"``).

Needs ``portwright[temporal]``; without it these say how to install it (exit 2).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from portwright.cli.common import console, emit_json, err_console, project
from portwright.errors import UsageError

if TYPE_CHECKING:
    from portwright.dist.models import RunRequest, SyncRequest
    from portwright.project import Project
    from portwright.workflows.driver import RunView

schedule_app = typer.Typer(help="Temporal schedules that start runs and syncs (cron).",
                           no_args_is_help=True)

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON.")]

SCHEDULABLE: dict[str, str] = {
    "run": "portwright.run",
    "sync": "portwright.sync",
}
"""Command → the workflow a schedule of it starts (a graph the workers serve)."""


def register(app: typer.Typer) -> None:
    """Add this room's commands to ``app``."""
    app.command()(worker)
    app.add_typer(schedule_app, name="schedule")


def _require_extra() -> None:
    try:
        import temporalio.langgraph  # noqa: F401
    except ImportError as exc:
        raise UsageError(f"Temporal needs the temporal extra ({exc.name} is missing)",
                         key="runs.engine",
                         fix="pip install 'portwright[temporal]', or use the local engine")\
            from exc


def drives(proj: Project, run_id: str) -> bool:
    """Whether Temporal drives ``run_id`` (from its manifest)."""
    manifest = proj.store(run_id).manifest()
    return manifest is not None and manifest.engine == "temporal"


def view_any(proj: Project, run_id: str) -> RunView:
    """Where a run stands, from whichever engine drives it."""
    from portwright.workflows import driver
    from portwright.workflows.driver import open_checkpointer

    if drives(proj, run_id):
        return view(proj, run_id)
    with open_checkpointer(proj) as saver:
        return driver.view(proj, run_id, saver)


def temporal_views(proj: Project) -> list[RunView]:
    """Runs Temporal drives (their checkpoints are the workflows' own); one whose service
    does not answer is left out, with a warning."""
    from portwright.errors import PortwrightError
    from portwright.workflows import driver

    out: list[RunView] = []
    for run_id in driver.run_ids(proj):
        if drives(proj, run_id):
            try:
                out.append(view(proj, run_id))
            except PortwrightError as exc:
                err_console.print(f"warning: run {run_id}: {exc}", markup=False)
    return out


def start(proj: Project, request: RunRequest, run_id: str, on_event: Any) -> RunView:
    _require_extra()
    from portwright.dist import client

    if proj.run_dir(run_id).exists():
        raise UsageError(f"run {run_id!r} exists already", key="--run-id",
                         fix="pick another id")
    result: RunView = client.run_sync(client.start(proj, request, run_id, on_event))
    return result


def view(proj: Project, run_id: str) -> RunView:
    _require_extra()
    from portwright.dist import client

    result: RunView = client.run_sync(client.view(proj, run_id))
    return result


def answer(proj: Project, run_id: str, decision: dict[str, Any], on_event: Any) -> RunView:
    _require_extra()
    from portwright.dist import client

    result: RunView = client.run_sync(client.answer(proj, run_id, decision, on_event))
    return result


def request(proj: Project, row: str, overrides: dict[str, str], replay: Path | None,
            allow_local: bool) -> RunRequest:
    """What starts a run of ``row`` of ``proj`` on a worker; a row the matrices at HEAD do
    not have is refused here, as a local run refuses it, not on a worker."""
    _require_extra()
    from portwright.dist.models import RunRequest
    from portwright.parity.matrix import require_row_at
    from portwright.vcs import plumbing

    require_row_at(proj.root, proj.config, row, plumbing.rev_parse(proj.root, "HEAD"))

    if replay is not None and not replay.is_file():
        raise UsageError(f"no cassette at {replay}", file=replay, key="--replay",
                         fix="give the path of a file written with --record")
    return RunRequest(root=str(proj.root.resolve()), row=row, overrides=overrides,
                      replay=str(replay.resolve()) if replay else None,
                      allow_local=allow_local)


def sync_request(proj: Project, to: str, overrides: dict[str, str], concurrency: int | None,
                 allow_local: bool) -> SyncRequest:
    """What starts a pin sync of ``proj`` towards ``to`` on a worker."""
    _require_extra()
    from portwright.dist.models import SyncRequest

    return SyncRequest(root=str(proj.root.resolve()), to=to, overrides=overrides,
                       concurrency=concurrency, allow_local=allow_local)


def start_sync(proj: Project, asked: SyncRequest, sync_id: str, on_event: Any) -> str:
    """Start a sync on the workers and wait until it ends; returns why the workflow ended
    without finishing the sync's graph ("" when it did)."""
    _require_extra()
    from portwright.dist import client

    if proj.run_dir(sync_id).exists():
        raise UsageError(f"sync {sync_id!r} exists already", key="--sync-id",
                         fix=f"pick another id, or `portwright resume {sync_id}`")
    snapshot = client.run_sync(client.start_sync(proj, asked, sync_id, on_event))
    return str(snapshot.failure)


def still_running(proj: Project, run_id: str) -> bool:
    """Whether Temporal drives ``run_id`` and its workflow has not ended."""
    if not drives(proj, run_id):
        return False
    _require_extra()
    from portwright.dist import client

    return bool(client.run_sync(client.running(proj, run_id)))


def worker(
    queue: Annotated[str | None, typer.Option(
        "--queue", "-q", help="Task queue to poll (default: [temporal] task_queue); one per "
        "class of sandbox, e.g. gpu.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print events as JSON lines.")]
    = False,
    allow_local: Annotated[bool, typer.Option(
        "--allow-local", help="Let this worker's runs use the unisolated local backend when "
        "a run asks for it (never granted by a workflow's input alone).")] = False,
) -> None:
    """Run a Temporal worker: it takes runs of the port cycle, pin syncs and their nodes
    from the task queue until stopped (Ctrl-C, SIGTERM). What decides isolation and
    endpoints comes from this worker's project and command line, never from a workflow's
    input (portwright/dist/policy.py)."""
    import asyncio

    proj = project()
    _require_extra()
    from portwright.dist.policy import WorkerPolicy, set_policy
    from portwright.dist.worker import check_queues, serve

    set_policy(WorkerPolicy(roots=(proj.root, proj.main_root), allow_local=allow_local))

    check_queues(proj)

    def show(event: dict[str, Any]) -> None:
        if as_json:
            print(json.dumps(event, default=str), flush=True)
            return
        kind = event["event"]
        if kind == "worker_started":
            console.print(f"worker {event['pid']} polls [bold]{escape(event['queue'])}[/] "
                          f"at {escape(event['address'])} ({escape(event['namespace'])})")
        elif kind == "node_started":
            console.print(f"[dim]▸ {escape(event['run_id'])} {escape(event['node'])}"
                          + (f" (attempt {event['attempt']})" if event["attempt"] > 1
                             else "") + "[/]")
        elif kind == "node_finished":
            console.print(f"[green]✓[/] {escape(event['run_id'])} {escape(event['node'])}")
        elif kind == "node_failed":
            console.print(f"[red]✗[/] {escape(event['run_id'])} {escape(event['node'])} "
                          f"({escape(event['error'])})")
        elif kind == "worker_stopping":
            console.print("stopping: no new work; "
                          + (f"waiting for {', '.join(event['nodes'])}" if event["nodes"]
                             else "no node runs"))
        elif kind == "worker_stopped":
            console.print("stopped" + (f" (left to another worker: {', '.join(event['left'])})"
                                       if event["left"] else ""))

    from portwright.cli.app import exit_now

    asyncio.new_event_loop().run_until_complete(serve(proj, queue, show))
    # The polls the service holds open, and a node past its grace, are not waited for: a
    # loop closed the usual way (asyncio.run) waits for each; the process ends here, its
    # output flushed, and whatever it left is handed out again by the service.
    exit_now(0)


def _schedule_request(proj: Project, argv: list[str]) -> tuple[str, Any]:
    """The workflow and argument of a scheduled command, parsed by the command's own
    options (``run ROW --approve auto``, ``sync --to main``)."""
    from portwright.cli.app import app
    from portwright.cli.common import check_options, override_keys

    if not argv or argv[0] not in SCHEDULABLE:
        raise UsageError(f"cannot schedule {' '.join(argv[:1]) or 'nothing'!r}", key="COMMAND",
                         fix=f"schedule one of: {', '.join(sorted(SCHEDULABLE))}")
    name, workflow = argv[0], SCHEDULABLE[argv[0]]
    import click

    parser = typer.main.get_command_from_info(
        next(info for info in app.registered_commands if info.name == name
             or (info.name is None and getattr(info.callback, "__name__", "") == name)),
        pretty_exceptions_short=True, rich_markup_mode=None)
    try:
        ctx = parser.make_context(name, list(argv[1:]))
    except click.ClickException as exc:
        raise UsageError(f"schedule of {name}: {exc.format_message()}", key="COMMAND",
                         fix=f"see `portwright {name} --help`") from exc
    params = ctx.params
    overrides = override_keys(params.get("model"), params.get("sandbox"),
                              params.get("approve"))
    check_options(proj, overrides)
    allow_local = bool(params.get("allow_local")) or params.get("sandbox") == "local"
    if name == "sync":
        for option in ("sync_id", "engine"):
            if params.get(option) is not None:
                raise UsageError(f"schedule of sync: --{option.replace('_', '-')} is not "
                                 "for a schedule", key="COMMAND",
                                 fix="drop it: each start is a new sync on the workers, its "
                                     "id the schedule's id and the time")
        to = params.get("to") or proj.config.upstream.branch
        from portwright.workflows.sync_driver import resolve_target

        resolve_target(proj, to)  # a revision upstream lacks is refused now, not at a start
        return workflow, sync_request(proj, to, overrides, params.get("concurrency"),
                                      allow_local)
    return workflow, request(proj, params["row"], overrides, params.get("replay"),
                             allow_local)


@schedule_app.command("create", context_settings={"allow_extra_args": True,
                                                  "ignore_unknown_options": True})
def schedule_create(
    ctx: typer.Context,
    cron: Annotated[str, typer.Option("--cron", help='When, in Temporal\'s cron dialect: '
                                      '"0 3 * * *" (UTC), "@daily", "@every 6h", '
                                      '"CRON_TZ=Europe/Paris 30 2 * * mon-fri".')],
    schedule_id: Annotated[str | None, typer.Option(
        "--id", help="Schedule id (default: the command, e.g. run-ROW, sync-main).")] = None,
    as_json: JsonOption = False,
) -> None:
    """Start COMMAND (``run ROW [options]`` or ``sync [--to REV] [options]``) at every CRON
    time, as a Temporal workflow on ``[temporal] task_queue``."""
    import asyncio

    from portwright.dist.cron import check_cron
    from portwright.dist.models import run_id_of

    check_cron(cron)  # here, not by the service after connecting
    argv = [a for a in ctx.args if a != "--json"]
    as_json = as_json or len(argv) != len(ctx.args)
    proj = project()
    _require_extra()
    workflow, arg = _schedule_request(proj, argv)
    ident = schedule_id or run_id_of("-".join(a for a in argv[:3] if not a.startswith("-")))
    from portwright.dist import client as dist_client
    from portwright.dist import schedules

    async def make() -> None:
        connected = await dist_client.connect(proj.config.temporal)
        await schedules.create(connected, ident, cron, workflow, arg,
                               task_queue=proj.config.temporal.task_queue,
                               note=" ".join(argv))

    asyncio.run(make())
    if as_json:
        emit_json({"id": ident, "workflow": workflow, "cron": [cron], "command": argv})
    else:
        console.print(f"schedule [bold]{escape(ident)}[/]: {escape(' '.join(argv))} at "
                      f"{escape(cron)}")


@schedule_app.command("list")
def schedule_list(as_json: JsonOption = False) -> None:
    """Every schedule of the namespace: what it starts, when, and its recent runs."""
    import asyncio

    proj = project()
    _require_extra()
    from portwright.dist import client as dist_client
    from portwright.dist import schedules

    async def listed() -> list[dict[str, Any]]:
        return await schedules.listing(await dist_client.connect(proj.config.temporal))

    found = asyncio.run(listed())
    if as_json:
        emit_json(found)
        return
    table = Table("id", "command", "cron", "next", "recent")
    for item in found:
        table.add_row(escape(item["id"]), escape(item["command"]), escape(" ".join(
            item["cron"])), escape(item["next"][0] if item["next"] else "-"),
            escape(", ".join(item["recent"][-2:])))
    console.print(table)


@schedule_app.command("delete")
def schedule_delete(
    schedule_id: Annotated[str, typer.Argument(metavar="ID")],
) -> None:
    """Delete a schedule (runs it started go on)."""
    _schedule_call("delete", schedule_id)
    console.print(f"schedule {escape(schedule_id)} deleted")


@schedule_app.command("trigger")
def schedule_trigger(
    schedule_id: Annotated[str, typer.Argument(metavar="ID")],
) -> None:
    """Start a schedule's command now, once."""
    _schedule_call("trigger", schedule_id)
    console.print(f"schedule {escape(schedule_id)} triggered")


def _schedule_call(what: str, schedule_id: str) -> None:
    import asyncio

    proj = project()
    _require_extra()
    from portwright.dist import client as dist_client
    from portwright.dist import schedules

    async def call() -> None:
        connected = await dist_client.connect(proj.config.temporal)
        await getattr(schedules, what)(connected, schedule_id)

    asyncio.run(call())
