"""CLI commands of the sandbox room: ``portwright sandbox base-image|build|prune|exec|info``."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from portwright.cli.common import STATE, console, emit_json, err_console, project
from portwright.config import SandboxBackend

if TYPE_CHECKING:
    from portwright.config import SandboxConfig

sandbox_app = typer.Typer(
    help="Sandboxes: the offline base image, the environment image, leftovers of dead runs, "
         "one-off commands.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    """Add this room's commands to ``app``."""
    app.add_typer(sandbox_app, name="sandbox")


def _settings() -> tuple[SandboxConfig, Path]:
    """The repo's ``[sandbox]`` config as committed at HEAD (defaults without a
    portwright.toml) and the state folder (outside a project: ``$PORTWRIGHT_STATE_DIR``,
    else the user's, made private when missing)."""
    from portwright.config import CONFIG_FILE, SandboxConfig
    from portwright.environment import private_folder, state_home

    repo = STATE.repo
    if (repo / CONFIG_FILE).is_file():
        proj = project(committed=True)
        return proj.config.sandbox, proj.state_dir
    return SandboxConfig(), private_folder(state_home())


def _check_timeout(seconds: float) -> None:
    from portwright.errors import UsageError
    from portwright.values import MAX_SECONDS, MIN_SECONDS, check_seconds

    try:
        check_seconds(seconds)
    except ValueError as exc:
        raise UsageError(str(exc), key="--timeout",
                         fix=f"pass a number of seconds from {MIN_SECONDS:g} to {MAX_SECONDS:g}"
                         ) from exc


@sandbox_app.command("base-image")
def base_image(
    tag: Annotated[str, typer.Option("--tag", help="Image tag to build.")] = (
        "portwright/base:bookworm"),
    force: Annotated[bool, typer.Option("--force", help="Rebuild even if it exists.")] = False,
) -> None:
    """Build the offline base image (debootstrap from this machine's Debian mirror)."""
    from portwright.sandboxes.images import build_base_image

    started = time.monotonic()
    image_id = build_base_image(tag, force=force,
                                progress=lambda line: console.print(f"[dim]·[/] {line}"))
    console.print(f"[green]ok[/] {tag} {image_id[:19]} ({time.monotonic() - started:.1f} s)")


@sandbox_app.command("build")
def build_cmd(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Build the environment image: ``[sandbox] setup`` (and ``dockerfile``) on the base
    image, with network, from the files committed at HEAD. Returns at once when it is built.

    Runs build it on first use too; this builds it ahead (and shows its log on failure).
    """
    from portwright.sandboxes.envimage import EnvSource, ensure_env_image, needs_env_image

    config, state_dir = _settings()
    if not needs_env_image(config):
        payload: dict[str, Any] = {"ok": True, "state": "none", "image": config.image,
                                   "built": False}
        if as_json:
            emit_json(payload)
            return
        console.print(f"no environment image: [sandbox] has no setup and no dockerfile; "
                      f"sandboxes run {escape(config.image)}")
        return
    if not as_json:
        console.print("[dim]·[/] building the environment image if it is missing (network on "
                      "during the build only)")
    done = ensure_env_image(config, EnvSource(STATE.repo, "HEAD", state_dir))
    if as_json:
        emit_json({"ok": True, "state": "built", "image": done.tag, "key": done.key,
                   "built": done.built, "seconds": round(done.seconds, 3),
                   "log": str(done.log_path) if done.log_path else None,
                   "lockfiles": list(done.lockfiles)})
        return
    what = f"built in {done.seconds:.1f} s; log {done.log_path}" if done.built else \
        "already built; nothing to do"
    console.print(f"[green]ok[/] {escape(done.tag)} ({escape(what)})")
    if done.lockfiles:
        console.print(f"  lockfiles: {escape(', '.join(done.lockfiles))}")


@sandbox_app.command("prune")
def prune_cmd(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    all_runs: Annotated[bool, typer.Option(
        "--all", help="Also remove containers of runs whose process still lives.")] = False,
    images: Annotated[bool, typer.Option(
        "--images", help="Also remove older environment images (each repository keeps its "
        "newest).")] = False,
    timeout: Annotated[float, typer.Option(
        "--timeout", min=0.1, help="Seconds the engine gets per container before it is "
        "skipped.")] = 10.0,
) -> None:
    """Remove sandbox containers whose run process is gone (crashed or killed runs), and
    give back the worktrees they held."""
    from portwright.sandboxes.images import prune_images
    from portwright.sandboxes.prune import prune

    report = prune(all_runs=all_runs, timeout=timeout)
    removed_images = prune_images() if images else []
    if as_json:
        emit_json({**report.model_dump(mode="json"), "removed_images": removed_images})
        return
    if not (report.removed or report.skipped or report.restored or removed_images):
        console.print("nothing to prune")
    for run_id in report.removed:
        console.print(f"removed the sandbox of run [bold]{escape(run_id)}[/]")
    for worktree in report.restored:
        console.print(f"gave {escape(worktree)} back to its owner")
    for skipped in report.skipped:
        err_console.print(f"[yellow]skipped[/] the sandbox of {escape(skipped)}")
    for tag in removed_images:
        console.print(f"removed image {escape(tag)}")


@sandbox_app.command("info")
def info_cmd(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Which backend a run would use here, and why."""
    from portwright.config import CONFIG_FILE
    from portwright.sandboxes.images import missing_image_fix
    from portwright.sandboxes.selection import select_backend

    config, state_dir = _settings()
    selection = select_backend(config)
    payload: dict[str, Any] = selection.model_dump(mode="json")
    payload["image"] = config.image
    if selection.backend == SandboxBackend.DOCKER:
        from portwright.sandboxes.engine import docker_client
        from portwright.sandboxes.envimage import EnvSource, env_status
        from portwright.sandboxes.images import image_exists

        client = docker_client()
        try:
            payload["image_present"] = image_exists(client, config.image)
            if (STATE.repo / CONFIG_FILE).is_file():
                status = env_status(config, EnvSource(STATE.repo, "HEAD", state_dir), client)
                payload["env_image"] = {"state": status.state, "tag": status.tag,
                                        "older": list(status.older)}
        finally:
            client.close()
    payload["limits"] = {"memory": config.memory, "pids": config.pids, "cpus": config.cpus,
                         "tmpfs": config.tmpfs_size, "network": config.network,
                         "timeout": config.timeout}
    if as_json:
        emit_json(payload)
        return
    chosen = selection.backend.value if selection.backend else "[red]none[/]"
    console.print(f"backend: [bold]{chosen}[/]  ({selection.reason})")
    console.print(f"  docker: {selection.docker}")
    console.print(f"  bwrap:  {selection.bwrap}")
    present = payload.get("image_present")
    missing = f" [red](missing: {escape(missing_image_fix(config.image))})[/]"
    note = "" if present is None else (" (present)" if present else missing)
    console.print(f"  image:  {payload['image']}{note}")
    env = payload.get("env_image")
    if env is not None and env["state"] != "none":
        hint = "" if env["state"] == "built" else " (portwright sandbox build)"
        console.print(f"  env:    {escape(str(env['tag']))} {env['state']}{hint}")
    limits = payload["limits"]
    console.print("  limits: " + ", ".join(f"{k}={v}" for k, v in limits.items()))


@sandbox_app.command("exec", context_settings={"allow_interspersed_args": False})
def exec_cmd(
    command: Annotated[list[str], typer.Argument(help="The command and its arguments.")],
    backend: Annotated[SandboxBackend | None, typer.Option(
        "--backend", "-b", help="auto, docker, bwrap or local (default: the config's).")] = None,
    timeout: Annotated[float | None, typer.Option("--timeout", help="Seconds.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    allow_local: Annotated[bool, typer.Option(
        "--allow-local", help="Run the command as a plain host process when the config asks "
        "for it or no sandbox backend is usable (not isolation).")] = False,
) -> None:
    """Run one command in a fresh sandbox on this repository and show what happened.

    Example: ``portwright sandbox exec -- make test``. Exits with the command's code.
    ``--backend local`` on the command line counts as ``--allow-local``; ``backend =
    "local"`` in portwright.toml does not.
    """
    from portwright.runs.keys import evidence_key_dir
    from portwright.sandboxes.envimage import EnvSource
    from portwright.sandboxes.selection import open_sandbox

    if timeout is not None:
        _check_timeout(timeout)
    config, state_dir = _settings()
    if backend is not None:
        config = config.model_copy(update={"backend": backend})
    run_id = f"exec-{os.getpid()}-{int(time.time())}"
    log_dir = state_dir / "sandbox" / run_id
    sandbox = open_sandbox(config, worktree=STATE.repo, run_id=run_id, log_dir=log_dir,
                           key_dir=evidence_key_dir(),
                           allow_local=allow_local or backend == SandboxBackend.LOCAL,
                           source=EnvSource(STATE.repo, "HEAD", state_dir))
    with sandbox as sb:
        result = sb.exec(command, timeout=timeout)
    if as_json:
        emit_json(result)
    else:
        for stream, head, tail, total in (
            ("stdout", result.stdout_head, result.stdout_tail, result.stdout_bytes),
            ("stderr", result.stderr_head, result.stderr_tail, result.stderr_bytes),
        ):
            if not total:
                continue
            out = console if stream == "stdout" else err_console
            out.print(head, end="", markup=False, highlight=False)
            if tail:
                out.print(f"\n[dim]… {total - len(head.encode()) - len(tail.encode())} "
                          "bytes not shown …[/]")
                out.print(tail, end="", markup=False, highlight=False)
        flags = [name for name, on in (("timed out", result.timed_out),
                                       ("out of memory", result.oom_killed),
                                       ("output capped", result.capped)) if on]
        colour = "green" if result.ok else "red"
        err_console.print(
            f"[{colour}]exit {result.exit_code}[/] in {result.duration:.2f} s on "
            f"{sb.name}{' (' + ', '.join(flags) + ')' if flags else ''}; log {result.log_path}")
    if result.exit_code != 0 or not result.ok:
        raise typer.Exit(result.exit_code if result.exit_code > 0 else 1)
