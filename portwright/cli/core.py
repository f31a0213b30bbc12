"""CLI commands of the foundation: init, rules check, doctor."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from portwright.cli.common import console, emit_json, repo_path

rules_app = typer.Typer(help="Read and check the AGENTS.md rules and gates.",
                        no_args_is_help=True)

_STYLE = {"ok": "green", "warn": "yellow", "fail": "red", "created": "green", "appended": "cyan",
          "kept": "dim"}


def _mark(word: str, width: int) -> str:
    return f"[{_STYLE[word]}]{word:>{width}}[/]"


def register(app: typer.Typer) -> None:
    """Add the foundation's commands to ``app``."""
    app.command()(init)
    app.command()(doctor)
    app.add_typer(rules_app, name="rules")


def init(
    upstream: Annotated[str, typer.Option(
        help="Upstream project: a path relative to this repository, or a git URL.")],
    pin: Annotated[str | None, typer.Option(
        help="Upstream revision the port matches today (default: upstream HEAD).")] = None,
    name: Annotated[str | None, typer.Option(help="Display name of the upstream.")] = None,
    test_command: Annotated[str, typer.Option(
        help="Command of the first gate.")] = "python3 -m pytest -q",
) -> None:
    """Scaffold portwright.toml, an AGENTS.md gates section and empty parity files.

    Nothing that exists is overwritten.
    """
    from portwright.scaffold import scaffold

    repo = repo_path()
    done = scaffold(repo, upstream=upstream, pin=pin, name=name, test_command=test_command)
    for item in done:
        why = f"  [dim]{escape(item.why)}[/]" if item.why else ""
        console.print(f"{_mark(item.action, 8)}  {item.path}{why}", soft_wrap=True)
    console.print("\nnext: [bold]portwright rules check[/], then [bold]portwright doctor[/]")


def doctor(
    json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Check git, config, rules, upstream, pin, the evidence key, sandbox (its image, the
    environment image, GPUs), model and pull requests; each with its fix. The model endpoint
    gets one tiny request and GitHub a read of the repository, each waited for at most
    10 s."""
    from portwright.doctor import diagnose

    checks = diagnose(repo_path())
    failed = [c for c in checks if c.status == "fail"]
    bad = next((c for c in failed if c.bad_input), None)
    if json:
        payload: dict[str, object] = {"ok": not failed, "checks": [asdict(c) for c in checks]}
        env = next((c.facts for c in checks if c.name == "env-image"), None)
        if env is not None:
            payload["env_image"] = env
        if bad is not None:
            payload["error"] = {"check": bad.name, "message": bad.detail, "fix": bad.fix}
        emit_json(payload)
    else:
        for check in checks:
            line = f"{_mark(check.status, 4)}  [bold]{check.name:<9}[/] {escape(check.detail)}"
            console.print(line, soft_wrap=True)
            if check.fix and check.status != "ok":
                console.print(f"{'':>4}  {'':<9} [dim]fix: {escape(check.fix)}[/]", soft_wrap=True)
    if failed:
        raise typer.Exit(2 if bad is not None else 1)


@rules_app.command("check")
def rules_check(
    json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Parse every AGENTS.md, validate the gates block and print the gates.

    Gates syntax: one fenced block per AGENTS.md whose info string is
    `toml portwright`, holding `[[gate]]` tables with `name`, `run` (a command) or
    `check` (built-in: anchors, spec-complete, reconciled, red-green,
    no-test-weakening, seams, additive, runtime-config), `phases` (spec, red,
    focused, full, reconcile, pin), `timeout`, `paths`, `junit`, `options`.
    Also `additive = [globs]`, `[[seam]]`, `[[runtime]]` and `[spec]`.
    """
    from portwright.errors import RulesError
    from portwright.rules import RULES_NAME, load_rules

    rules = load_rules(repo_path())
    gates = rules.gates()
    if not gates:
        raise RulesError("no gates declared: nothing would be checked",
                         file=repo_path() / RULES_NAME,
                         fix="add a ```toml portwright block with [[gate]] tables "
                             "(`portwright init` writes one)")
    if json:
        emit_json({"ok": True, "files": [{"path": f.path, "sha256": f.sha256}
                                         for f in rules.files],
                   "gates": [{"name": g.name, **g.spec.model_dump(mode="json"),
                              "source": g.source} for g in gates]})
        return
    table = Table(title="gates", title_justify="left")
    for column in ("name", "kind", "phases", "timeout", "paths", "from"):
        table.add_column(column)
    for gate in gates:
        kind = f"check {gate.spec.check}" if gate.spec.check else f"run {gate.spec.run}"
        table.add_row(escape(gate.name), escape(kind), ", ".join(gate.spec.phases),
                      f"{gate.spec.timeout:g}s", escape(", ".join(gate.spec.paths) or "all"),
                      escape(gate.source))
    console.print(table)
    for rules_file in rules.files:
        console.print(f"[dim]{escape(rules_file.path)}  sha256 {rules_file.sha256[:16]}…[/]")
