"""Which pull-request backend a run publishes through (``[pr] backend``).

Kept apart from :mod:`portwright.vcs.pr` (the protocol and its types), which both backends
import.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from portwright.config import PRBackendKind, PRConfig
from portwright.vcs.pr import PRBackend


def open_backend(config: PRConfig, *, repo: Path, folder: Path,
                 environ: Mapping[str, str] | None = None) -> PRBackend:
    """The backend ``config`` chooses, pushing from ``repo`` and keeping what it publishes
    in ``folder``; ``environ`` (default: this process's) holds the token."""
    if config.backend is PRBackendKind.GITHUB:
        from portwright.vcs.pr_github import GitHubBackend

        return GitHubBackend(config, repo=repo, folder=folder,
                             environ=os.environ if environ is None else environ)
    from portwright.vcs.pr_local import LocalBackend

    return LocalBackend(config, repo=repo, folder=folder)
