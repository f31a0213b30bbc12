"""``portwright doctor``: is this machine and this repo ready for a run?

Each check returns ok / warn / fail with the fix; the remotes (the model endpoint, the
pull-request backend) are asked once, briefly, what a run will ask them. ``fail`` means a
run cannot work; ``warn`` means some commands can (gates, anchors, gap) but not all. A
failure that comes from bad input (a config, rules, pin or repository a person must
correct) says so (``bad_input``): the command then exits 2, like every other command on
bad input.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from portwright.config import PortwrightConfig, SandboxBackend, load_config
from portwright.errors import PortwrightError, UsageError
from portwright.project import Project
from portwright.rules import BuiltinCheck, Phase, load_rules
from portwright.vcs import plumbing
from portwright.vcs.git import open_repo

if TYPE_CHECKING:
    from docker import DockerClient

Status = Literal["ok", "warn", "fail"]

REMOTE_TIMEOUT = 10.0
"""Seconds the doctor waits for a remote it reports on (the model endpoint, GitHub's API),
which it asks once, without retries."""


@dataclass(frozen=True)
class Check:
    """One line of the doctor's report."""

    name: str
    status: Status
    detail: str
    fix: str = ""
    bad_input: bool = False
    """The failure is bad input (a :class:`~portwright.errors.UsageError`)."""
    facts: dict[str, Any] | None = None
    """What the check found, for ``--json`` (the environment image's state and tag …)."""


def _failed(name: str, exc: PortwrightError, prefix: str = "") -> Check:
    return Check(name, "fail", prefix + str(exc).split("\n")[0], _fix_of(exc),
                 bad_input=isinstance(exc, UsageError))


def diagnose(repo: Path) -> list[Check]:
    """Run every check; later checks that need the config are skipped when it is bad."""
    checks = [_git(repo)]
    try:
        config = load_config(repo)
    except PortwrightError as exc:
        checks.append(_failed("config", exc))
        return checks
    checks.append(Check("config", "ok", f"{repo / 'portwright.toml'} is valid"))
    probes: list[Callable[[Path, PortwrightConfig], Check | list[Check]]] = [
        _rules, _upstream, _pin, _evidence, _sandbox, _model, _pr]
    for probe in probes:
        try:
            found = probe(repo, config)
        except PortwrightError as exc:
            found = _failed(probe.__name__.strip("_"), exc)
        checks += found if isinstance(found, list) else [found]
    return checks


def _fix_of(exc: PortwrightError) -> str:
    return str(getattr(exc, "fix", "") or "")


def _git(repo: Path) -> Check:
    if shutil.which("git") is None:
        return Check("git", "fail", "git is not installed", "apt-get install -y git")
    version = plumbing.version()
    try:
        open_repo(repo, what="the downstream repository")
    except PortwrightError as exc:
        return _failed("git", exc, f"{version}; ")
    return Check("git", "ok", f"{version}; {repo} is a git repository")


def _rules(repo: Path, config: PortwrightConfig) -> Check:
    rules = load_rules(repo)
    gates = rules.gates()
    files = ", ".join(f.path for f in rules.files)
    if not gates:
        return Check("rules", "warn", f"{files}: no gates declared",
                     "add a ```toml portwright block (see `portwright init`)")
    full = [g for g in gates if Phase.FULL in g.spec.phases]
    missing = [c.value for c in (BuiltinCheck.TAMPER, BuiltinCheck.PROTECTED_PATHS)
               if not any(g.spec.check is c for g in full)]
    tamper = [g for g in full if g.spec.check is BuiltinCheck.TAMPER]
    if tamper and not any(g.spec.options.get("fail") is True for g in tamper):
        missing.append("tamper with options = { fail = true }")
    if missing:
        return Check("rules", "warn",
                     f"{files}: {len(gates)} gates, but the full phase lacks the integrity "
                     f"gates ({', '.join(missing)}): a change that forges its tests' result "
                     "from inside would pass",
                     'add [[gate]] check = "tamper", options = { fail = true } and [[gate]] '
                     'check = "protected-paths", with phases = ["full"] (what `portwright '
                     'init` writes)')
    return Check("rules", "ok", f"{files}: {len(gates)} gates, integrity gates failing")


def _upstream(repo: Path, config: PortwrightConfig) -> Check:
    path = Project(repo, config).upstream()
    open_repo(path, what="the upstream checkout")
    return Check("upstream", "ok", f"{config.upstream.name} at {path}")


def _pin(repo: Path, config: PortwrightConfig) -> Check:
    from portwright.parity.pin import read_pin, resolve_pin

    pin = read_pin(repo, config)
    sha = resolve_pin(repo, config, Project(repo, config).upstream())
    return Check("pin", "ok", f"{config.pin.file}: {pin} → {sha[:12]} resolves upstream")


def _evidence(repo: Path, config: PortwrightConfig) -> Check:
    """The evidence key every run signs its records with: made on first use, and private
    to this user (a folder or file others can reach fails, with the ``chmod`` that fixes
    it: a run would stop on it at its first node)."""
    from portwright.runs.keys import evidence_key, evidence_key_path

    evidence_key()
    return Check("evidence", "ok", f"key {evidence_key_path()}, private to this user")


def _sandbox(repo: Path, config: PortwrightConfig) -> list[Check]:
    """The backend, its image, the environment image and GPUs: each its own line."""
    from portwright.sandboxes.selection import DOCKER_FIX, select_backend

    selection = select_backend(config.sandbox)
    if selection.backend is None:
        return [Check("sandbox", "fail", selection.reason, DOCKER_FIX)]
    if selection.backend == SandboxBackend.LOCAL:
        return [Check("sandbox", "warn", "backend `local`: commands run WITHOUT isolation",
                      "set sandbox.backend = \"auto\" and start a Docker engine")]
    if selection.backend == SandboxBackend.BWRAP:
        checks = [Check("sandbox", "ok", f"bubblewrap ({selection.reason})")]
        if config.sandbox.gpus is not None:
            checks.append(Check("gpus", "fail", "[sandbox] gpus: bubblewrap gives no GPUs",
                                "use the Docker backend with the NVIDIA container toolkit, or "
                                "remove [sandbox] gpus", bad_input=True))
        if config.sandbox.setup:
            from portwright.sandboxes.common import NO_IMAGE_SETUP

            checks.append(Check("env-image", "warn", NO_IMAGE_SETUP,
                                "start a Docker engine to build [sandbox] setup into an image",
                                facts={"state": "none", "backend": "bwrap"}))
        return checks
    return _docker(repo, config)


def _docker(repo: Path, config: PortwrightConfig) -> list[Check]:
    from portwright.sandboxes.engine import docker_client

    client = docker_client()
    try:
        checks = [_docker_image(client, config)]
        try:
            checks.append(_env_image(repo, config, client))
        except PortwrightError as exc:
            checks.append(_failed("env-image", exc))
        if config.sandbox.gpus is not None:
            checks.append(_gpus(client, config))
    finally:
        client.close()
    return checks


def _docker_image(client: DockerClient, config: PortwrightConfig) -> Check:
    """The engine answers; is the image sandboxes build on there? (Its absence is not the
    engine's: the fix builds the image.)"""
    from portwright.sandboxes.images import image_exists, missing_image_fix

    version = client.version().get("Version", "?")
    image = config.sandbox.image
    if config.sandbox.dockerfile:
        return Check("sandbox", "ok", f"Docker {version}; the environment image starts from "
                     f"{config.sandbox.dockerfile}")
    if not image_exists(client, image):
        return Check("sandbox", "fail", f"Docker {version} answers, but the sandbox image "
                     f"{image} is missing", missing_image_fix(image))
    return Check("sandbox", "ok", f"Docker {version}, image {image} present")


def _env_image(repo: Path, config: PortwrightConfig, client: DockerClient) -> Check:
    """Built, stale or missing: the environment image of the config committed at HEAD."""
    from portwright.sandboxes.envimage import EnvSource, env_status

    try:
        sandbox = Project.load(repo, at="HEAD").config.sandbox
    except PortwrightError:
        sandbox = config.sandbox  # nothing committed yet: the working file
    status = env_status(sandbox, EnvSource(repo), client)
    facts: dict[str, Any] = {"state": status.state, "tag": status.tag, "image": status.image,
                             "older": list(status.older), "lockfiles": list(status.lockfiles),
                             "build": "portwright sandbox build"}
    if status.state == "none":
        return Check("env-image", "ok", f"none: no [sandbox] setup or dockerfile; sandboxes "
                     f"run {status.image}", facts=facts)
    lockfiles = f" (lockfiles: {', '.join(status.lockfiles) or 'none'})"
    if status.state == "built":
        return Check("env-image", "ok", f"{status.tag} built{lockfiles}", facts=facts)
    why = (f"stale: {', '.join(status.older)} built from other inputs; {status.tag} is not "
           "built" if status.state == "stale" else f"missing: {status.tag} is not built")
    return Check("env-image", "warn", why + lockfiles,
                 "`portwright sandbox build` builds it (a run also builds it on first use)",
                 facts=facts)


def _gpus(client: DockerClient, config: PortwrightConfig) -> Check:
    from portwright.sandboxes.docker import GPU_FIX, gpu_problem

    problem = gpu_problem(client, config.sandbox)
    if problem is not None:
        return Check("gpus", "fail", f"[sandbox] gpus = {config.sandbox.gpus!r}: this engine "
                     f"gives no GPUs ({problem})", GPU_FIX, bad_input=True)
    return Check("gpus", "ok", f"[sandbox] gpus = {config.sandbox.gpus!r}: a container got them")


def _model(repo: Path, config: PortwrightConfig) -> Check:
    """The endpoint answers one tiny request (:func:`~portwright.agents.models.ping`), asked
    once and waited for at most :data:`REMOTE_TIMEOUT`; not asked without its key, nor
    where real model requests are refused (``PORTWRIGHT_REFUSE_REAL_MODELS``)."""
    from portwright.agents.models import ping
    from portwright.agents.openai_client import DEFAULT_BASE_URL, REFUSE_ENV, OpenAIClient
    from portwright.agents.openai_client import is_loopback as local
    from portwright.errors import ModelError

    model = config.model
    if model.provider == "replay":
        cassette = model.cassette and (repo / model.cassette)
        if not cassette or not cassette.is_file():
            return Check("model", "fail", f"replay cassette not found: {model.cassette}",
                         "set model.cassette to a recorded transcript (portwright … --record)")
        return Check("model", "ok", f"replay of {model.cassette}")
    where = f"{model.name} at {model.base_url or 'OpenAI (default endpoint)'}"
    url = model.base_url or DEFAULT_BASE_URL
    if not os.environ.get(model.api_key_env) and not local(url):
        return Check("model", "warn", f"{where}: ${model.api_key_env} is not set",
                     f"export {model.api_key_env}=… (only the agents need it; "
                     "gap, anchors, gates and rows work without a model)")
    if os.environ.get(REFUSE_ENV) and not local(url):
        return Check("model", "warn", f"{where}: not asked ({REFUSE_ENV} refuses real model "
                     "requests here)", f"unset {REFUSE_ENV} to let doctor send it one request")
    brief = model.model_copy(update={"timeout": min(model.timeout, REMOTE_TIMEOUT),
                                     "max_retries": 0})
    try:
        with OpenAIClient.from_config(brief) as client:
            answer = ping(client)
    except ModelError as exc:
        return _failed("model", exc, f"{model.name}: ")
    return Check("model", "ok", f"{where} answered in {answer.seconds:g} s")


def _pr(repo: Path, config: PortwrightConfig) -> Check:
    """Where pull requests go; for GitHub, whether its client and the token are there, and
    whether GitHub's API answers a read of the repository with that token (asked once,
    waited for at most :data:`REMOTE_TIMEOUT`): a URL where nothing listens, a token it
    rejects, a repository it does not show are failures with their fix."""
    from importlib.util import find_spec

    from portwright.config import PRBackendKind
    from portwright.vcs.push import remote_url, shown

    pr = config.pr
    pushed = f", pushed to {shown(remote_url(repo, pr.remote))}" if pr.remote else ""
    if pr.backend is PRBackendKind.LOCAL:
        return Check("pr", "ok", f"local: the body in the run's folder{pushed}")
    where = f"GitHub {pr.repository} at {pr.api_url}{pushed}"
    if find_spec("githubkit") is None:
        return Check("pr", "fail", f"{where}: githubkit is not installed",
                     "pip install 'portwright[github]'")
    if not os.environ.get(pr.token_env, "").strip():
        return Check("pr", "warn", f"{where}: ${pr.token_env} is not set",
                     f"export {pr.token_env}=… (a token with Contents and Pull requests: read "
                     "and write); without it a run ends blocked at open_pr")
    from portwright.vcs.pr_github import GitHubBackend

    brief = pr.model_copy(update={"timeout": min(pr.timeout, REMOTE_TIMEOUT)})
    branch = GitHubBackend(brief, repo=repo, folder=repo, environ=os.environ).default_branch()
    return Check("pr", "ok", f"{where}; the token in ${pr.token_env} reads it (default "
                 f"branch {branch})")
