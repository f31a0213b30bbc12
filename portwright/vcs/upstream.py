"""Find the upstream checkout a downstream repo's config points at."""

from __future__ import annotations

import logging
import re
from pathlib import Path

from portwright.errors import RepositoryError
from portwright.vcs import plumbing

logger = logging.getLogger(__name__)

_URL = re.compile(r"^(?:[a-z][a-z0-9+.-]*://|[^/@\s]+@[^:\s]+:)", re.IGNORECASE)


def is_url(source: str) -> bool:
    """``https://…``, ``ssh://…``, ``file://…`` or scp-like ``git@host:org/repo``."""
    return bool(_URL.match(source))


def clone_or_fetch(source: str, clone: Path, *, fetch: bool = False) -> Path:
    """``clone`` of the repository at URL ``source``: cloned when absent, fetched when
    ``fetch``."""
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
