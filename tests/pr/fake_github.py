"""A fake GitHub on the loopback interface: the REST API under ``/api/v3`` (as GitHub
Enterprise serves it) and git's smart HTTP under ``/<owner>/<name>.git``.

Every API request is validated against GitHub's own OpenAPI description (method, path,
parameters, body) with openapi-core, and so is every answer the fake gives; a request that
fails validation is answered 400 and kept in :attr:`FakeGitHub.invalid`, which the
fixture checks is empty at the end of each test. Pull requests live in memory, numbered
like GitHub numbers them; the fake refuses what GitHub refuses (a second open pull request
for one head, a head branch that was never pushed, a bad token).

Git requests are served by ``git http-backend`` from a bare repository per repository, and
must carry ``Authorization: Basic`` with the token (user ``x-access-token``), as GitHub's
do. While a push is in flight the fake reads the command line of every process on the
machine and records any that holds the token (:attr:`FakeGitHub.token_on_command_line`).
"""

from __future__ import annotations

import base64
import functools
import json
import re
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openapi_core import OpenAPI
from openapi_core.contrib.werkzeug import WerkzeugOpenAPIRequest, WerkzeugOpenAPIResponse
from openapi_schema_validator import OAS30Validator
from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server
from werkzeug.wrappers import Request, Response

from tests.pr import openapi

API = "/api/v3"
API_VERSION = "2022-11-28"
"""The REST API version of the description (@octokit/openapi describes this one)."""
DOCS = "https://docs.github.com/rest"


@dataclass
class Fault:
    """An answer given instead of the real one to the next request of ``operation``
    (any operation when empty)."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    operation: str = ""


@dataclass
class Pull:
    number: int
    title: str
    body: str
    head: str
    base: str
    draft: bool
    owner: str
    state: str = "open"
    labels: list[str] = field(default_factory=list)
    reviewers: list[str] = field(default_factory=list)
    teams: list[str] = field(default_factory=list)


@functools.cache
def _validator() -> OpenAPI:
    """openapi-core over the served part of GitHub's description, its server moved to
    ``/api/v3`` of any host (built once: checking the description takes seconds)."""
    return OpenAPI.from_dict({**openapi.served_description(), "servers": [{"url": API}]})


_ROUTES = [(re.compile(p.replace("{owner}", "(?P<owner>[^/]+)").replace(
    "{repo}", "(?P<repo>[^/]+)").replace("{pull_number}", "(?P<number>[0-9]+)").replace(
    "{issue_number}", "(?P<number>[0-9]+)") + "$"), method.upper(), operation)
    for operation, (p, method) in openapi.OPERATIONS.items()]


class FakeGitHub:
    """The fake, serving on ``127.0.0.1`` from a thread; a context manager."""

    def __init__(self, folder: Path, token: str, repository: str = "octo/port",
                 default_branch: str = "main") -> None:
        self.folder = folder
        self.token = token
        self.repository = repository
        self.default_branch = default_branch
        self.pulls: list[Pull] = []
        self.faults: list[Fault] = []
        self.calls: list[tuple[str, str]] = []
        """(operation, the request's JSON body or query) of every API request."""
        self.invalid: list[str] = []
        """Requests or answers that GitHub's description refuses (should stay empty)."""
        self.git_requests: list[tuple[str, bool]] = []
        """(path, whether it carried the token) of every git request."""
        self.token_on_command_line: list[str] = []
        self._lock = threading.Lock()
        self._server: BaseWSGIServer | None = None
        self._thread: threading.Thread | None = None

    # -- life -----------------------------------------------------------------------------

    def __enter__(self) -> FakeGitHub:
        self.bare.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "init", "-q", "--bare", "-b", self.default_branch,
                        str(self.bare)], check=True)
        self._server = make_server("127.0.0.1", 0, self._app, threaded=True,
                                   request_handler=_Quiet)
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        _validator()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        assert self._thread is not None
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.server_port)

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}{API}"

    @property
    def git_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/{self.repository}.git"

    @property
    def bare(self) -> Path:
        return self.folder / "git" / f"{self.repository}.git"

    def fail(self, status: int, message: str, *, headers: dict[str, str] | None = None,
             operation: str = "", errors: list[dict[str, Any]] | None = None) -> None:
        """Answer the next request (of ``operation``) with ``status`` and GitHub's error
        body."""
        body: dict[str, Any] = {"message": message, "documentation_url": DOCS,
                                "status": str(status)}
        if errors is not None:
            body["errors"] = errors
        self.faults.append(Fault(status, body, headers or {}, operation))

    def seed(self, repo: Path, branch: str = "main") -> None:
        """Put ``branch`` of ``repo`` into the fake's repository (straight into the bare
        repository, as if it had always been there)."""
        subprocess.run(["git", "-C", str(repo), "push", "-q", str(self.bare),
                        f"{branch}:refs/heads/{branch}"], check=True, capture_output=True)

    def branch_head(self, branch: str) -> str | None:
        done = subprocess.run(["git", "-C", str(self.bare), "rev-parse", "--verify", "--quiet",
                               f"refs/heads/{branch}"], capture_output=True, text=True)
        return done.stdout.strip() or None

    # -- dispatch -------------------------------------------------------------------------

    @Request.application  # type: ignore[misc]
    def _app(self, request: Request) -> Response:
        if request.path.startswith(API + "/"):
            return self._api(request)
        if request.path.startswith(f"/{self.repository}.git/"):
            return self._git(request)
        return _json(404, {"message": "Not Found", "documentation_url": DOCS})

    def _api(self, request: Request) -> Response:
        path = request.path.removeprefix(API)
        route = next(((op, m) for pattern, method, op in _ROUTES
                      if request.method == method and (m := pattern.match(path))), None)
        if route is None:
            self.invalid.append(f"{request.method} {path}: not an operation the fake serves")
            return _json(404, {"message": "Not Found", "documentation_url": DOCS})
        operation, match = route
        openapi_request = WerkzeugOpenAPIRequest(request)
        try:
            _validator().validate_request(openapi_request)
        except Exception as exc:  # openapi-core raises a tree of its own errors
            self.invalid.append(f"{operation}: request refused by GitHub's description: "
                                f"{_why(exc)}")
            return _json(400, {"message": f"invalid request: {_why(exc)}"})
        with self._lock:
            self.calls.append((operation, request.get_data(as_text=True) or
                               request.query_string.decode()))
            response = self._answer(operation, match.groupdict(), request)
        self._check_answer(operation, openapi_request, response)
        return response

    def _answer(self, operation: str, params: dict[str, str], request: Request) -> Response:
        version = request.headers.get("X-GitHub-Api-Version", API_VERSION)
        if version != API_VERSION:
            return _json(400, {"message": f"Unsupported API version: {version}",
                               "documentation_url": DOCS, "status": "400"})
        if request.headers.get("Authorization", "") not in (f"token {self.token}",
                                                            f"Bearer {self.token}"):
            return _json(401, {"message": "Bad credentials", "documentation_url": DOCS,
                               "status": "401"})
        fault = next((f for f in self.faults if f.operation in ("", operation)), None)
        if fault is not None:
            self.faults.remove(fault)
            return _json(fault.status, fault.body, fault.headers)
        if f"{params['owner']}/{params['repo']}" != self.repository:
            return _json(404, {"message": "Not Found", "documentation_url": DOCS,
                               "status": "404"})
        handler = getattr(self, "_" + operation.replace("/", "_").replace("-", "_"))
        status, body = handler(params, request)
        return _json(status, body)

    def _check_answer(self, operation: str, request: WerkzeugOpenAPIRequest,
                      response: Response) -> None:
        if openapi.response_schema(operation, response.status_code) is None and \
                response.status_code >= 400:
            # GitHub answers 401 (and more) on every operation without describing it
            # everywhere: such answers must at least be GitHub's basic error
            basic = openapi.resolve({"$ref": "#/components/schemas/basic-error"})
            errors = [e.message for e in OAS30Validator(basic).iter_errors(response.json)]
            if errors:
                self.invalid.append(f"{operation}: {response.status_code} answer: {errors}")
            return
        try:
            _validator().validate_response(
                request, WerkzeugOpenAPIResponse(response))
        except Exception as exc:
            self.invalid.append(f"{operation}: answer {response.status_code} refused by "
                                f"GitHub's description: {_why(exc)}")

    # -- operations -----------------------------------------------------------------------

    def _repos_get(self, params: dict[str, str], request: Request) -> tuple[int, Any]:
        repo = openapi.minimal(openapi.response_schema("repos/get", 200) or {})
        owner, name = self.repository.split("/")
        repo.update(name=name, full_name=self.repository, default_branch=self.default_branch,
                    html_url=f"https://github.example.invalid/{self.repository}")
        repo["owner"]["login"] = owner
        return 200, repo

    def _pulls_list(self, params: dict[str, str], request: Request) -> tuple[int, Any]:
        state = request.args.get("state", "open")
        head = request.args.get("head", "")
        found = [p for p in self.pulls if state in ("all", p.state)
                 and (not head or head in (f"{p.owner}:{p.head}", p.head))]
        return 200, [self._render(p, "pulls/list") for p in found]

    def _pulls_create(self, params: dict[str, str], request: Request) -> tuple[int, Any]:
        data = request.get_json()
        head, base = data["head"], data["base"]
        owner = self.repository.split("/")[0]
        if ":" in head:
            owner, head = head.split(":", 1)
        if self.branch_head(head) is None:
            return _invalid("head", "invalid", f"head branch {head} does not exist")
        if self.branch_head(base) is None:
            return _invalid("base", "invalid", f"base branch {base} does not exist")
        if any(p.head == head and p.base == base and p.state == "open" for p in self.pulls):
            return _invalid("", "custom", f"A pull request already exists for {owner}:{head}.")
        pull = Pull(number=len(self.pulls) + 1, title=data["title"], body=data.get("body")
                    or "", head=head, base=base, draft=bool(data.get("draft")), owner=owner)
        self.pulls.append(pull)
        return 201, self._render(pull, "pulls/create")

    def _pull(self, params: dict[str, str]) -> Pull | None:
        return next((p for p in self.pulls if p.number == int(params["number"])), None)

    def _pulls_get(self, params: dict[str, str], request: Request) -> tuple[int, Any]:
        pull = self._pull(params)
        if pull is None:
            return 404, {"message": "Not Found", "documentation_url": DOCS, "status": "404"}
        return 200, self._render(pull, "pulls/get")

    def _pulls_update(self, params: dict[str, str], request: Request) -> tuple[int, Any]:
        pull = self._pull(params)
        if pull is None:
            return _invalid("number", "missing", "no such pull request")
        data = request.get_json()
        if "base" in data and self.branch_head(data["base"]) is None:
            return _invalid("base", "invalid", f"base branch {data['base']} does not exist")
        for key in ("title", "body", "base", "state"):
            if key in data:
                setattr(pull, key, data[key])
        return 200, self._render(pull, "pulls/update")

    def _issues_add_labels(self, params: dict[str, str], request: Request) -> tuple[int, Any]:
        pull = self._pull(params)
        if pull is None:
            return 404, {"message": "Not Found", "documentation_url": DOCS, "status": "404"}
        data = request.get_json()
        names = data["labels"] if isinstance(data, dict) else data
        for name in names:
            name = name["name"] if isinstance(name, dict) else name
            if name not in pull.labels:
                pull.labels.append(name)
        schema = openapi.response_schema("issues/add-labels", 200) or {}
        return 200, [self._label(openapi.resolve(schema["items"]), n) for n in pull.labels]

    def _pulls_request_reviewers(self, params: dict[str, str],
                                 request: Request) -> tuple[int, Any]:
        pull = self._pull(params)
        if pull is None:
            return _invalid("number", "missing", "no such pull request")
        data = request.get_json()
        for login in data.get("reviewers", []):
            if login not in pull.reviewers:
                pull.reviewers.append(login)
        for team in data.get("team_reviewers", []):
            if team not in pull.teams:
                pull.teams.append(team)
        return 201, self._render(pull, "pulls/request-reviewers")

    # -- rendering ------------------------------------------------------------------------

    def _render(self, pull: Pull, operation: str) -> dict[str, Any]:
        status = 201 if operation in ("pulls/create", "pulls/request-reviewers") else 200
        schema = openapi.response_schema(operation, status) or {}
        if schema.get("type") == "array":
            schema = openapi.resolve(schema["items"])
        out: dict[str, Any] = openapi.minimal(schema)
        props = schema["properties"]
        owner = self.repository.split("/")[0]
        url = f"https://github.example.invalid/{self.repository}/pull/{pull.number}"
        out.update(number=pull.number, title=pull.title, body=pull.body, state=pull.state,
                   html_url=url, draft=pull.draft,
                   labels=[self._label(openapi.resolve(props["labels"]["items"]), name)
                           for name in pull.labels])
        out["head"].update(ref=pull.head, label=f"{pull.owner}:{pull.head}")
        out["base"].update(ref=pull.base, label=f"{owner}:{pull.base}")
        user = openapi.resolve(props["requested_reviewers"]["items"])
        out["requested_reviewers"] = [{**openapi.minimal(user), "login": login}
                                      for login in pull.reviewers]
        team = openapi.resolve(props["requested_teams"]["items"])
        out["requested_teams"] = [{**openapi.minimal(team), "slug": slug}
                                  for slug in pull.teams]
        return out

    @staticmethod
    def _label(schema: dict[str, Any], name: str) -> dict[str, Any]:
        return {**openapi.minimal(schema), "name": name}

    # -- git ------------------------------------------------------------------------------

    def _git(self, request: Request) -> Response:
        expected = "Basic " + base64.b64encode(
            f"x-access-token:{self.token}".encode()).decode()
        authorised = request.headers.get("Authorization") == expected
        self.git_requests.append((request.path, authorised))
        self._look_for_token_in_command_lines()
        if not authorised:
            return Response("authentication required\n", status=401,
                            headers={"WWW-Authenticate": 'Basic realm="GitHub"'})
        env = {"GIT_PROJECT_ROOT": str(self.folder / "git"), "GIT_HTTP_EXPORT_ALL": "1",
               "PATH_INFO": request.path, "QUERY_STRING": request.query_string.decode(),
               "REQUEST_METHOD": request.method, "REMOTE_USER": "x-access-token",
               "REMOTE_ADDR": "127.0.0.1", "CONTENT_TYPE": request.content_type or "",
               "PATH": "/usr/local/bin:/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM": "1",
               "HOME": str(self.folder)}
        if request.headers.get("Content-Encoding"):
            env["HTTP_CONTENT_ENCODING"] = request.headers["Content-Encoding"]
        if request.headers.get("Git-Protocol"):
            env["GIT_PROTOCOL"] = request.headers["Git-Protocol"]
        done = subprocess.run(["git", "http-backend"], input=request.get_data(), env=env,
                              capture_output=True, check=False)
        head, _, body = done.stdout.partition(b"\r\n\r\n")
        status, headers = 200, {}
        for line in head.decode("latin-1").split("\r\n"):
            key, _, value = line.partition(":")
            if key.lower() == "status":
                status = int(value.split()[0])
            elif key:
                headers[key] = value.strip()
        return Response(body, status=status, headers=headers)

    def _look_for_token_in_command_lines(self) -> None:
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                text = cmdline.read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
            except OSError:
                continue
            if self.token in text:
                self.token_on_command_line.append(text)


class _Quiet(WSGIRequestHandler):
    def log(self, type: str, message: str, *args: Any) -> None:
        return None


def _json(status: int, body: Any, headers: dict[str, str] | None = None) -> Response:
    return Response(json.dumps(body), status=status, headers=headers or {},
                    content_type="application/json; charset=utf-8")


def _invalid(field_name: str, code: str, message: str) -> tuple[int, Any]:
    error = {"resource": "PullRequest", "code": code, "message": message}
    if field_name:
        error["field"] = field_name
    return 422, {"message": "Validation Failed", "errors": [error],
                 "documentation_url": DOCS, "status": "422"}


def _why(exc: BaseException) -> str:
    """What the validator refused, most precise first: the JSON-schema errors of the
    exception and its causes, then the exception itself (cut)."""
    reasons: list[str] = []
    seen: BaseException | None = exc
    while seen is not None:
        reasons += [str(getattr(e, "message", e)) for e in
                    getattr(seen, "schema_errors", None) or []]
        seen = seen.__cause__ or seen.__context__
    return "; ".join([*reasons, f"{type(exc).__name__}: {str(exc)[:300]}"])
