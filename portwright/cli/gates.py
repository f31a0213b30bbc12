"""CLI commands of the gates room: ``portwright gates run``.

Exit codes: 0 every gate passed, 1 a gate failed, 2 bad input.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from portwright.cli.common import config, console, emit_json, err_console, repo_path

if TYPE_CHECKING:
    from portwright.sandboxes.base import Sandbox

gates_app = typer.Typer(help="Run the gates of the rules.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    """Add this room's commands to ``app``."""
    app.add_typer(gates_app, name="gates")


@gates_app.command("run")
def gates_run(
    phase: Annotated[str, typer.Option(
        help="Phase whose gates run: spec, red, focused, full, reconcile, pin.")] = "full",
    only: Annotated[list[str] | None, typer.Option(
        "--only", help="Run only the gate with this name (repeatable).")] = None,
    base: Annotated[str | None, typer.Option(
        help="Downstream revision the change is measured from (default: HEAD~1).")] = None,
    run_id: Annotated[str | None, typer.Option(
        "--run-id", help="Record evidence under this run (default: a new gates-<time> id).")]
    = None,
    allow_local: Annotated[bool, typer.Option(
        "--allow-local", help="Run commands as plain host processes when no sandbox backend "
        "is usable (not isolation).")] = False,
    json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Run the gates that guard a phase; commands run in the sandbox, results are recorded
    as evidence under <state_dir>/runs/<run-id>/evidence/."""
    from contextlib import AbstractContextManager, nullcontext
    from datetime import UTC, datetime
    from pathlib import Path

    from portwright.errors import RulesError
    from portwright.gates import run_gates
    from portwright.gates._diff import default_base, git, name_status
    from portwright.rules import BuiltinCheck, Phase, load_rules
    from portwright.runs import RunStore

    repo, cfg = repo_path(), config()
    try:
        chosen = Phase(phase)
    except ValueError as exc:
        raise RulesError(f"unknown phase {phase!r}",
                         fix=f"use one of: {', '.join(p.value for p in Phase)}") from exc
    rules = load_rules(repo)
    run_id = run_id or datetime.now(UTC).strftime("gates-%Y%m%d-%H%M%S")
    store = RunStore.for_repo(repo, cfg, run_id)
    store.write_manifest(command=f"gates run --phase {chosen.value}",
                         commit=git(repo, "rev-parse", "HEAD").strip(),
                         rules_digests=rules.digests(), config=cfg)
    start = default_base(repo, base)
    changed = [c.path for c in name_status(repo, start)]
    selected = rules.gates_for(chosen, changed)
    if only:
        selected = [g for g in selected if g.name in only or g.spec.name in only]
    needs_sandbox = any(g.spec.run is not None or g.spec.check is BuiltinCheck.RUNTIME_CONFIG
                        for g in selected)
    context: AbstractContextManager[Sandbox | None] = nullcontext()
    if needs_sandbox:
        from portwright.errors import RepositoryError
        from portwright.sandboxes import open_sandbox
        from portwright.vcs.upstream import upstream_path

        try:
            upstream: Path | None = upstream_path(repo, cfg)
        except RepositoryError:
            upstream = None  # command gates can run without the upstream mounted
        context = open_sandbox(cfg.sandbox, worktree=repo, run_id=run_id,
                               log_dir=store.dir / "sandbox-logs", upstream=upstream,
                               allow_local=allow_local)
    with context as sandbox:
        results = run_gates(rules, chosen, sandbox=sandbox, repo=repo, config=cfg,
                            changed=changed, only=only or None, store=store, base=start)
    passed = all(r.passed for r in results)
    if json:
        emit_json({"phase": chosen.value, "run_id": run_id, "passed": passed,
                   "results": [r.model_dump(mode="json") for r in results]})
    else:
        if not results:
            console.print(f"no gate guards phase {chosen.value!r} for this change")
        for verdict in results:
            mark = "[green]ok  [/]" if verdict.passed else "[red]FAIL[/]"
            console.print(f"{mark} {verdict.name}", highlight=False)
            for message in verdict.messages:
                (console if verdict.passed else err_console).print(
                    f"     {message}", markup=False, soft_wrap=True)
        console.print(f"[dim]evidence: {store.evidence_dir}[/]")
    if not passed:
        raise typer.Exit(1)
