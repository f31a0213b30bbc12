"""CLI commands of the agents room: ``model check``, ``prompts render``, ``agent verify-gap``."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.rule import Rule
from rich.table import Table

from portwright.cli.common import config, console, emit_json, project, repo_path

agent_app = typer.Typer(help="Run one agent role on its own.", no_args_is_help=True)
model_app = typer.Typer(help="The model endpoint the agents talk to.", no_args_is_help=True)
prompts_app = typer.Typer(help="The prompt templates of the roles.", no_args_is_help=True)

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def register(app: typer.Typer) -> None:
    """Add this room's commands to ``app``."""
    app.add_typer(model_app, name="model")
    app.add_typer(prompts_app, name="prompts")
    app.add_typer(agent_app, name="agent")


@model_app.command("check")
def model_check(
    offline: Annotated[bool, typer.Option(
        "--offline", help="Only show the configuration; send no request.")] = False,
    json: JsonOption = False,
) -> None:
    """Show the endpoint, the model and the key variable; send one tiny request.

    With --offline no request is sent.
    """
    from portwright.agents.models import build_client, describe, ping
    from portwright.agents.offline import ReplayModel, load_cassette
    from portwright.errors import PortwrightError, UsageError

    repo, cfg = repo_path(), config()
    endpoint = describe(cfg.model, repo)
    report: dict[str, Any] = {"endpoint": endpoint, "request": None}
    failed = bad_input = False
    if endpoint.cassette is not None:
        try:
            report["cassette_calls"] = len(load_cassette(Path(endpoint.cassette)))
        except PortwrightError as exc:  # an unreadable cassette is bad input
            report["error"] = _error(exc, "set model.cassette to a cassette recorded with "
                                          "--record (JSON lines)")
            failed = bad_input = True
    if not offline and not failed:
        try:
            client = build_client(cfg.model, repo)
            if not isinstance(client, ReplayModel):
                done = ping(client)
                report["request"] = {"reply": done.reply, "model": done.model,
                                     "seconds": done.seconds, "usage": done.usage}
        except PortwrightError as exc:
            report["error"], failed = _error(exc), True
            bad_input = isinstance(exc, UsageError)
    if json:
        emit_json({"ok": not failed, **report})
    else:
        _print_model_check(report)
    if failed:
        raise typer.Exit(2 if bad_input else 1)


def _error(exc: Exception, fix: str | None = None) -> dict[str, Any]:
    """The JSON error object of a failed check."""
    return {"type": type(exc).__name__, "message": str(exc).split("\n")[0],
            "fix": getattr(exc, "fix", None) or fix}


def _print_model_check(report: dict[str, Any]) -> None:
    endpoint = report["endpoint"]
    console.print(f"provider  {endpoint.provider}")
    console.print(f"model     {endpoint.model}")
    if endpoint.cassette is not None:
        calls = report.get("cassette_calls")
        console.print(f"cassette  {endpoint.cassette}"
                      + (f" ({calls} calls)" if calls is not None else ""), soft_wrap=True)
    else:
        console.print(f"endpoint  {endpoint.base_url}", soft_wrap=True)
        state = "[green]set[/]" if endpoint.api_key_set else "[yellow]not set[/]"
        console.print(f"key       {endpoint.api_key_env} {state}")
    request = report.get("request")
    if request is not None:
        usage = request["usage"]
        console.print(f"request   [green]ok[/] in {request['seconds']}s: "
                      f"{(request['reply'] or '').strip()[:60]!r} "
                      f"({usage.prompt_tokens}+{usage.completion_tokens} tokens)")
    if "error" in report:
        error = report["error"]
        console.print(f"[red]error[/]     {escape(error['message'])}", soft_wrap=True)
        if error.get("fix"):
            console.print(f"          fix: {escape(error['fix'])}", soft_wrap=True)


@prompts_app.command("render")
def prompts_render(
    role: Annotated[str, typer.Argument(
        help="gap_verifier, enumerator, implementer or reviewer.")],
    mode: Annotated[str, typer.Option(
        help="For the implementer: tests_only or implementation_only.")] = "implementation_only",
    json: JsonOption = False,
) -> None:
    """Render a role's prompt with sample context (for people writing rules and templates)."""
    from portwright.agents.roles import ROLES
    from portwright.agents.roles.implementer import sample as implementer_sample

    chosen = ROLES.get(role)
    if chosen is None or chosen.sample is None:
        raise typer.BadParameter(f"unknown role {role!r}; roles: {', '.join(ROLES)}",
                                 param_hint="ROLE")
    if role == "implementer":
        if mode not in ("tests_only", "implementation_only"):
            raise typer.BadParameter("tests_only or implementation_only", param_hint="--mode")
        context: Any = implementer_sample("tests_only" if mode == "tests_only"
                                          else "implementation_only")
    else:
        context = chosen.sample()
    messages = chosen.messages(context)
    if json:
        emit_json({"role": role, "template": chosen.template, "tools": list(chosen.tools),
                   "messages": [m.model_dump(exclude_defaults=True) for m in messages]})
        return
    for message in messages:
        console.print(Rule(message.role))
        console.print(message.content or "", markup=False, soft_wrap=True)


@agent_app.command("verify-gap")
def verify_gap(
    symbol: Annotated[list[str], typer.Option(
        "--symbol", "-s", help="A symbol, literal or fixture of the behaviour (repeatable).")],
    record: Annotated[Path | None, typer.Option(
        help="Record every model call into this cassette.")] = None,
    replay: Annotated[Path | None, typer.Option(
        help="Play the model from this cassette instead of an endpoint.")] = None,
    run_id: Annotated[str | None, typer.Option(help="Run id (default: a new one).")] = None,
    json: JsonOption = False,
) -> None:
    """Run the gap verifier on this repository at the upstream pin and print its verdict."""
    from portwright.agents.budget import RunBudget
    from portwright.agents.evidence import gap_source
    from portwright.agents.models import build_client
    from portwright.agents.roles.gap_verifier import ROLE, context_from_evidence
    from portwright.agents.tools import EvidenceSources, Workspace
    from portwright.agents.transcript import TRANSCRIPT_NAME, Transcript
    from portwright.evidence.gap import row_evidence, upstream_repo
    from portwright.parity.pin import read_pin
    from portwright.vcs.plumbing import rev_parse

    proj = project(committed=True)
    repo, cfg = proj.root, proj.config
    upstream = upstream_repo(proj)
    pin = read_pin(repo, cfg)
    rules = proj.rules()
    found = row_evidence(upstream, repo, symbol, pin, cfg)
    context = context_from_evidence(
        found, upstream, rules_prose=rules.prose_for(None), upstream_name=cfg.upstream.name)
    client = build_client(cfg.model, repo, record=record, replay=replay)
    run_id = run_id or (f"verify-gap-{datetime.now(UTC):%Y%m%dT%H%M%SZ}-"
                        f"{secrets.token_hex(3)}")
    store = proj.store(run_id)
    path = store.dir / TRANSCRIPT_NAME
    store.write_manifest(
        command="agent verify-gap " + " ".join(f"--symbol {s}" for s in symbol),
        commit=rev_parse(repo, "HEAD"),
        rules_digests=rules.digests(), config=cfg)
    workspace = Workspace(worktree=repo, upstream=upstream, pin=found.pin,
                          evidence=EvidenceSources(gap=gap_source(upstream, repo, found.pin,
                                                                  cfg)))
    budget = RunBudget(cfg.model.budget, cfg.model.role_budgets, cfg.model.prices)
    outcome = ROLE.run(context, client=client, workspace=workspace,
                       budget=budget.for_role(ROLE.name), transcript=Transcript(path),
                       max_steps=cfg.model.max_steps, ceiling=cfg.model.context_tokens)
    payload = {"ok": outcome.ok, "run_id": run_id, "status": str(outcome.status),
               "reason": outcome.reason, "verdict": outcome.result, "transcript": str(path),
               "spent": budget.report()["run"]}
    if outcome.error is not None:
        payload["error"] = _error(outcome.error)
    if json:
        emit_json(payload)
    else:
        _print_verdict(payload, outcome.result)
    if not outcome.ok:
        raise typer.Exit(1)


def _print_verdict(payload: dict[str, Any], verdict: Any) -> None:
    spent = payload["spent"]
    if verdict is None:
        console.print(f"[red]{payload['status']}[/]: {escape(payload['reason'])}",
                      soft_wrap=True)
    else:
        console.print(f"verdict   [bold]{verdict.status}[/]")
        console.print(f"reasoning {verdict.reasoning}", markup=False, soft_wrap=True)
        table = Table("kind", "ref", "detail")
        for item in verdict.evidence:
            table.add_row(item.kind, item.ref, item.detail)
        console.print(table)
        for part in verdict.missing_parts:
            console.print(f"missing   {part}", markup=False)
    console.print(f"[dim]{spent.calls} calls, {spent.usage.total_tokens} tokens "
                  f"({spent.usage.cached_tokens} cached), ${spent.cost_usd:.4f}; "
                  f"transcript {payload['transcript']}[/]", soft_wrap=True)
