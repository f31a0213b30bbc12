"""``portwright doctor``: is this machine and this repo ready for a run?

Each check returns ok / warn / fail with the fix. ``fail`` means a run cannot
work; ``warn`` means some commands can (gates, anchors, gap) but not all.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from portwright.config import PortwrightConfig, SandboxBackend, load_config
from portwright.errors import PortwrightError
from portwright.rules import load_rules
from portwright.vcs.git import open_repo, resolve
from portwright.vcs.upstream import upstream_path

Status = Literal["ok", "warn", "fail"]


@dataclass(frozen=True)
class Check:
    """One line of the doctor's report."""

    name: str
    status: Status
    detail: str
    fix: str = ""


def diagnose(repo: Path) -> list[Check]:
    """Run every check; later checks that need the config are skipped when it is bad."""
    checks = [_git(repo)]
    try:
        config = load_config(repo)
    except PortwrightError as exc:
        checks.append(Check("config", "fail", str(exc).split("\n")[0], _fix_of(exc)))
        return checks
    checks.append(Check("config", "ok", f"{repo / 'portwright.toml'} is valid"))
    probes: list[Callable[[Path, PortwrightConfig], Check]] = [_rules, _upstream, _pin,
                                                                _sandbox, _model]
    for probe in probes:
        try:
            checks.append(probe(repo, config))
        except PortwrightError as exc:
            checks.append(Check(probe.__name__.strip("_"), "fail", str(exc).split("\n")[0],
                                _fix_of(exc)))
    return checks


def _fix_of(exc: PortwrightError) -> str:
    return str(getattr(exc, "fix", "") or "")


def _git(repo: Path) -> Check:
    if shutil.which("git") is None:
        return Check("git", "fail", "git is not installed", "apt-get install -y git")
    version = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip()
    try:
        open_repo(repo, what="the downstream repository")
    except PortwrightError as exc:
        return Check("git", "fail", f"{version}; {str(exc).splitlines()[0]}", _fix_of(exc))
    return Check("git", "ok", f"{version}; {repo} is a git repository")


def _rules(repo: Path, config: PortwrightConfig) -> Check:
    rules = load_rules(repo)
    gates = rules.gates()
    files = ", ".join(f.path for f in rules.files)
    if not gates:
        return Check("rules", "warn", f"{files}: no gates declared",
                     "add a ```toml portwright block (see `portwright init`)")
    return Check("rules", "ok", f"{files}: {len(gates)} gates")


def _upstream(repo: Path, config: PortwrightConfig) -> Check:
    path = upstream_path(repo, config)
    open_repo(path, what="the upstream checkout")
    return Check("upstream", "ok", f"{config.upstream.name} at {path}")


def _pin(repo: Path, config: PortwrightConfig) -> Check:
    from portwright.parity.pin import read_pin

    pin = read_pin(repo, config)
    upstream = open_repo(upstream_path(repo, config), what="the upstream checkout")
    sha = resolve(upstream, pin)
    return Check("pin", "ok", f"{config.pin.file}: {pin} → {sha[:12]} resolves upstream")


def _sandbox(repo: Path, config: PortwrightConfig) -> Check:
    backend = config.sandbox.backend
    if backend == SandboxBackend.LOCAL:
        return Check("sandbox", "warn", "backend `local`: commands run WITHOUT isolation",
                     "set sandbox.backend = \"auto\" and start a Docker engine")
    if backend in (SandboxBackend.AUTO, SandboxBackend.DOCKER):
        engine, answered = _docker_engine(config.sandbox.image)
        if answered or backend == SandboxBackend.DOCKER:
            return engine
    if shutil.which("bwrap") is None:
        return Check("sandbox", "fail", "no Docker engine answers and bubblewrap is missing",
                     "start dockerd (`make engine` as root) or apt-get install -y bubblewrap")
    done = subprocess.run(["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "true"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        return Check("sandbox", "fail", f"bubblewrap cannot create namespaces: "
                     f"{done.stderr.strip()}", "start a Docker engine instead")
    return Check("sandbox", "ok", "bubblewrap (no Docker engine answers)")


def _docker_engine(image: str) -> tuple[Check, bool]:
    import docker
    from docker.errors import DockerException, ImageNotFound

    try:
        client = docker.from_env(timeout=5)
        version = client.version().get("Version", "?")
    except DockerException:
        return Check("sandbox", "fail", "no Docker engine answers",
                     "start it: `dockerd >/var/log/dockerd.log 2>&1 &` as root (Debian: "
                     "apt-get install -y docker.io), or set DOCKER_HOST"), False
    try:
        client.images.get(image)
    except ImageNotFound:
        return Check("sandbox", "fail", f"Docker {version}: image {image} is missing",
                     "build it offline: `portwright sandbox base-image`"), True
    finally:
        client.close()
    return Check("sandbox", "ok", f"Docker {version}, image {image} present"), True


def _model(repo: Path, config: PortwrightConfig) -> Check:
    model = config.model
    if model.provider == "replay":
        cassette = model.cassette and (repo / model.cassette)
        if not cassette or not cassette.is_file():
            return Check("model", "fail", f"replay cassette not found: {model.cassette}",
                         "set model.cassette to a recorded transcript (portwright … --record)")
        return Check("model", "ok", f"replay of {model.cassette}")
    where = model.base_url or "OpenAI (default endpoint)"
    if not os.environ.get(model.api_key_env) and model.base_url is None:
        return Check("model", "warn", f"{model.name} at {where}: ${model.api_key_env} is not set",
                     f"export {model.api_key_env}=… (only the agents need it; "
                     "gap, anchors, gates and rows work without a model)")
    return Check("model", "ok", f"{model.name} at {where}")
