"""CLI commands of the port cycle: ``run``, ``resume``, ``runs``, ``status``, ``log``,
``report``, ``approve``, ``reject``, ``edit``, ``pr``.

Exit codes: 0 the run is done (or landed, or waits for a decision), 1 it ended blocked,
2 bad input.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from portwright.cli.common import (
    base_build_line,
    check_options,
    console,
    emit_json,
    err_console,
    export_overrides,
    override_keys,
    project,
)

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime

    from portwright.errors import UsageError
    from portwright.project import Project
    from portwright.workflows.driver import RunView
    from portwright.workflows.survey import LostRun

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON (events as lines).")]
AllowLocal = Annotated[bool, typer.Option(
    "--allow-local", help="Run commands as plain host processes if no sandbox backend is "
    "usable, or if the config asks for the local backend (not isolation).")]


def register(app: typer.Typer) -> None:
    """Add this room's commands to ``app``."""
    for command in (run, resume, runs, status, log, report, approve, reject, edit, pr):
        app.command()(command)


def _printer(as_json: bool) -> Any:
    def show(event: dict[str, Any]) -> None:
        if as_json:
            print(json.dumps(event, default=str), flush=True)
            return
        kind = event.get("event")
        if kind == "node_started":
            console.print(f"[dim]▸ {escape(event['node'])}[/]")
        elif kind == "node_finished":
            colour = "red" if event.get("status") == "blocked" else "green"
            console.print(f"[{colour}]✓[/] {escape(event['node'])} "
                          f"[dim]{event.get('seconds', 0):.1f} s[/]")
        elif kind == "gate":
            mark = "[green]ok  [/]" if event["passed"] else "[red]FAIL[/]"
            console.print(f"    {mark} gate {escape(event['phase'])}/{escape(event['name'])}")
        elif kind == "base_build":
            console.print(f"    {escape(base_build_line(event))}", style="dim")
        elif kind == "red":
            console.print("    [red]red observed[/]: the ported tests fail without the "
                          "implementation")
        elif kind == "agent_finished":
            console.print(f"    [dim]{escape(event['role'])}: {escape(event['status'])}, "
                          f"{event['calls']} calls, {event['tokens']} tokens[/]")
        elif kind == "gap":
            console.print(f"    gap verdict: [bold]{escape(event['status'])}[/]")
        elif kind == "waiting":
            console.print("[yellow]waiting for a decision[/]")
        elif kind == "pr":
            number = f"#{event['number']} " if event.get("number") else ""
            console.print(f"    pull request {escape(number)}{escape(str(event['url']))}")

    return show


def _finish(result: RunView, as_json: bool) -> None:
    from portwright.workflows.state import RunStatus

    values = result.values
    if as_json:
        emit_json({"run_id": result.run_id, "status": result.status.value,
                   "reason": values.get("reason", ""), "branch": values.get("branch", ""),
                   "waiting": result.waiting, "pr": values.get("pr", ""),
                   "pr_url": values.get("pr_url", ""), "pr_number": values.get("pr_number"),
                   "retry": values.get("retry")})
    else:
        colour = {"done": "green", "landed": "green", "waiting": "yellow"}.get(
            result.status.value, "red")
        console.print(f"run [bold]{escape(result.run_id)}[/]: [{colour}]{result.status}[/]"
                      + (f" — {escape(values['reason'])}" if values.get("reason") else ""),
                      soft_wrap=True)
        if result.waiting is not None:
            request = result.waiting["action_requests"][0]
            console.print(request["description"], markup=False)
            allowed = result.waiting["review_configs"][0]["allowed_decisions"]
            console.print(f"answer with: portwright approve {result.run_id}"
                          + (f" | reject {result.run_id} --message …" if "reject" in allowed
                             else "")
                          + (f" | edit {result.run_id} --file spec.md" if "edit" in allowed
                             else ""), markup=False)
        elif values.get("pr"):
            console.print(f"branch {values['branch']}; report: portwright report "
                          f"{result.run_id}", markup=False)
            if values.get("pr_url"):
                console.print(f"pull request: {values['pr_url']}", markup=False)
        _retry_hint(result.run_id, values)
    if result.status is RunStatus.BLOCKED:
        raise typer.Exit(1)


def _retry_hint(run_id: str, values: dict[str, Any]) -> None:
    """How a run its model endpoint blocked goes on."""
    if values.get("status") == "blocked" and values.get("retry"):
        console.print(f"once the model endpoint answers, `portwright resume {run_id}` runs "
                      f"{values['retry']} again (a run keeps the [model] it started with: "
                      "another [model] takes a new run)", markup=False, soft_wrap=True)


def run(
    row: Annotated[str | None, typer.Argument(
        help="The parity row to port (its id in the matrix).")] = None,
    next_rows: Annotated[int | None, typer.Option(
        "--next", min=1, help="Port the N highest-priority open rows instead (matrix "
        "priority column; one after another).")] = None,
    model: Annotated[str | None, typer.Option(help="Model name (overrides [model] name).")]
    = None,
    sandbox: Annotated[str | None, typer.Option(
        help="Sandbox backend: auto, docker, bwrap (local needs --allow-local).")] = None,
    approve: Annotated[str | None, typer.Option(
        help="auto: never wait for a person; ask: wait at every approval point.")] = None,
    run_id: Annotated[str | None, typer.Option("--run-id", help="Run id (default: new).")]
    = None,
    replay: Annotated[Path | None, typer.Option(
        help="Play the agents from this cassette instead of a model endpoint.")] = None,
    record: Annotated[Path | None, typer.Option(
        help="Record every model call of the run into this cassette.")] = None,
    allow_local: AllowLocal = False,
    engine: Annotated[str | None, typer.Option(
        help="local: drive the run in this process; temporal: as a Temporal workflow on "
        "`portwright worker` processes (default: [runs] engine).")] = None,
    force: Annotated[bool, typer.Option(
        "--force", help="Start the run even if the row has one under way.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Port one row: verified gap → surface → spec → tests seen red → implementation seen
    green → gates → fresh review → reconciled records → a branch and its PR body."""
    from portwright.errors import UsageError
    from portwright.workflows import driver

    overrides = override_keys(model, sandbox, approve)
    export_overrides(overrides)
    if engine not in (None, "local", "temporal"):
        raise UsageError(f"--engine {engine!r}", key="--engine", fix="use local or temporal")
    if (row is None) == (next_rows is None):
        raise UsageError("name one row, or pass --next N", key="ROW",
                         fix="`portwright run ROW` or `portwright run --next 3`")
    committed = project(committed=True)
    check_options(committed, overrides)
    if row is not None and not force:
        _one_run_per_row(committed, row)
    if (engine or committed.config.runs.engine) == "temporal":
        from portwright.cli import dist
        from portwright.workflows.context import new_run_id

        if row is None:
            raise UsageError("--next runs on the local engine", key="--next",
                             fix="start each row with `portwright run ROW --engine temporal`")
        asked = dist.request(committed, row, overrides, replay,
                             allow_local or sandbox == "local")
        _finish(dist.start(committed, asked, run_id or new_run_id("run"), _printer(as_json)),
                as_json)
        return
    proj = committed
    if next_rows is not None:
        if run_id is not None or replay is not None or record is not None:
            raise UsageError("--next starts several runs", key="--next",
                             fix="drop --run-id, --replay and --record with --next")
        _run_next(proj, next_rows, allow_local or sandbox == "local", as_json)
        return
    assert row is not None
    result = driver.start(proj, row, _printer(as_json), run_id=run_id,
                          allow_local=allow_local or sandbox == "local", replay=replay,
                          record=record)
    _finish(result, as_json)


def in_flight(proj: Project) -> dict[str, list[RunView]]:
    """The runs still under way (waiting for a person, or running: a run killed while it
    ran counts until it is resumed), by row; both engines'."""
    from portwright.cli import dist
    from portwright.workflows.survey import survey

    out: dict[str, list[RunView]] = {}
    for view in survey(proj).views + dist.temporal_views(proj):
        if view.status.value in ("waiting", "running"):
            out.setdefault(str(view.values.get("row", "")), []).append(view)
    return out


def _one_run_per_row(proj: Project, row: str) -> None:
    """One row, one run under way: two would make two branches and two pull requests."""
    from portwright.errors import UsageError

    busy = in_flight(proj).get(row, [])
    if busy:
        said = ", ".join(f"{v.run_id} ({v.status.value})" for v in busy)
        first = busy[0].run_id
        raise UsageError(f"row {row} has a run under way already: {said}", key="ROW",
                         fix=f"see it (`portwright status {first}`) and finish it "
                             f"(`portwright approve/resume {first}`), or pass --force to "
                             "start another run of the row anyway")


def next_open_rows(proj: Project, count: int) -> list[str]:
    """The ``count`` open rows (not in a done status, no run of theirs waiting or running)
    with the highest priority."""
    from portwright.parity.matrix import by_priority, load_rows

    busy = set(in_flight(proj))
    done = set(proj.config.artifacts.done_statuses)
    rows = [r for r in by_priority(load_rows(proj.root, proj.config))
            if r.status not in done and r.id not in busy]
    return [r.id for r in rows[:count]]


def _run_next(proj: Project, count: int, allow_local: bool, as_json: bool) -> None:
    from portwright.workflows import driver
    from portwright.workflows.state import RunStatus

    chosen = next_open_rows(proj, count)
    if not as_json:
        console.print(f"next rows: {', '.join(chosen) or 'none open'}", markup=False)
    outcomes = []
    for row_id in chosen:
        result = driver.start(proj, row_id, _printer(as_json), allow_local=allow_local)
        outcomes.append(result)
        if not as_json:
            console.print(f"run {result.run_id} ({row_id}): {result.status}"
                          + (f" — {result.values['reason']}" if result.values.get("reason")
                             else ""), markup=False)
    if as_json:
        emit_json([{"run_id": r.run_id, "row": r.values["row"], "status": r.status.value,
                    "reason": r.values.get("reason", ""), "branch": r.values.get("branch", "")}
                   for r in outcomes])
    if any(r.status is RunStatus.BLOCKED for r in outcomes):
        raise typer.Exit(1)


def resume(
    run_id: Annotated[str, typer.Argument(metavar="RUN", help="The run to continue.")],
    replay: Annotated[Path | None, typer.Option(help="Cassette to play the agents from.")]
    = None,
    allow_local: AllowLocal = False,
    as_json: JsonOption = False,
) -> None:
    """Continue a run or a sync from its last checkpoint (after a crash, a kill, a
    reboot); a sync that ended held back is picked up again, and a run its model endpoint
    blocked runs that step again."""
    from portwright.workflows import driver
    from portwright.workflows.sync_state import is_sync

    proj = project(committed=True)
    if is_sync(proj, run_id):
        from portwright.cli.sync import resume_sync

        resume_sync(proj, run_id, as_json, allow_local)
        return
    if _temporal(proj, run_id):
        from portwright.errors import UsageError

        raise UsageError(f"Temporal drives run {run_id}: its workers continue it by "
                         "themselves", key="RUN",
                         fix=f"start a worker (`portwright worker`); see `portwright status "
                             f"{run_id}`")
    result = driver.resume(proj, run_id, _printer(as_json),
                           allow_local=allow_local, replay=replay)
    _finish(result, as_json)


def _temporal(proj: Project, run_id: str) -> bool:
    from portwright.cli import dist

    return dist.drives(proj, run_id)


def _view(proj: Project, run_id: str) -> RunView:
    from portwright.cli import dist

    return dist.view_any(proj, run_id)


def _answer(run_id: str, decision: dict[str, Any], replay: Path | None, allow_local: bool,
            as_json: bool) -> None:
    from portwright.workflows import driver

    proj = project(committed=True)
    if _temporal(proj, run_id):
        from portwright.cli import dist

        _finish(dist.answer(proj, run_id, decision, _printer(as_json)), as_json)
        return
    result = driver.answer(proj, run_id, decision, _printer(as_json),
                           allow_local=allow_local, replay=replay)
    _finish(result, as_json)


def approve(
    run_id: Annotated[str, typer.Argument(metavar="RUN")],
    replay: Annotated[Path | None, typer.Option(help="Cassette to play the agents from.")]
    = None,
    allow_local: AllowLocal = False,
    as_json: JsonOption = False,
) -> None:
    """Approve what a waiting run asks; it goes on in this process."""
    _answer(run_id, {"type": "approve"}, replay, allow_local, as_json)


def reject(
    run_id: Annotated[str, typer.Argument(metavar="RUN")],
    message: Annotated[str, typer.Option("--message", "-m",
                                         help="Why; the agent that redoes the step reads it.")],
    replay: Annotated[Path | None, typer.Option(help="Cassette to play the agents from.")]
    = None,
    allow_local: AllowLocal = False,
    as_json: JsonOption = False,
) -> None:
    """Reject what a waiting run asks, with a message for the agent that redoes the step."""
    from portwright.errors import UsageError

    if not message.strip():
        raise UsageError("a rejection needs a message", key="--message",
                         fix="say what is wrong: the agent that redoes the step reads it")
    _answer(run_id, {"type": "reject", "message": message}, replay, allow_local, as_json)


def edit(
    run_id: Annotated[str, typer.Argument(metavar="RUN")],
    file: Annotated[Path, typer.Option("--file", help="The new spec (markdown).")],
    replay: Annotated[Path | None, typer.Option(help="Cassette to play the agents from.")]
    = None,
    allow_local: AllowLocal = False,
    as_json: JsonOption = False,
) -> None:
    """Replace the spec of a run waiting at its spec approval; the run checks it again."""
    from portwright.errors import UsageError

    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read the spec: {exc}", file=file,
                         fix="pass a readable UTF-8 markdown file") from exc
    _answer(run_id, {"type": "edit", "edited_action": {"name": "approve_spec",
                                                       "args": {"spec": text}}},
            replay, allow_local, as_json)


def pr(
    run_id: Annotated[str, typer.Argument(metavar="RUN")],
    as_json: JsonOption = False,
) -> None:
    """Open or update the pull request of a finished run or of a sync that moved the pin (or
    of one blocked opening it: a bad token, a rate limit), on the backend of its [pr]
    config; never a second one."""
    from portwright.workflows import driver
    from portwright.workflows.sync_state import is_sync

    proj = project(committed=True)
    if is_sync(proj, run_id):
        from portwright.cli.sync import publish_sync

        publish_sync(proj, run_id, as_json)
        return
    _finish(driver.publish(proj, run_id, _printer(as_json)), as_json)


def _age(values: dict[str, Any], since: datetime | None = None) -> str:
    """How long since the run's last step finished (or ``since``, without steps)."""
    from datetime import UTC, datetime

    steps = values.get("timeline") or []
    if not steps and since is None:
        return "-"
    last = datetime.fromisoformat(str(steps[-1]["finished"])) if steps else since
    assert last is not None
    minutes = int((datetime.now(UTC) - last).total_seconds() // 60)
    return f"{minutes // 60} h {minutes % 60} min" if minutes >= 60 else f"{minutes} min"


def runs(
    status_filter: Annotated[str | None, typer.Option(
        "--status", help="Only runs with this status (running, waiting, blocked, done, "
        "landed).")] = None,
    as_json: JsonOption = False,
) -> None:
    """Every run of the cycle in this project; waiting ones first. A run whose checkpoint
    is lost is listed from its run folder (status unknown), with a warning."""
    from portwright.cli import dist
    from portwright.runs.report import spend
    from portwright.workflows.survey import UNKNOWN, survey

    proj = project()
    seen = survey(proj)
    _warn(seen.warnings)
    found = [v for v in seen.views + dist.temporal_views(proj)
             if status_filter is None or v.status.value == status_filter]
    found.sort(key=lambda v: v.status.value != "waiting")
    rows = []
    for item in found:
        spent = spend(proj.run_dir(item.run_id))
        rows.append({"run_id": item.run_id, "row": item.values["row"],
                     "status": item.status.value,
                     "node": item.next[0] if item.next else "-",
                     "age": _age(item.values),
                     "tokens": int(sum(v["tokens"] for v in spent.values())),
                     "cost_usd": round(sum(v["cost_usd"] for v in spent.values()), 4),
                     "pr_url": item.values.get("pr_url", "")})
    for lost in seen.lost if status_filter in (None, UNKNOWN) else []:
        spent = spend(proj.run_dir(lost.run_id))
        rows.append({"run_id": lost.run_id, "row": lost.row, "status": UNKNOWN, "node": "-",
                     "age": _age({}, lost.manifest.created),
                     "tokens": int(sum(v["tokens"] for v in spent.values())),
                     "cost_usd": round(sum(v["cost_usd"] for v in spent.values()), 4),
                     "pr_url": "", "lost": lost.problem})
    if as_json:
        emit_json(rows)
        return
    table = Table("run", "row", "status", "next", "age", "tokens", "cost")
    for r in rows:
        table.add_row(escape(r["run_id"]), escape(r["row"]), r["status"], r["node"], r["age"],
                      str(r["tokens"]), f"${r['cost_usd']:.4f}")
    console.print(table)


def status(
    run_id: Annotated[str, typer.Argument(metavar="RUN")],
    as_json: JsonOption = False,
) -> None:
    """A run's timeline, gates, red/green records, spend and what it waits for; a sync's
    per-commit table. A run whose checkpoint is lost is shown from its run folder."""
    from portwright.runs.report import spend
    from portwright.workflows.survey import survey
    from portwright.workflows.sync_state import is_sync

    proj = project()
    if is_sync(proj, run_id):
        from portwright.cli.sync import status_sync

        status_sync(proj, run_id, as_json)
        return
    proj.store(run_id)  # a run id that is not one is refused here
    seen = survey(proj, only=run_id)
    if not (seen.views or seen.lost or seen.temporal) and seen.warnings:
        raise seen.warnings[0]  # its run.json does not read, and no checkpoint holds it
    _warn(seen.warnings)
    if seen.lost:
        _show_lost(proj, seen.lost[0], as_json)
        return
    # Temporal's, or a checkpoint without a run folder (none at all: "no run")
    current = seen.views[0] if seen.views else _view(proj, run_id)
    values = current.values
    payload = {"run_id": run_id, "engine": "temporal" if seen.temporal else "local",
               "status": current.status.value,
               "reason": values.get("reason", ""), "next": list(current.next),
               "waiting": current.waiting, "timeline": values.get("timeline", []),
               "gates": values.get("gates", []), "attempts": values.get("attempts", {}),
               "spend": spend(proj.run_dir(run_id)), "branch": values.get("branch", ""),
               "pr_url": values.get("pr_url", ""), "pr_number": values.get("pr_number"),
               "retry": values.get("retry")}
    if as_json:
        emit_json(payload)
        return
    console.print(f"run [bold]{escape(run_id)}[/] ({escape(values.get('row', '-'))}): "
                  f"{current.status.value}"
                  + (f" — {escape(values['reason'])}" if values.get("reason") else ""))
    table = Table("node", "seconds", "note")
    for step in payload["timeline"]:
        from portwright.runs.report import step_seconds

        table.add_row(step["node"], f"{step_seconds(step):.2f}",
                      escape(step.get("note", "")))
    console.print(table)
    gates = Table("phase", "gate", "result", "record", "message")
    for gate in payload["gates"]:
        gates.add_row(gate["phase"], escape(gate["name"]), "ok" if gate["passed"] else "FAIL",
                      str(gate.get("record") or "-"), escape(gate.get("message", ""))[:120])
    console.print(gates)
    _print_spend(payload["spend"])
    if payload["pr_url"]:
        console.print(f"pull request: {payload['pr_url']}", markup=False)
    if current.waiting is not None:
        console.print("waits for: " + current.waiting["action_requests"][0]["name"],
                      markup=False)
    _retry_hint(run_id, values)


def _warn(problems: Sequence[UsageError]) -> None:
    for problem in problems:
        err_console.print(f"warning: {problem.render()}", markup=False)


def _print_spend(spend: dict[str, dict[str, float]]) -> None:
    for role, spent in spend.items():
        console.print(f"{role}: {int(spent['calls'])} calls, {int(spent['tokens'])} tokens, "
                      f"${spent['cost_usd']:.4f}", markup=False)


def _show_lost(proj: Project, lost: LostRun, as_json: bool) -> None:
    """What the run folder of a run whose checkpoint is lost tells."""
    from portwright.runs.report import spend
    from portwright.workflows.survey import UNKNOWN

    started = lost.manifest
    payload: dict[str, Any] = {
        "run_id": lost.run_id, "engine": started.engine, "status": UNKNOWN,
        "reason": f"its checkpoint is lost: {lost.problem}", "next": [], "waiting": None,
        "timeline": [], "gates": [], "attempts": {}, "spend": spend(proj.run_dir(lost.run_id)),
        "branch": "", "pr_url": "", "pr_number": None, "lost": lost.problem, "row": lost.row,
        "command": started.command, "commit": started.commit,
        "created": started.created.isoformat()}
    if as_json:
        emit_json(payload)
        return
    console.print(f"run {lost.run_id} ({lost.row}): {UNKNOWN} — its checkpoint is lost "
                  f"({lost.problem})", markup=False)
    console.print(f"started {started.created:%Y-%m-%d %H:%M} UTC by `portwright "
                  f"{started.command}` at {started.commit[:12]}", markup=False)
    _print_spend(payload["spend"])


def log(
    run_id: Annotated[str, typer.Argument(metavar="RUN")],
    as_json: JsonOption = False,
) -> None:
    """The evidence records of a run, in order, each signature verified and the chain
    checked whole: a missing, reordered or removed record is named, and exits 1."""
    proj = project()
    store = proj.store(run_id)
    if store.manifest() is None:
        from portwright.errors import UsageError

        raise UsageError(f"no run {run_id!r} in this project", key="RUN",
                         fix="list the runs with `portwright runs`")
    records = store.records()
    broken = store.chain_problems(records)
    if as_json:
        emit_json(records)
    else:
        for record in records:
            console.print(f"#{record.seq:<3} {record.phase or '-':<9} {record.gate:<16} "
                          f"exit {record.exit_code:<3} "
                          f"{'passed' if record.passed else 'FAILED'} "
                          f"on {record.commit[:12]}  log {record.log or '-'}", markup=False)
    for problem in broken:
        err_console.print(f"error: {problem.render()}", markup=False)
    if broken:
        raise typer.Exit(1)
    if not as_json:
        err_console.print(f"{len(records)} records, all signed by this machine's evidence "
                          "key, none missing", style="dim", markup=False)


def report(
    run_id: Annotated[str, typer.Argument(metavar="RUN")],
    html: Annotated[bool, typer.Option(
        "--html", help="Write the run's page as one self-contained report.html (into the run's "
        "folder, or --output) and print its path; needs the web extra.")] = False,
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="With --html: write the report here.")] = None,
    as_json: JsonOption = False,
) -> None:
    """The run's evidence bundle as markdown (what the pull request body holds), or with
    --html as a static page (for CI artifacts); a sync's report."""
    from portwright.runs.report import render_report
    from portwright.workflows.sync_state import is_sync

    proj = project()
    if is_sync(proj, run_id):
        from portwright.cli.sync import report_sync

        report_sync(proj, run_id, as_json)
        return
    if html:
        from portwright.errors import UsageError

        try:
            from portwright.web.render import write_report
        except ImportError as exc:
            raise UsageError(f"report --html needs the web extra ({exc.name} is missing)",
                             fix="pip install 'portwright[web]'") from exc
        path = write_report(proj, run_id, output)
        if as_json:
            emit_json({"run_id": run_id, "html": str(path)})
        else:
            print(path)
        return
    current = _view(proj, run_id)
    values = {**current.values, "status": current.status.value}
    text = render_report(proj.run_dir(run_id), values, proj.store(run_id).records())
    if as_json:
        emit_json({"run_id": run_id, "status": current.status.value, "markdown": text,
                   "state": current.values})
        return
    print(text, end="")
