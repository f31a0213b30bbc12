"""``[pr]`` of ``portwright.toml``: where a finished run's pull request goes
(:mod:`portwright.vcs.pr`), and the names of the variables that hold a forge's token,
which never reach a sandbox."""

from __future__ import annotations

import re
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from portwright.environment import PREFIX as ENV_PREFIX
from portwright.redact import credentials_in
from portwright.values import Seconds


class PRBackendKind(StrEnum):
    LOCAL = "local"
    GITHUB = "github"


SECRET_NAMES = frozenset({"GITHUB_TOKEN", "GH_TOKEN", "GH_ENTERPRISE_TOKEN",
                          "GITHUB_ENTERPRISE_TOKEN"})
"""Environment variables that hold a forge's token: never passed into a sandbox."""
_REPOSITORY = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}")
_REVIEWER = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:/[A-Za-z0-9._-]{1,100})?")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_LOOPBACK = ("127.0.0.1", "::1", "localhost")


class PRConfig(BaseModel):
    """Where a finished run's pull request goes (:mod:`portwright.vcs.pr`)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True,
                              allow_inf_nan=False)

    backend: PRBackendKind = PRBackendKind.LOCAL
    """``local``: the run's branch (pushed to ``remote`` when one is set) and its body, the
    run's report, as ``pr.md`` in the run's folder; ``github``: the branch pushed and a pull
    request opened (or updated) on GitHub or GitHub Enterprise."""
    remote: str | None = None
    """Where the run's branch is pushed: the name of a remote of the downstream repository
    (``origin``) or a URL. Unset: ``local`` pushes nowhere; ``github`` pushes to the
    repository's URL on the server of ``api_url``."""
    repository: str | None = Field(default=None, validate_default=True)
    """``owner/name`` of the GitHub repository the pull request is opened in (``github``)."""
    base: str | None = None
    """The branch the pull request merges into; unset: the repository's default branch."""
    draft: bool = True
    """Open the pull request as a draft (GitHub's REST API keeps an existing pull
    request's draft state as it is: updates change title, body and base)."""
    labels: list[str] = Field(default_factory=list)
    """Labels added to the pull request (made by GitHub when missing)."""
    reviewers: list[str] = Field(default_factory=list)
    """Reviewers requested: a user's login, or ``org/team`` for a team."""
    token_env: str = "GITHUB_TOKEN"
    """Name of the environment variable that holds the token (never the token itself). It
    reaches git only through the environment of ``git push``, never a sandbox."""
    api_url: str = "https://api.github.com"
    """GitHub's REST API: ``https://HOST/api/v3`` for GitHub Enterprise Server. ``http``
    only on this machine's loopback interface (a token never travels in clear)."""
    timeout: Seconds = 30.0
    """Seconds before one request to GitHub times out."""

    @field_validator("repository")
    @classmethod
    def _repository(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            if info.data.get("backend") is PRBackendKind.GITHUB:
                raise ValueError('the github backend needs the repository ("owner/name")')
            return None
        if not _REPOSITORY.fullmatch(value):
            raise ValueError('not "owner/name" (e.g. "octocat/hello-world")')
        return value

    @field_validator("remote", "base")
    @classmethod
    def _not_an_option(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value.strip() or value.startswith("-") or any(c.isspace() for c in value):
            raise ValueError("must be a non-empty name without spaces, not starting with '-'")
        if credentials_in(value):
            raise ValueError("holds credentials: the token comes from token_env, never from "
                             "portwright.toml")
        return value

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: list[str]) -> list[str]:
        bad = [label for label in value if not label.strip() or len(label) > 50]
        if bad:
            raise ValueError(f"labels are 1 to 50 characters: {bad[0]!r}")
        return value

    @field_validator("reviewers")
    @classmethod
    def _reviewers(cls, value: list[str]) -> list[str]:
        bad = [name for name in value if not _REVIEWER.fullmatch(name)]
        if bad:
            raise ValueError(f"not a login or org/team: {bad[0]!r}")
        return value

    @field_validator("token_env")
    @classmethod
    def _token_env(cls, value: str) -> str:
        if not _ENV_NAME.fullmatch(value):
            raise ValueError("the name of an environment variable (letters, digits, _), not "
                             "a token")
        if value.upper().startswith(ENV_PREFIX):
            raise ValueError(f"{ENV_PREFIX}* variables are portwright's own settings")
        return value

    @field_validator("api_url")
    @classmethod
    def _api_url(cls, value: str) -> str:
        from urllib.parse import urlsplit

        try:
            parts = urlsplit(value)
            host = parts.hostname or ""
        except ValueError as exc:
            raise ValueError(f"not a URL: {exc}") from exc
        if parts.scheme not in ("https", "http") or not host:
            raise ValueError("an https:// URL, e.g. https://api.github.com")
        if parts.scheme == "http" and host not in _LOOPBACK:
            raise ValueError("http:// would send the token in clear: use https://")
        if parts.username or parts.password or parts.query or parts.fragment:
            raise ValueError("no credentials, query or fragment in the URL")
        return value.rstrip("/")
