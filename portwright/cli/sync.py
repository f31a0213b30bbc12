"""CLI commands of the pin sync: ``sync``, ``syncs``; ``resume``, ``status`` and ``report``
of :mod:`.runs` hand a sync id to the functions here.

Exit codes: 0 the sync is done (or waits for a decision on a port run), 1 something holds
the pin back, 2 bad input.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.live import Live
from rich.markup import escape
from rich.table import Column, Table
from rich.text import Text

from portwright.cli.common import (
    base_build_line,
    console,
    emit_json,
    err_console,
    export_overrides,
    override_keys,
    project,
)

if TYPE_CHECKING:
    from portwright.project import Project
    from portwright.workflows.sync_driver import SyncView

_STYLE = {"ported": "green", "landed": "green", "not_applicable": "dim", "waiting": "yellow",
          "blocked": "red", "uncovered": "red", "pending": ""}


def register(app: typer.Typer) -> None:
    """Add this room's commands to ``app``."""
    app.command()(sync)
    app.command()(syncs)


class _Progress:
    """The live view of a sync: its step, and one line per port run."""

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json
        self.step = "starting"
        self.ports: dict[str, list[str]] = {}
        self.live: Live | None = None

    def table(self) -> Table:
        table = Table("port run", "row", "step", "status", title=Text(f"sync: {self.step}"),
                      box=None, title_justify="left")
        for run_id, (row, step, status) in self.ports.items():
            table.add_row(Text(run_id), Text(row), Text(step), Text(status))
        return table

    def __call__(self, event: dict[str, Any]) -> None:
        import json

        if self.as_json:
            print(json.dumps(event, default=str), flush=True)
            return
        kind = str(event.get("event", ""))
        run_id = str(event.get("run_id", ""))
        if kind == "node_started":
            self.step = str(event["node"])
        elif kind == "port_started":
            self.ports[run_id] = [str(event["row"]), "-", "running"]
        elif kind == "port.node_started" and run_id in self.ports:
            self.ports[run_id][1] = str(event["node"])
        elif kind == "port_finished" and run_id in self.ports:
            self.ports[run_id][2] = str(event["status"])
        elif kind == "gate" and not run_id:
            console.print(f"    {'ok  ' if event['passed'] else 'FAIL'} gate pin/"
                          f"{escape(str(event['name']))}", markup=False)
        elif kind == "base_build" and not run_id:
            console.print(f"    {base_build_line(event)}", markup=False, style="dim")
        if self.live is not None:
            self.live.update(self.table())


def commits_table(values: dict[str, Any]) -> Table:
    from portwright.runs.sync_report import commit_rows

    table = Table(Column("commit", no_wrap=True, min_width=12), "subject", "verdict", "by",
                  "account", "port run", "holds the pin back")
    for row in commit_rows(values):
        table.add_row(Text(row["commit"]), Text(row["subject"]), Text(row["verdict"]),
                      Text(row["decided_by"]), Text(row["account"],
                                                    style=_STYLE.get(row["account"], "")),
                      Text(row["run"] or "-"), Text(row["hold"] or "-"))
    return table


def print_holds(values: dict[str, Any]) -> None:
    """One line per commit that holds the pin back, never cut or wrapped."""
    from portwright.runs.sync_report import commit_rows

    for row in commit_rows(values):
        if row["hold"]:
            console.print(f"held back by {row['commit']} ({row['subject']}): {row['hold']}",
                          markup=False, soft_wrap=True)


def _payload(result: SyncView) -> dict[str, Any]:
    from portwright.runs.sync_report import commit_rows

    values = result.values
    return {"sync_id": result.sync_id, "status": result.status.value,
            "reason": values.get("reason", ""), "branch": values.get("branch", ""),
            "pin": values.get("pin", ""), "target": values.get("target", ""),
            "pin_moved": result.status.value == "done", "pin_commit": values.get("pin_commit"),
            "commits": commit_rows(values), "ports": values.get("ports", {}),
            "gates": values.get("gates", []), "next": list(result.next),
            "pr": values.get("pr", ""), "pr_url": values.get("pr_url", ""),
            "pr_number": values.get("pr_number")}


def finish(result: SyncView, as_json: bool) -> None:
    """Print where the sync stands; exit 1 when something holds the pin back."""
    values = result.values
    if as_json:
        emit_json(_payload(result))
    else:
        console.print(commits_table(values))
        print_holds(values)
        colour = {"done": "green", "waiting": "yellow"}.get(result.status.value, "red")
        console.print(f"sync [bold]{escape(result.sync_id)}[/]: [{colour}]{result.status}[/]"
                      + (f" — {escape(values['reason'])}" if values.get("reason") else ""))
        if result.status.value == "done" and values.get("target") == values.get("pin"):
            console.print(f"the pin is already at {values['target'][:12]}: nothing to sync",
                          markup=False)
        elif result.status.value == "done":
            console.print(f"pin moved to {values['target'][:12]} on {values['branch']}; "
                          f"report: portwright report {result.sync_id}", markup=False)
            if values.get("pr_url"):
                console.print(f"pull request: {values['pr_url']}", markup=False)
    if result.status.value == "blocked":
        raise typer.Exit(1)


def sync(
    to: Annotated[str | None, typer.Option(
        "--to", help="Upstream revision to move the pin to (default: upstream.branch).")]
    = None,
    concurrency: Annotated[int | None, typer.Option(
        min=1, max=64, help="Port runs at once (default: [sync] concurrency).")] = None,
    model: Annotated[str | None, typer.Option(help="Model name (overrides [model] name).")]
    = None,
    sandbox: Annotated[str | None, typer.Option(
        help="Sandbox backend: auto, docker, bwrap (local needs --allow-local).")] = None,
    approve: Annotated[str | None, typer.Option(
        help="auto: never wait for a person; ask: wait at every approval point.")] = None,
    sync_id: Annotated[str | None, typer.Option("--sync-id", help="Sync id (default: new).")]
    = None,
    allow_local: Annotated[bool, typer.Option(
        "--allow-local", help="Run commands as plain host processes if no sandbox backend is "
        "usable (not isolation).")] = False,
    engine: Annotated[str | None, typer.Option(
        help="local: this process drives the sync; temporal: a Temporal workflow on "
        "`portwright worker` processes (default: [runs] engine).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (events as lines).")]
    = False,
) -> None:
    """Move the pin to an upstream revision: classify every upstream commit since the pin,
    port the missing ones (one run per row, in parallel), record the rest in the ledger, and
    move the pin once every commit is accounted for and every pin gate passes."""
    from portwright.errors import UsageError
    from portwright.workflows import sync_driver

    if engine not in (None, "local", "temporal"):
        raise UsageError(f"--engine {engine!r}", key="--engine", fix="use local or temporal")
    overrides = override_keys(model, sandbox, approve)
    export_overrides(overrides)
    proj = project(committed=True)
    target = to if to is not None else proj.config.upstream.branch
    progress = _Progress(as_json)
    if (engine or proj.config.runs.engine) == "temporal":
        _on_temporal(proj, target, overrides, sync_id, concurrency,
                     allow_local or sandbox == "local", as_json)
        return
    if as_json:
        result = sync_driver.start(proj, target, progress, sync_id=sync_id,
                                   concurrency=concurrency,
                                   allow_local=allow_local or sandbox == "local")
    else:
        with Live(progress.table(), console=console, transient=True) as live:
            progress.live = live
            result = sync_driver.start(proj, target, progress, sync_id=sync_id,
                                       concurrency=concurrency,
                                       allow_local=allow_local or sandbox == "local")
    finish(result, as_json)


def _on_temporal(proj: Project, target: str, overrides: dict[str, str], sync_id: str | None,
                 concurrency: int | None, allow_local: bool, as_json: bool) -> None:
    """``sync --engine temporal``: the sync as a workflow on the workers; where it ended is
    read from the project's checkpoints, as for a local sync."""
    from portwright.cli import dist
    from portwright.errors import UsageError
    from portwright.workflows import sync_driver
    from portwright.workflows.context import new_run_id
    from portwright.workflows.driver import open_checkpointer

    sync_driver.check_target(proj, target)  # bad input is refused here, not on a worker
    sync_id = sync_id or new_run_id("sync")
    asked = dist.sync_request(proj, target, overrides, concurrency, allow_local)
    failure = dist.start_sync(proj, asked, sync_id, _Progress(as_json))
    try:
        with open_checkpointer(proj) as saver:
            result = sync_driver.view(proj, sync_id, saver)
    except UsageError:
        result = None
    if result is None or failure:
        err_console.print(f"sync {sync_id}: the workflow ended without finishing: "
                          f"{failure or 'no step ran'}", markup=False)
    if result is not None:
        finish(result, as_json)
    if result is None or failure:
        raise typer.Exit(1)


def syncs(as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False
          ) -> None:
    """Every sync of this project, with where it stands."""
    from portwright.workflows import sync_driver
    from portwright.workflows.driver import open_checkpointer

    proj = project()
    rows = []
    with open_checkpointer(proj) as saver:
        for sync_id in sync_driver.sync_ids(proj):
            current = sync_driver.view(proj, sync_id, saver)
            held = sum(1 for c in current.values["commits"] if c.get("hold"))
            rows.append({"sync_id": sync_id, "status": current.status.value,
                         "target": current.values["target"],
                         "commits": len(current.values["commits"]), "held": held})
    if as_json:
        emit_json(rows)
        return
    table = Table("sync", "status", "target", "commits", "held back by")
    for r in rows:
        table.add_row(Text(r["sync_id"]), r["status"], r["target"][:12], str(r["commits"]),
                      str(r["held"]))
    console.print(table)


def resume_sync(proj: Project, sync_id: str, as_json: bool, allow_local: bool) -> None:
    """Continue a sync here, from its last checkpoint; one whose Temporal workflow has
    ended (a node failed every attempt, the workflow was terminated) too, never one whose
    workflow still runs."""
    from portwright.cli import dist
    from portwright.errors import UsageError
    from portwright.workflows import sync_driver

    if dist.still_running(proj, sync_id):
        manifest = proj.store(sync_id).manifest()
        workflow = manifest.workflow_id if manifest is not None and manifest.workflow_id \
            else sync_id
        raise UsageError(f"Temporal drives sync {sync_id} and its workflow still runs: its "
                         "workers continue it by themselves", key="SYNC",
                         fix=f"see where it stands: `portwright status {sync_id}`; to take it "
                             "over here, end its workflow first (`temporal workflow "
                             f"terminate --workflow-id {workflow}`)")

    result = sync_driver.resume(proj, sync_id, _Progress(as_json), allow_local=allow_local)
    finish(result, as_json)


def publish_sync(proj: Project, sync_id: str, as_json: bool) -> None:
    from portwright.workflows import sync_driver

    result = sync_driver.publish(proj, sync_id, _Progress(as_json))
    if not as_json:
        console.print(f"pull request of sync {sync_id}: {result.values['pr_url']}",
                      markup=False)
    finish(result, as_json)


def status_sync(proj: Project, sync_id: str, as_json: bool) -> None:
    from portwright.workflows import sync_driver
    from portwright.workflows.driver import open_checkpointer

    with open_checkpointer(proj) as saver:
        current = sync_driver.view(proj, sync_id, saver)
    if as_json:
        emit_json({**_payload(current), "timeline": current.values.get("timeline", [])})
        return
    console.print(commits_table(current.values))
    print_holds(current.values)
    console.print(f"sync {sync_id}: {current.status.value}"
                  + (f" — {current.values['reason']}" if current.values.get("reason") else ""),
                  markup=False)


def report_sync(proj: Project, sync_id: str, as_json: bool) -> None:
    from portwright.runs.sync_report import render_sync_report
    from portwright.workflows import sync_driver
    from portwright.workflows.driver import open_checkpointer

    with open_checkpointer(proj) as saver:
        current = sync_driver.view(proj, sync_id, saver)
    text = render_sync_report(current.values)
    if as_json:
        emit_json({"sync_id": sync_id, "status": current.status.value, "markdown": text,
                   "state": current.values})
        return
    print(text, end="")
