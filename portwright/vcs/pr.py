"""Pull requests behind one protocol: what a finished run publishes, and where.

A :class:`PRBackend` opens the pull request of a branch, or updates the one it opened
before (found by its head branch), and answers a typed :class:`PullRequest`. Two
backends, chosen by ``[pr] backend``:

The backends are opened by :func:`portwright.vcs.pr_backends.open_backend`.

- ``local`` (:mod:`portwright.vcs.pr_local`): the branch pushed to ``[pr] remote`` when
  one is set, the body kept in the run's folder;
- ``github`` (:mod:`portwright.vcs.pr_github`): the branch pushed with the token, a pull
  request opened or updated through GitHub's REST API.

Every backend keeps what it published in the folder it is given (the run's): the body as
``pr.md`` and the result as ``pr.json``. Running it again finds its own pull request:
the branch is pushed again (a fast-forward, or nothing), the body replaced, never a
second pull request.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator

from portwright.config import PRBackendKind, PRConfig
from portwright.redact import redact

BODY_FILE = "pr.md"
"""The body a backend published, in its folder."""
RESULT_FILE = "pr.json"
"""The :class:`PullRequest` a backend answered, in its folder."""
BODY_LIMIT = 65536
"""GitHub's limit on a pull request's body, in characters."""


class PRRequest(BaseModel):
    """A pull request to open, or to update when the branch has one already."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    branch: str = Field(min_length=1)
    """The head branch (it is pushed first)."""
    title: str = Field(min_length=1)
    body: str
    """Markdown: the run's report."""
    base: str | None = None
    """The branch it merges into; None: the repository's default branch."""
    draft: bool = True
    labels: list[str] = Field(default_factory=list)
    reviewers: list[str] = Field(default_factory=list)
    """Logins, or ``org/team`` for a team."""
    run_id: str = ""
    """The run it comes from (named in a trimmed body's note)."""

    @field_validator("title", "body")
    @classmethod
    def _redacted(cls, value: str) -> str:
        return redact(value)  # whatever the backend, no secret is published

    @classmethod
    def from_config(cls, config: PRConfig, *, branch: str, title: str, body: str,
                    run_id: str = "") -> PRRequest:
        """The request ``[pr]`` describes for ``branch``."""
        return cls(branch=branch, title=title, body=body, base=config.base,
                   draft=config.draft, labels=list(config.labels),
                   reviewers=list(config.reviewers), run_id=run_id)


class PullRequest(BaseModel):
    """What a backend published."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: Literal["local", "github"]
    number: int | None
    """The pull request's number (None for ``local``)."""
    url: str
    """Its page (``local``: the body file's ``file://`` URL)."""
    branch: str
    base: str
    """The branch it merges into ("" when ``local`` was not told)."""
    draft: bool
    created: bool
    """True when this call opened it, False when it existed and was updated."""
    pushed_to: str = ""
    """The remote the branch was pushed to ("" when it was not pushed), without
    credentials."""


class PRBackend(Protocol):
    """Opens or updates the pull request of a branch; finds it again."""

    name: str

    def open_or_update(self, request: PRRequest) -> PullRequest:
        """Push ``request.branch``, then open its pull request, or update the one it has."""
        ...

    def find(self, branch: str) -> PullRequest | None:
        """The open pull request whose head is ``branch``, if there is one."""
        ...


def describe(config: PRConfig) -> str:
    """Where ``config`` sends a pull request, in a sentence's words (for approvals)."""
    into = f" into `{config.base}`" if config.base else ""
    if config.backend is PRBackendKind.GITHUB:
        return (f"a {'draft ' if config.draft else ''}pull request on GitHub "
                f"`{config.repository}`{into}")
    pushed = f", pushed to `{config.remote}`" if config.remote else ""
    return f"the branch{pushed} and its body in the run's folder"


def trim_body(body: str, *, limit: int = BODY_LIMIT, run_id: str = "") -> str:
    """``body`` cut to ``limit`` characters at a line's end, a code block left open closed,
    with a note that says so and where the whole report is."""
    if len(body) <= limit:
        return body
    report = f"`portwright report {run_id}`" if run_id else "`portwright report RUN`"
    note = (f"\n\n---\n*The report was trimmed to GitHub's limit of {limit} characters; "
            f"{report} prints all of it.*\n")
    kept = body[: limit - len(note) - 8]
    kept = kept[: kept.rfind("\n") + 1] if "\n" in kept else kept
    fences = sum(1 for line in kept.splitlines() if line.startswith("```"))
    if fences % 2:
        kept += "```\n"
    return kept.rstrip("\n") + note


def keep(folder: Path, body: str, result: PullRequest) -> None:
    """Write what was published into ``folder``: ``pr.md`` and ``pr.json``, replaced."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / BODY_FILE).write_text(body, encoding="utf-8")
    (folder / RESULT_FILE).write_text(result.model_dump_json(indent=2) + "\n",
                                      encoding="utf-8")


def kept(folder: Path) -> PullRequest | None:
    """The result kept in ``folder`` by an earlier call, if any."""
    path = folder / RESULT_FILE
    if not path.is_file():
        return None
    try:
        return PullRequest.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except ValueError:
        return None
