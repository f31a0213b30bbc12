"""The ``local`` pull-request backend: the run's branch, pushed to ``[pr] remote`` when one
is set (with the user's own git credentials: no token is read), and the body kept as
``pr.md`` in the run's folder for a person, or another tool, to open the pull request
from. Run again, it pushes again (a fast-forward, or nothing) and replaces the body."""

from __future__ import annotations

from pathlib import Path

from portwright.config import PRConfig
from portwright.vcs.pr import BODY_FILE, PRRequest, PullRequest, keep, kept
from portwright.vcs.push import push


class LocalBackend:
    """:class:`~portwright.vcs.pr.PRBackend` without a forge."""

    name = "local"

    def __init__(self, config: PRConfig, *, repo: Path, folder: Path) -> None:
        self.config = config
        self.repo = repo
        self.folder = folder

    def open_or_update(self, request: PRRequest) -> PullRequest:
        pushed = push(self.repo, self.config.remote, request.branch) if self.config.remote \
            else ""
        before = self.find(request.branch)
        result = PullRequest(backend="local", number=None,
                             url=(self.folder / BODY_FILE).resolve().as_uri(),
                             branch=request.branch, base=request.base or "",
                             draft=request.draft, created=before is None, pushed_to=pushed)
        keep(self.folder, request.body, result)
        return result

    def find(self, branch: str) -> PullRequest | None:
        found = kept(self.folder)
        if found is None or found.branch != branch or not (self.folder / BODY_FILE).is_file():
            return None
        return found.model_copy(update={"created": False})
