"""The ``github`` pull-request backend: push the run's branch with the token, then open its
pull request through GitHub's REST API, or update the open one whose head is that branch.

The client is githubkit, whose models and request bodies are generated from GitHub's own
OpenAPI description (the one the tests' fake GitHub validates against): a request body
that GitHub's description refuses fails here, before it is sent. PyGithub is written by
hand and raises untyped ``GithubException``s; githubkit gives typed answers and the raw
response (status, headers) that rate-limit messages need.

The token is read from the environment variable ``[pr] token_env`` at each call, given to
the client and to ``git push``'s environment (:mod:`portwright.vcs.push`), and to nothing
else: it is in no message, log, file or argument. githubkit's automatic retries are off
(a spent rate limit is reported with its reset time, not slept through) and so is its HTTP
cache.

GitHub's REST API cannot turn a draft into a ready pull request or back (that takes
GraphQL): an update changes title, body and base, and the result says whether the pull
request is a draft.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, RootModel, ValidationError

from portwright.config import PRConfig
from portwright.errors import PortwrightError, PullRequestError, RateLimited, UsageError
from portwright.vcs.pr import PRRequest, PullRequest, keep, trim_body
from portwright.vcs.push import push

if TYPE_CHECKING:
    import httpx
    from githubkit.exception import RequestFailed

logger = logging.getLogger(__name__)

API_VERSION = "2022-11-28"
"""The version of GitHub's REST API asked for (``X-GitHub-Api-Version``): the one GitHub
Enterprise Server knows too, and the one of the description the tests validate against."""


class _Ref(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    ref: str


class _Pull(BaseModel):
    """The fields of GitHub's pull request that portwright reads. Answers are read as
    JSON into this, not into githubkit's whole models: those follow the newest description
    of GitHub's API, and a field GitHub's servers (or GitHub Enterprise Server, or an older
    description) do not send yet would fail them."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    number: int
    html_url: str
    draft: bool | None = None
    base: _Ref


class _Repository(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    default_branch: str


class GitHubBackend:
    """:class:`~portwright.vcs.pr.PRBackend` on GitHub (or GitHub Enterprise Server)."""

    name = "github"

    def __init__(self, config: PRConfig, *, repo: Path, folder: Path,
                 environ: Mapping[str, str]) -> None:
        assert config.repository is not None  # the config requires it for this backend
        self.config = config
        self.repo = repo
        self.folder = folder
        self.owner, self.repo_name = config.repository.split("/", 1)
        self._environ = environ

    def __repr__(self) -> str:
        return f"GitHubBackend({self.config.repository!r}, api_url={self.config.api_url!r})"

    # -- the protocol ---------------------------------------------------------------------

    def open_or_update(self, request: PRRequest) -> PullRequest:
        token = self._token()
        body = trim_body(request.body, run_id=request.run_id)
        with self._client(token) as rest:
            base = request.base or _read(_Repository, self._call(
                "reading the repository", "pr.repository",
                lambda: rest.repos.get(self.owner, self.repo_name))).default_branch
            pushed = push(self.repo, self._remote(), request.branch, token=token,
                          token_env=self.config.token_env)
            found = self._find(rest, request.branch)
            if found is None:
                data: Any = {"title": request.title, "head": request.branch, "base": base,
                             "body": body, "draft": request.draft}
                pull = _read(_Pull, self._call("opening the pull request", "pr.base", lambda: (
                    rest.pulls.create(self.owner, self.repo_name, data=data))))
            else:
                update: Any = {"title": request.title, "body": body, "base": base}
                pull = _read(_Pull, self._call(
                    f"updating pull request #{found}", "pr.base", lambda: (
                        rest.pulls.update(self.owner, self.repo_name, found, data=update))))
            self._decorate(rest, pull.number, request)
        result = PullRequest(backend="github", number=pull.number, url=pull.html_url,
                             branch=request.branch, base=pull.base.ref,
                             draft=bool(pull.draft), created=found is None, pushed_to=pushed)
        keep(self.folder, body, result)
        logger.info("pull request #%d %s: %s", result.number,
                    "opened" if result.created else "updated", result.url)
        return result

    def find(self, branch: str) -> PullRequest | None:
        with self._client(self._token()) as rest:
            number = self._find(rest, branch)
            if number is None:
                return None
            pull = _read(_Pull, self._call(
                f"reading pull request #{number}", "pr.repository", lambda: (
                    rest.pulls.get(self.owner, self.repo_name, number))))
        return PullRequest(backend="github", number=pull.number, url=pull.html_url,
                           branch=branch, base=pull.base.ref, draft=bool(pull.draft),
                           created=False)

    def default_branch(self) -> str:
        """The repository's default branch, read with the token (``portwright doctor``):
        GitHub's API answers at ``api_url``, accepts the token and shows the repository to
        it, or the :class:`~portwright.errors.PullRequestError` says which of them fails."""
        with self._client(self._token()) as rest:
            return _read(_Repository, self._call(
                "reading the repository", "pr.repository",
                lambda: rest.repos.get(self.owner, self.repo_name))).default_branch

    # -- steps ----------------------------------------------------------------------------

    def _find(self, rest: Any, branch: str) -> int | None:
        """The number of the open pull request whose head is ``branch`` of this
        repository's owner."""
        answer = self._call("looking for the branch's pull request", "pr.repository", lambda: (
            rest.pulls.list(self.owner, self.repo_name, head=f"{self.owner}:{branch}",
                            state="open", per_page=1)))
        pulls = _read(_Pulls, answer)
        return pulls.root[0].number if pulls.root else None

    def _decorate(self, rest: Any, number: int, request: PRRequest) -> None:
        """Labels and reviewers (GitHub adds each only once)."""
        if request.labels:
            labels: Any = {"labels": request.labels}
            self._call(f"labelling pull request #{number}", "pr.labels", lambda: (
                rest.issues.add_labels(self.owner, self.repo_name, number, data=labels)))
        users = [r for r in request.reviewers if "/" not in r]
        teams = [r.split("/", 1)[1] for r in request.reviewers if "/" in r]
        if users or teams:
            asked: Any = {"reviewers": users, "team_reviewers": teams}
            self._call(f"requesting reviewers of pull request #{number}", "pr.reviewers",
                       lambda: rest.pulls.request_reviewers(
                           self.owner, self.repo_name, number, data=asked))

    def _token(self) -> str:
        name = self.config.token_env
        token = self._environ.get(name, "").strip()
        if not token:
            raise UsageError(f"the github backend needs a token and {name} is not set",
                             file=f"environment variable {name}", key="pr.token_env",
                             fix=f"export {name}=<a token with Contents and Pull requests: "
                                 f"read and write on {self.config.repository}>, or name "
                                 "the variable that holds one in [pr] token_env")
        return token

    def _remote(self) -> str:
        """``[pr] remote``, else the repository's URL on the server of ``api_url``."""
        if self.config.remote:
            return self.config.remote
        parts = urlsplit(self.config.api_url)
        # api.github.com → github.com, api.X.ghe.com → X.ghe.com, HOST/api/v3 → HOST
        host = parts.netloc.removeprefix("api.")
        return f"{parts.scheme}://{host}/{self.config.repository}.git"

    @contextmanager
    def _client(self, token: str) -> Iterator[Any]:
        """githubkit's REST client of :data:`API_VERSION`."""
        try:
            from githubkit import GitHub
        except ImportError as exc:
            raise UsageError("the github backend needs githubkit", key="pr.backend",
                             fix="pip install 'portwright[github]', or use the local "
                                 "backend") from exc
        with GitHub(token, base_url=self.config.api_url + "/", timeout=self.config.timeout,
                    auto_retry=False, http_cache=False, user_agent="portwright") as github:
            yield github.rest(API_VERSION)

    def _call(self, doing: str, key: str, call: Any) -> Any:
        """``call()``, its failures turned into portwright's errors."""
        from githubkit.exception import GitHubException, RequestError, RequestFailed

        try:
            return call()
        except RequestFailed as exc:
            raise self._refused(exc, doing, key) from exc
        except RequestError as exc:
            raise PullRequestError(
                f"GitHub's API at {self.config.api_url} did not answer while {doing}: "
                f"{type(exc.exc).__name__}", key="pr.api_url",
                fix="check [pr] api_url and this machine's network, then try again "
                    "(`portwright pr RUN`)") from exc
        except GitHubException as exc:
            raise PullRequestError(f"GitHub's client failed while {doing}: "
                                   f"{type(exc).__name__}", key="pr.api_url",
                                   fix="try again (`portwright pr RUN`)") from exc

    def _refused(self, exc: RequestFailed, doing: str, key: str) -> PortwrightError:
        response: httpx.Response = exc.response.raw_response
        status = response.status_code
        said = _message(response)
        limited = _rate_limited(status, response.headers, said, doing)
        if limited is not None:
            return limited
        repo, env = self.config.repository, self.config.token_env
        text = f"GitHub answered {status} while {doing}: {said}"
        if status == 401:
            return PullRequestError(text, key="pr.token_env", fix=(
                f"the token in {env} is wrong, expired or revoked: set {env} to a valid "
                f"token, or point [pr] token_env at the variable that holds one"))
        if status == 403:
            return PullRequestError(text, key="pr.token_env", fix=(
                f"give the token in {env} Contents and Pull requests: read and write on "
                f"{repo} (a classic token needs the repo scope), or use one that has them"))
        if status == 404:
            return PullRequestError(text + f" (repository {repo})", key="pr.repository",
                                    fix=(f"check [pr] repository ({repo}) and api_url "
                                         f"({self.config.api_url}); a token that cannot see "
                                         "a private repository gets 404 too"))
        if status == 422:
            return PullRequestError(text, key=key, fix=(
                f"change [{key.replace('.', '] ', 1)} so GitHub accepts it (its message says "
                "what it refused), then `portwright pr RUN`"))
        return PullRequestError(text, key="pr.api_url",
                                fix="try again later (`portwright pr RUN`); GitHub may be "
                                    "down (githubstatus.com)")


class _Pulls(RootModel[list[_Pull]]):
    pass


M = TypeVar("M", bound=BaseModel)


def _read(model: type[M], answer: Any) -> M:
    """The fields of ``model`` out of a githubkit response's JSON."""
    try:
        return model.model_validate(answer.raw_response.json())
    except (ValueError, ValidationError) as exc:
        raise PullRequestError(f"GitHub's answer is not what its API describes: {exc}",
                               key="pr.api_url",
                               fix="check that [pr] api_url is GitHub's REST API") from exc


def _message(response: httpx.Response) -> str:
    """GitHub's own words: ``message`` and each of ``errors``, capped."""
    try:
        data = response.json()
    except ValueError:
        return str(response.text[:300] or response.reason_phrase)
    if not isinstance(data, dict):
        return str(data)[:300]
    parts = [str(data.get("message", ""))]
    for error in data.get("errors") or []:
        if isinstance(error, dict):
            parts.append(str(error.get("message") or
                             " ".join(str(error.get(k, "")) for k in ("field", "code"))))
        else:
            parts.append(str(error))
    return "; ".join(p for p in parts if p)[:1000]


def _rate_limited(status: int, headers: Mapping[str, str], said: str,
                  doing: str) -> RateLimited | None:
    """A :class:`RateLimited` when a 403 or 429 is GitHub's rate limit: the primary one
    (``x-ratelimit-remaining: 0``, reset at ``x-ratelimit-reset``) or a secondary one
    (``retry-after`` seconds)."""
    remaining, reset = headers.get("x-ratelimit-remaining"), headers.get("x-ratelimit-reset")
    retry = headers.get("retry-after")
    if status not in (403, 429) or (status == 403 and retry is None and remaining != "0"):
        return None
    when: list[str] = []
    if remaining == "0" and reset and reset.isdigit():
        at = datetime.fromtimestamp(int(reset), UTC)
        minutes = max(0, round((at - datetime.now(UTC)).total_seconds() / 60))
        when.append(f"the limit resets at {at:%Y-%m-%d %H:%M:%S} UTC (in {minutes} min)")
    if retry is not None:
        when.append(f"GitHub asks to retry after {retry} s")
    return RateLimited(
        f"GitHub's rate limit is spent ({status} while {doing}): {said}"
        + (f"; {'; '.join(when)}" if when else ""),
        fix="wait until then, and run `portwright pr RUN` (the run's branch and report are "
            "kept); a token of its own ([pr] token_env) has a limit of its own")
