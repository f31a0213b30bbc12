"""Find the upstream checkout a downstream repo's config points at."""

from __future__ import annotations

import logging
import re
from pathlib import Path

from portwright.config import PortwrightConfig
from portwright.errors import RepositoryError
from portwright.vcs import plumbing

logger = logging.getLogger(__name__)

_URL = re.compile(r"^(?:[a-z][a-z0-9+.-]*://|[^/@\s]+@[^:\s]+:)")


def is_url(source: str) -> bool:
    """``https://…``, ``ssh://…``, ``file://…`` or scp-like ``git@host:org/repo``."""
    return bool(_URL.match(source))


def upstream_path(repo: Path, config: PortwrightConfig, *, fetch: bool = False) -> Path:
    """The local upstream checkout: the configured path, or a clone of the URL under
    ``<state_dir>/upstream`` (cloned on first use; fetched when ``fetch``)."""
    source = config.upstream.source
    if not is_url(source):
        path = (repo / source).resolve()
        if not path.exists():
            raise RepositoryError(
                "the upstream checkout does not exist",
                file=path, key="upstream.source",
                fix="clone the upstream project there, or set upstream.source in portwright.toml",
            )
        return path
    clone = repo / config.state_dir / "upstream"
    try:
        if not (clone / ".git").exists():
            logger.info("cloning upstream %s into %s", source, clone)
            clone.parent.mkdir(parents=True, exist_ok=True)
            plumbing.git(clone.parent, "clone", "--quiet", source, clone.name)
        elif fetch:
            plumbing.git(clone, "fetch", "--quiet", "origin")
    except RepositoryError as exc:
        raise RepositoryError(
            f"could not clone or fetch the upstream repository: {exc.message}",
            file=source, key="upstream.source",
            fix="check the URL and your access to it, or point upstream.source at a local clone",
        ) from exc
    return clone
