"""CLI commands of the gates room: ``portwright gates run``.

Exit codes: 0 every gate passed, 1 a gate failed, 2 bad input.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from portwright.cli.common import console, emit_json, err_console, project, revision

if TYPE_CHECKING:
    from portwright.project import Project
    from portwright.rules import Phase

gates_app = typer.Typer(help="Run the gates of the rules.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    """Add this room's commands to ``app``."""
    app.add_typer(gates_app, name="gates")


def _check_request(proj: Project, phase: Phase, only: list[str]) -> None:
    """Refuse, before a run is opened, what cannot give a meaningful result: a phase no gate
    guards (it would pass on nothing), a gate name that does not exist, an evidence key
    that cannot be used."""
    from portwright.errors import RulesError
    from portwright.rules import RULES_NAME
    from portwright.runs.keys import evidence_key

    gates = proj.rules().gates()
    if not any(phase in g.spec.phases for g in gates):
        raise RulesError(
            f"no gate guards phase {phase.value!r}: the phase would pass having checked "
            "nothing", file=proj.root / RULES_NAME,
            fix=f"add {phase.value!r} to the phases of the gates that must pass before it "
                "(and commit AGENTS.md)")
    unknown = sorted(set(only) - {g.name for g in gates} - {g.spec.name for g in gates})
    if unknown:
        raise RulesError(f"no gate named {', '.join(map(repr, unknown))}",
                         file=proj.root / RULES_NAME, key="--only",
                         fix="see the gates with `portwright rules check`")
    evidence_key()


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
    """Run the gates that guard a phase on a clean export of HEAD (its committed files
    only); commands run in a fresh sandbox, results are recorded as evidence in the run's
    folder in the state folder. The gates and the config are those committed at HEAD."""
    from portwright.errors import RulesError
    from portwright.gates._diff import default_base, name_status
    from portwright.rules import BuiltinCheck, Phase
    from portwright.vcs import plumbing
    from portwright.workflows import open_run
    from portwright.workflows.steps import judge

    try:
        chosen = Phase(phase)
    except ValueError as exc:
        raise RulesError(f"unknown phase {phase!r}",
                         fix=f"use one of: {', '.join(p.value for p in Phase)}") from exc
    proj = project(committed=True)
    _check_request(proj, chosen, only or [])
    if run_id is not None:
        proj.store(run_id)  # refuses an id that is not one (empty, a path, hidden)
    if base is not None:
        revision(proj.root, base, "--base")
    start = default_base(proj.root, base)
    commit = plumbing.rev_parse(proj.root, proj.revision or "HEAD")
    if not json and plumbing.status(proj.root)[1]:
        err_console.print("note: the gates judge HEAD as committed; uncommitted changes in "
                          "the checkout are not judged (commit them first)", markup=False)
    with open_run(proj, f"gates run --phase {chosen.value}", run_id=run_id, prefix="gates",
                  allow_local=allow_local, open_ahead=False) as run:
        changed = [c.path for c in name_status(proj.root, start, commit)]
        selected = run.rules.gates_for(chosen, changed)
        if only:
            selected = [g for g in selected if g.name in only or g.spec.name in only]
        needs_sandbox = any(g.spec.run is not None
                            or g.spec.check is BuiltinCheck.RUNTIME_CONFIG for g in selected)
        results = judge(run, commit, chosen.value, base=start, sandbox=needs_sandbox,
                        only=only or None)
    passed = all(r.passed for r in results)
    if json:
        emit_json({"phase": chosen.value, "run_id": run.run_id, "passed": passed,
                   "evidence": str(run.store.evidence_dir),
                   "results": [r.model_dump(mode="json") for r in results]})
    else:
        if not results:
            console.print(f"no gate guards phase {chosen.value!r} for this change")
        for verdict in results:
            mark = "[green]ok  [/]" if verdict.passed else "[red]FAIL[/]"
            console.print(f"{mark} {escape(verdict.name)}", highlight=False)
            for message in verdict.messages:
                (console if verdict.passed else err_console).print(
                    f"     {message}", markup=False, soft_wrap=True)
        console.print(f"evidence: {run.store.evidence_dir}", style="dim", markup=False)
    if not passed:
        raise typer.Exit(1)
