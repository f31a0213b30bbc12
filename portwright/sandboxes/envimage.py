"""The environment image: a port's toolchain and dependencies, built once, with network.

A port's tests need its dependencies (numpy, a C++ test framework …). As SWE-bench and
OpenHands do, they are installed when an image is built, not in every sandbox: ``[sandbox]
setup`` commands (and ``[sandbox] dockerfile``, when there is one) are built into an
*environment image* ``FROM`` the base image (or on top of that Dockerfile). The build has
the engine's default network; the sandboxes that start from the image have none.

**What it is built from is committed.** Everything in the build context is read from git
at one revision (the commit a run started at; HEAD for ``portwright sandbox build``): the
Dockerfile's folder, and the *lockfiles* — the committed files that ``[sandbox] lockfiles``
globs match, and any committed file a setup command names. Nothing a sandboxed command
wrote is read. Setup commands run as root in :data:`SETUP_DIR`, which holds those lockfiles
at their paths in the repository (``pip install -r requirements.txt`` works as written).
During the build, TLS clients are pointed at this host's CA bundle (a machine that reaches
package registries through an intercepting proxy needs it), and this host's proxy
variables are passed as build arguments; neither is part of the image's key.

**Keyed by content.** The image's tag is ``portwright/env-<repo>:<key>``, ``<key>`` the
digest of the setup commands, the lockfiles (path and blob), the Dockerfile's folder (its
git tree) and the base image (its id): a change to any of them builds a new image on first
use, and nothing else does. Builds are serialised by a file lock per tag that every clone
and state folder of this user shares (:mod:`portwright.sandboxes.buildlock`), so two
processes that need the same image at once build it once (the second finds it built) and
leave no untagged image behind. The build's log is kept in the state folder.

bubblewrap has no images: there, ``setup`` runs in every new sandbox, without network
(:mod:`portwright.sandboxes.common`).
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import posixpath
import re
import shlex
import ssl
import tarfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import docker
from docker.errors import APIError, BuildError, ImageNotFound

from portwright import globs
from portwright.config import CONFIG_FILE, SandboxConfig
from portwright.config_errors import locate_key
from portwright.environment import private_folder, state_home
from portwright.errors import ConfigError, ImageMissing, RepositoryError
from portwright.sandboxes.buildlock import build_once, image_exists
from portwright.sandboxes.engine import missing_image_fix
from portwright.vcs import plumbing

logger = logging.getLogger(__name__)

FORMAT = 1
"""Bumped when what goes into an image changes without its inputs changing."""
SETUP_DIR = "/opt/portwright/setup"
"""Where setup commands run during the build: the lockfiles at their repository paths."""
CA_PATH = "/opt/portwright/ca-certificates.crt"
"""This host's CA bundle inside the build (TLS clients are pointed at it)."""
LABEL_IMAGE = "portwright.image"
LABEL_KEY = "portwright.env-key"
LABEL_REPO = "portwright.env-repo"
_CONTEXT = ".portwright-env"
"""The reserved folder of the build context: generated Dockerfile, lockfiles, CA bundle."""
_CA_VARIABLES = ("SSL_CERT_FILE", "PIP_CERT", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
                 "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO", "CARGO_HTTP_CAINFO")
_PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "FTP_PROXY", "ALL_PROXY")
BUILD_TIMEOUT = 3600
"""Seconds the engine may stay silent during a build (a long compile prints nothing)."""

State = Literal["none", "built", "stale", "missing"]


@dataclass(frozen=True)
class EnvSource:
    """Where an environment image's inputs are read, and where its builds are kept."""

    repo: Path
    """A work tree of the downstream repository (a run's own worktree will do)."""
    revision: str = "HEAD"
    """The commit whose files the image is built from."""
    state_dir: Path | None = None
    """The project's state folder: build logs go to ``images/`` in it. None:
    ``$PORTWRIGHT_STATE_DIR``, else the user's default state folder
    (:func:`~portwright.environment.state_home`)."""

    def images_dir(self) -> Path:
        """``images/`` of the state folder, made (private) when missing."""
        return private_folder((self.state_dir or state_home()) / "images")


@dataclass(frozen=True)
class EnvSpec:
    """Everything an environment image is built from, read from one commit."""

    repo: Path
    commit: str
    """The commit (sha) the files were read from."""
    name: str
    """The repository's name, as it appears in the tag."""
    base: str
    """The image built upon (``[sandbox] image``), when there is no Dockerfile."""
    base_id: str | None
    """That image's id (a rebuilt base image rebuilds the environment)."""
    setup: tuple[str, ...]
    lockfiles: dict[str, str] = field(default_factory=dict)
    """Repository path → blob sha."""
    dockerfile: str | None = None
    """The Dockerfile's path in the repository."""
    dockerfile_tree: str | None = None
    """The git tree of the Dockerfile's folder (its build context)."""

    @property
    def key(self) -> str:
        document = {"format": FORMAT, "base": None if self.dockerfile else self.base,
                    "base_id": self.base_id, "setup": list(self.setup),
                    "lockfiles": self.lockfiles, "dockerfile": self.dockerfile,
                    "dockerfile_tree": self.dockerfile_tree}
        return hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()

    @property
    def tag(self) -> str:
        return f"portwright/env-{self.name}:{self.key[:16]}"


@dataclass(frozen=True)
class EnvBuild:
    """The environment image a sandbox runs, and whether this call built it."""

    tag: str
    key: str
    built: bool
    """True when this call built it; False when it was there already."""
    seconds: float
    log_path: Path | None
    lockfiles: tuple[str, ...] = ()


@dataclass(frozen=True)
class EnvStatus:
    """Whether the environment image of the committed config is there (``portwright
    doctor``)."""

    state: State
    """``none`` (no setup and no Dockerfile: sandboxes run the base image), ``built``,
    ``stale`` (images of older inputs exist, not this one) or ``missing``."""
    tag: str | None
    image: str
    """What sandboxes run: the environment image's tag, or ``[sandbox] image``."""
    older: tuple[str, ...] = ()
    """Tags of this repository's environment images built from other inputs."""
    lockfiles: tuple[str, ...] = ()


def needs_env_image(config: SandboxConfig) -> bool:
    """Whether sandboxes of ``config`` run an environment image (Docker only)."""
    return bool(config.setup or config.dockerfile)


# -- reading the inputs from the commit ---------------------------------------------------


def config_line(source: EnvSource, key: str, commit: str | None = None) -> int | None:
    """The line of ``key`` (dotted) in ``portwright.toml`` as committed (None: not found)."""
    try:
        text = plumbing.show(source.repo, commit or source.revision, CONFIG_FILE) or b""
    except RepositoryError:
        return None
    return locate_key(text.decode("utf-8", "replace"), tuple(key.split(".")))


def _config_error(source: EnvSource, commit: str, key: str, message: str,
                  fix: str) -> ConfigError:
    return ConfigError(message, file=source.repo / CONFIG_FILE,
                       line=config_line(source, key, commit), key=key, fix=fix)


def _repo_name(repo: Path) -> str:
    common = plumbing.common_dir(repo)
    name = common.parent.name if common.name == ".git" else common.name.removesuffix(".git")
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "repo"


def _named_files(commands: Iterable[str], paths: set[str]) -> set[str]:
    """Committed files that setup commands name (``-r requirements-dev.txt``,
    ``--constraint=ci/constraints.txt``)."""
    named: set[str] = set()
    for command in commands:
        try:
            words = shlex.split(command)
        except ValueError:
            words = command.split()
        for word in words:
            for candidate in (word, word.partition("=")[2]):
                normal = posixpath.normpath(candidate) if candidate else ""
                if normal in paths:
                    named.add(normal)
    return named


def read_spec(config: SandboxConfig, source: EnvSource,
              client: docker.DockerClient | None = None) -> EnvSpec:
    """The inputs of the environment image of ``config`` at ``source.revision``.

    A Dockerfile or lockfile glob that names no committed file is a :class:`ConfigError`
    naming the key. ``client`` resolves the base image's id (without it, the id is left
    out: the key then differs from a build's).
    """
    try:
        commit = plumbing.rev_parse(source.repo, source.revision)
    except RepositoryError as exc:
        raise RepositoryError(
            f"the environment image is built from committed files, and {source.repo} has no "
            f"commit {source.revision!r}: {exc.message}", file=source.repo,
            fix="commit the files [sandbox] setup needs (run portwright in a git repository)"
        ) from exc
    entries = plumbing.tree_entries(source.repo, commit)
    blobs = {path: sha for mode, sha, path in entries if mode != "120000"}
    lockfiles: dict[str, str] = {}
    explicit = "lockfiles" in config.model_fields_set
    for pattern in config.lockfiles:
        found = {p: sha for p, sha in blobs.items() if globs.match(p, pattern)}
        if explicit and not found:
            raise _config_error(
                source, commit, "sandbox.lockfiles",
                f"the lockfile glob {pattern!r} matches no file committed at {commit[:12]}",
                "fix the glob, or commit the file it names (the environment image is built "
                "from committed files only)")
        lockfiles.update(found)
    for path in _named_files(config.setup, set(blobs)):
        lockfiles[path] = blobs[path]
    dockerfile_tree = None
    if config.dockerfile:
        path = posixpath.normpath(config.dockerfile)
        if path not in blobs:
            raise _config_error(
                source, commit, "sandbox.dockerfile",
                f"the sandbox Dockerfile {config.dockerfile} is not committed at {commit[:12]}",
                f"commit {config.dockerfile} (or fix the path, or remove the key)")
        folder = posixpath.dirname(path)
        dockerfile_tree = plumbing.git(source.repo, "rev-parse",
                                       f"{commit}:{folder}" if folder else
                                       f"{commit}^{{tree}}").decode().strip()
    base_id = None
    if client is not None and not config.dockerfile:
        try:
            base_id = str(client.images.get(config.image).id)
        except ImageNotFound:
            base_id = None
    return EnvSpec(repo=source.repo, commit=commit, name=_repo_name(source.repo),
                   base=config.image, base_id=base_id, setup=tuple(config.setup),
                   lockfiles=dict(sorted(lockfiles.items())),
                   dockerfile=posixpath.normpath(config.dockerfile) if config.dockerfile
                   else None, dockerfile_tree=dockerfile_tree)


# -- the build context --------------------------------------------------------------------


def host_ca_bundle() -> Path | None:
    """The CA bundle this host's TLS clients trust, when it is one file."""
    for candidate in (os.environ.get("SSL_CERT_FILE"), ssl.get_default_verify_paths().cafile,
                      "/etc/ssl/certs/ca-certificates.crt"):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


def dockerfile_text(spec: EnvSpec, user_dockerfile: bytes | None, ca: bool) -> str:
    """The Dockerfile of the environment image: one ``COPY`` of the lockfiles (and the CA
    bundle), then one ``RUN`` per setup command, with TLS clients pointed at that bundle."""
    lines = [user_dockerfile.decode("utf-8", "replace").rstrip("\n"), "USER root"] \
        if user_dockerfile is not None else [f"FROM {spec.base}"]
    if ca or spec.lockfiles:
        lines.append(f"COPY {_CONTEXT}/root/ /")
    lines.append(f"WORKDIR {SETUP_DIR}")
    prefix = ["/usr/bin/env", *(f"{name}={CA_PATH}" for name in _CA_VARIABLES)] if ca else []
    lines += [f"RUN {json.dumps([*prefix, '/bin/sh', '-c', command])}"
              for command in spec.setup]
    labels = {LABEL_IMAGE: "env", LABEL_KEY: spec.key, LABEL_REPO: spec.name}
    lines.append("LABEL " + " ".join(f"{k}={json.dumps(v)}" for k, v in labels.items()))
    return "\n".join(lines) + "\n"


def _add(archive: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), mode, 0
    archive.addfile(info, io.BytesIO(data))


def build_context(spec: EnvSpec) -> tuple[bytes, str]:
    """The build context (a tar, read from the commit) and the Dockerfile's name in it."""
    buffer = io.BytesIO()
    user_dockerfile = None
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        if spec.dockerfile is not None:
            folder = posixpath.dirname(spec.dockerfile)
            prefix = f"{folder}/" if folder else ""
            rows = [(mode, sha, path) for mode, sha, path in
                    plumbing.tree_entries(spec.repo, spec.commit) if path.startswith(prefix)]
            contents = plumbing.cat_blobs(spec.repo, [sha for _, sha, _ in rows])
            for mode, sha, path in rows:
                relative = path[len(prefix):]
                if relative.split("/")[0] == _CONTEXT:
                    continue
                if mode == "120000":
                    info = tarfile.TarInfo(relative)
                    info.type, info.linkname = tarfile.SYMTYPE, contents[sha].decode()
                    archive.addfile(info)
                    continue
                _add(archive, relative, contents[sha], 0o755 if mode == "100755" else 0o644)
            user_dockerfile = contents[dict((p, s) for _, s, p in rows)[spec.dockerfile]]
        lock_blobs = plumbing.cat_blobs(spec.repo, list(spec.lockfiles.values()))
        for path, sha in spec.lockfiles.items():
            _add(archive, f"{_CONTEXT}/root{SETUP_DIR}/{path}", lock_blobs[sha])
        ca = host_ca_bundle()
        if ca is not None:
            _add(archive, f"{_CONTEXT}/root{CA_PATH}", ca.read_bytes())
        name = f"{_CONTEXT}/Dockerfile"
        _add(archive, name, dockerfile_text(spec, user_dockerfile, ca is not None).encode())
    return buffer.getvalue(), name


# -- building -------------------------------------------------------------------------------


def _build_line(chunk: object) -> str:
    if isinstance(chunk, dict):
        for key in ("stream", "status", "error"):
            if chunk.get(key):
                return str(chunk[key])
        return ""
    return json.dumps(chunk) + "\n"


def _failed_step(log: str, spec: EnvSpec) -> tuple[str, str | None]:
    """The key and the setup command a failed build points at."""
    steps = re.findall(r"^Step \d+/\d+ : (.*)$", log, re.MULTILINE)
    last = steps[-1] if steps else ""
    for command in spec.setup:
        if last.startswith("RUN ") and json.dumps(command) in last:
            return "sandbox.setup", command
    if spec.dockerfile is not None and not last.startswith((f"COPY {_CONTEXT}", "RUN [")):
        return "sandbox.dockerfile", None
    return "sandbox.setup", None


def _build(client: docker.DockerClient, spec: EnvSpec, source: EnvSource,
           log_path: Path) -> None:
    context, dockerfile = build_context(spec)
    proxies = {name: os.environ[name] for variable in _PROXY_VARIABLES
               for name in (variable, variable.lower()) if os.environ.get(name)}
    lines: list[str] = [f"# environment image {spec.tag} from {spec.commit}\n"]
    try:
        stream = client.api.build(fileobj=io.BytesIO(context), custom_context=True,
                                  dockerfile=dockerfile, tag=spec.tag, rm=True, forcerm=True,
                                  buildargs=proxies, decode=True)
        error = None
        for chunk in stream:
            lines.append(_build_line(chunk))
            if isinstance(chunk, dict) and chunk.get("error"):
                error = str(chunk["error"]).strip()
    except (APIError, BuildError) as exc:
        error = str(getattr(exc, "explanation", None) or exc)
    log_path.write_text("".join(lines) + (f"\nerror: {error}\n" if error else ""),
                        encoding="utf-8")
    if error is None:
        return
    log = "".join(lines)
    key, command = _failed_step(log, spec)
    what = f"the setup command {command!r}" if command else (
        f"the Dockerfile {spec.dockerfile}" if key == "sandbox.dockerfile" else "the build")
    raise _config_error(
        source, spec.commit, key,
        f"building the environment image failed at {what}: {error}",
        f"read the build log {log_path}; setup commands run as root in {SETUP_DIR} (the "
        "lockfiles as committed, with network) during the build")


def ensure_env_image(config: SandboxConfig, source: EnvSource,
                     client: docker.DockerClient | None = None) -> EnvBuild:
    """The environment image of ``config`` at ``source``, built when it is not there.

    One build per tag at a time on this machine, whatever the state folder: a second process
    waits for the first and then uses its image.
    """
    from portwright.sandboxes.engine import docker_client

    own = client is None
    client = client or docker_client()
    try:
        if not config.dockerfile and not image_exists(client, config.image):
            raise ImageMissing(f"the base image {config.image!r} of the environment image "
                               "does not exist", fix=missing_image_fix(config.image))
        spec = read_spec(config, source, client)
        log_path = source.images_dir() / f"{spec.name}-{spec.key[:16]}.build.log"
        started = time.monotonic()

        def build() -> None:
            logger.info("building the environment image %s (log: %s)", spec.tag, log_path)
            builder = docker_client(timeout=BUILD_TIMEOUT)
            try:
                _build(builder, spec, source, log_path)
            finally:
                builder.close()

        _, built = build_once(client, spec.tag, build)
        # seconds: the build, or the wait for another process's build of it
        return EnvBuild(spec.tag, spec.key, built, time.monotonic() - started,
                        log_path if built else None, tuple(spec.lockfiles))
    finally:
        if own:
            client.close()


def env_status(config: SandboxConfig, source: EnvSource,
               client: docker.DockerClient) -> EnvStatus:
    """Whether the environment image of ``config`` at ``source`` is built, stale or
    missing (nothing is built)."""
    if not needs_env_image(config):
        return EnvStatus("none", None, config.image)
    spec = read_spec(config, source, client)
    if image_exists(client, spec.tag):
        return EnvStatus("built", spec.tag, spec.tag, lockfiles=tuple(spec.lockfiles))
    older = sorted(tag for image in client.images.list(
        filters={"label": f"{LABEL_REPO}={spec.name}"}) for tag in image.tags
        if tag.startswith(f"portwright/env-{spec.name}:"))
    return EnvStatus("stale" if older else "missing", spec.tag, spec.tag, tuple(older),
                     tuple(spec.lockfiles))
