"""Sandbox images: the configured image, the environment image, the offline base.

No image registry needs to be reachable: :func:`build_base_image` makes
``portwright/base:bookworm`` with ``debootstrap`` from the Debian mirror this machine's apt
is already configured with, and ``docker import``, labelled with the packages it holds
(:data:`LABEL_PACKAGES`): an image whose label is missing or lacks one of
:data:`BASE_PACKAGES` is stale and built again (:func:`base_image_stale`). ``[sandbox]
setup`` and a Dockerfile in the downstream repo (``[sandbox] dockerfile``) are built on top
of it into the environment image (:mod:`portwright.sandboxes.envimage`), tagged by the
digest of what it is built from, so it is built once; its build log is kept in the state
folder.
:func:`prune_images` removes older builds (containers are pruned by
:mod:`portwright.sandboxes.prune`; :func:`prune` here is what callers of the former place
get).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Collection
from pathlib import Path

import docker
from docker.errors import APIError
from docker.models.images import Image

from portwright.config import SandboxConfig
from portwright.errors import ImageMissing, SandboxError
from portwright.sandboxes.buildlock import build_once as build_once  # re-exported
from portwright.sandboxes.buildlock import image_exists as image_exists  # re-exported
from portwright.sandboxes.engine import BASE_TAG as BASE_TAG  # re-exported
from portwright.sandboxes.engine import docker_client
from portwright.sandboxes.engine import missing_image_fix as missing_image_fix  # re-exported
from portwright.sandboxes.envimage import EnvSource, ensure_env_image, needs_env_image

logger = logging.getLogger(__name__)

BASE_PACKAGES = ["python3", "python3-venv", "python3-pytest", "git", "g++", "make", "cmake",
                 "ccache"]
LABEL_IMAGE = "portwright.image"
LABEL_PACKAGES = "portwright.base-packages"
"""The base image's label: the packages it was built with, comma-separated
(:func:`base_image_stale`)."""
APT_SOURCES = (Path("/etc/apt/sources.list"), Path("/etc/apt/sources.list.d"))

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    return None



def ensure_image(
    config: SandboxConfig,
    repo: Path,
    *,
    client: docker.DockerClient | None = None,
    source: EnvSource | None = None,
) -> str:
    """The image a sandbox for ``repo`` runs: the environment image when ``[sandbox] setup``
    or ``dockerfile`` asks for one (built on first use from the files committed at
    ``source``, HEAD of ``repo`` by default), else ``config.image``.

    Raises :class:`ImageMissing` (with how to build it) when the image is not there.
    """
    if needs_env_image(config):
        return ensure_env_image(config, source or EnvSource(repo), client).tag
    own = client is None
    client = client or docker_client()
    try:
        if not image_exists(client, config.image):
            raise ImageMissing(f"sandbox image {config.image!r} does not exist",
                               fix=missing_image_fix(config.image))
        return config.image
    finally:
        if own:
            client.close()


# -- the offline base image ---------------------------------------------------------


def debian_mirror(suite: str = "bookworm",
                  sources: tuple[Path, ...] = APT_SOURCES) -> str:
    """The Debian mirror apt on this machine uses for ``suite`` (``deb`` lines or deb822)."""
    files: list[Path] = []
    for source in sources:
        if source.is_file():
            files.append(source)
        elif source.is_dir():
            files += sorted(p for p in source.iterdir()
                            if p.suffix in (".list", ".sources") and p.is_file())
    fallback: str | None = None
    for path in files:
        for uri, suites in _apt_entries(path):
            if "debian" not in uri or "security" in uri:
                continue
            if suite in suites:
                return uri.rstrip("/")
            fallback = fallback or uri.rstrip("/")
    if fallback:
        return fallback
    raise SandboxError(
        f"no Debian mirror for {suite!r} in the apt sources ({', '.join(map(str, sources))})",
        fix="configure apt with a Debian mirror (e.g. /etc/apt/sources.list.d/debian.sources) "
            "and run `apt-get update`",
    )


def _apt_entries(path: Path) -> list[tuple[str, list[str]]]:
    text = path.read_text(encoding="utf-8", errors="replace")
    entries: list[tuple[str, list[str]]] = []
    if path.suffix == ".sources":
        for stanza in re.split(r"\n\s*\n", text):
            fields: dict[str, str] = {}
            for line in stanza.splitlines():
                if line.startswith("#") or ":" not in line:
                    continue
                key, _, value = line.partition(":")
                fields[key.strip().lower()] = value.strip()
            if fields.get("enabled", "yes").lower() == "no" or "deb" not in \
                    fields.get("types", "").split():
                continue
            for uri in fields.get("uris", "").split():
                entries.append((uri, fields.get("suites", "").split()))
        return entries
    for line in text.splitlines():
        words = re.sub(r"\[[^\]]*\]", " ", line.split("#", 1)[0]).split()
        if len(words) >= 3 and words[0] == "deb":
            entries.append((words[1], [words[2]]))
    return entries


def build_base_image(
    tag: str = BASE_TAG,
    *,
    force: bool = False,
    suite: str = "bookworm",
    mirror: str | None = None,
    progress: Progress = _quiet,
    client: docker.DockerClient | None = None,
) -> str:
    """Build the offline base image with debootstrap + ``docker import``; return its id.

    Returns at once when ``tag`` exists and is not stale (:func:`base_image_stale`: built
    with every package of :data:`BASE_PACKAGES`), unless ``force``; a stale one is built
    again, and ``progress`` says why. A second process that asks while one builds waits for
    it (:func:`build_once`). Needs root and debootstrap.
    """
    own = client is None
    client = client or docker_client(timeout=600)
    try:
        return build_once(client, tag, lambda: _debootstrap_import(
            client, tag, suite=suite, mirror=mirror, progress=progress),
            force=force, progress=progress, stale=base_image_stale)[0]
    finally:
        if own:
            client.close()


def base_image_stale(image: Image) -> str | None:
    """Why the base image ``image`` must be built again, or None: its
    :data:`LABEL_PACKAGES` label is missing (built before the label was) or lacks a package
    of :data:`BASE_PACKAGES` (built before that package joined them: an image without
    ``ccache`` gives ``eval`` no compiler cache)."""
    labels = (image.attrs.get("Config") or {}).get("Labels") or {}
    value = labels.get(LABEL_PACKAGES)
    if not isinstance(value, str):
        return f"it has no {LABEL_PACKAGES} label (built before the packages were recorded)"
    missing = [p for p in BASE_PACKAGES if p not in value.split(",")]
    if missing:
        return f"it was built without {', '.join(missing)}"
    return None


def _debootstrap_import(client: docker.DockerClient, tag: str, *, suite: str,
                        mirror: str | None, progress: Progress) -> None:
    debootstrap = shutil.which("debootstrap")
    if debootstrap is None:
        raise SandboxError("debootstrap is not installed", fix="apt-get install -y debootstrap")
    if os.geteuid() != 0:
        raise SandboxError("building the base image needs root (debootstrap)",
                           fix=f"run `sudo portwright sandbox base-image --tag {tag}`")
    mirror = mirror or debian_mirror(suite)
    with tempfile.TemporaryDirectory(prefix="portwright-rootfs-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        progress(f"debootstrap {suite} from {mirror} (about a minute)")
        _run([debootstrap, "--variant=minbase", f"--include={','.join(BASE_PACKAGES)}",
              suite, str(rootfs), mirror], progress)
        shutil.rmtree(rootfs / "var" / "cache" / "apt" / "archives", ignore_errors=True)
        progress("packing the root file system")
        archive = Path(tmp) / "rootfs.tar"
        _run(["tar", "--numeric-owner", "-C", str(rootfs), "-cf", str(archive), "."],
             progress)
        shutil.rmtree(rootfs, ignore_errors=True)
        progress(f"docker import → {tag}")
        repository, _, version = tag.rpartition(":")
        if not repository or "/" in version:
            repository, version = tag, "latest"
        changes = [f"LABEL {LABEL_IMAGE}=base",
                   f"LABEL {LABEL_PACKAGES}={','.join(BASE_PACKAGES)}",
                   "ENV LANG=C.UTF-8", 'CMD ["/bin/sh"]']
        client.api.import_image_from_file(str(archive), repository=repository,
                                          tag=version, changes=changes)


_PER_PACKAGE = re.compile(r"^I: (Retrieving|Validating|Extracting|Unpacking|Configuring) \S+")


def _run(argv: list[str], progress: Progress) -> None:
    """Run ``argv``, passing its milestones (not every package) to ``progress``."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    tail: list[str] = []
    per_package = 0
    for raw in proc.stdout:
        line = raw.rstrip()
        tail = [*tail[-30:], line]
        if _PER_PACKAGE.match(line) and not line.endswith(("Release", "Packages")):
            per_package += 1
            if per_package % 25:
                continue
        if line.startswith(("I:", "E:", "W:")):
            progress(line)
    if proc.wait() != 0:
        raise SandboxError(f"{Path(argv[0]).name} failed (exit {proc.returncode}):\n"
                           + "\n".join(tail),
                           fix="check the mirror and the network to it (apt-get update)")


# -- pruning ------------------------------------------------------------------------


def prune(*, all_runs: bool = False, client: docker.DockerClient | None = None,
          run_id: str | None = None) -> list[str]:
    """Run ids whose containers :func:`portwright.sandboxes.prune.prune` removed.

    Kept for callers written before pruning had its own module and report: what it
    skipped and the worktrees it gave back are logged. New code calls
    :func:`portwright.sandboxes.prune.prune` and reads its report.
    """
    from portwright.sandboxes.prune import prune as prune_report

    report = prune_report(all_runs=all_runs, client=client, run_id=run_id)
    for skipped in report.skipped:
        logger.warning("sandbox prune skipped %s", skipped)
    for worktree in report.restored:
        logger.info("sandbox prune gave %s back to its owner", worktree)
    return report.removed


def prune_images(*, keep_latest: bool = True, repositories: Collection[str] | None = None,
                 client: docker.DockerClient | None = None) -> list[str]:
    """Remove environment images (label ``portwright.image=env``, and ``dockerfile`` of
    older builds); with ``repositories``, only those whose image name (the tag before its
    ``:``) is one of them.

    Keeps the newest build of each repository when ``keep_latest``; images a container
    still uses are left alone. Returns the removed tags.
    """
    own = client is None
    client = client or docker_client()
    removed: list[str] = []
    try:
        images = [image for kind in ("env", "dockerfile") for image in
                  client.images.list(filters={"label": f"{LABEL_IMAGE}={kind}"})
                  if repositories is None
                  or any(t.rpartition(":")[0] in repositories for t in image.tags)]
        newest: dict[str, str] = {}
        for image in sorted(images, key=lambda i: str(i.attrs.get("Created", ""))):
            for tag in image.tags:
                newest[tag.rpartition(":")[0]] = str(image.id)
        for image in images:
            if keep_latest and str(image.id) in newest.values():
                continue
            try:
                client.images.remove(str(image.id))
            except APIError as exc:
                logger.info("kept image %s: %s", image.short_id, exc.explanation or exc)
                continue
            removed += image.tags or [image.short_id]
    finally:
        if own:
            client.close()
    return removed
