"""Pushing a run's branch to a remote, with a token that nothing but git's HTTP request
sees.

The token goes into the *environment* of the one ``git push`` subprocess, as
configuration git reads from ``GIT_CONFIG_KEY_n`` / ``GIT_CONFIG_VALUE_n``: an
``http.<remote URL>.extraHeader`` of ``Authorization: Basic …`` (user
``x-access-token``, as GitHub takes it), scoped to that URL so a redirect to another host
does not carry it. It is never an argument (command lines are readable by every user),
never written into a ``.git/config``, never logged; credential helpers are switched off
for that push (a bad token must fail, not fall back to stored credentials), and so are
git's trace variables (``GIT_TRACE_CURL`` would print headers). A message git prints is
passed on only redacted (:mod:`portwright.redact`, which knows the token from then on).
"""

from __future__ import annotations

import base64
import logging
import os
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from portwright.errors import PullRequestError
from portwright.redact import redact, register
from portwright.vcs import plumbing
from portwright.vcs.upstream import is_url

logger = logging.getLogger(__name__)

_QUIET = ("GIT_TRACE", "GIT_CURL_VERBOSE", "GIT_TRACE_CURL", "GIT_TRACE_PACKET",
          "GIT_TRACE_PACK_ACCESS", "GIT_TRACE2", "GIT_TRACE2_EVENT", "GIT_TRACE2_PERF",
          "GIT_TRACE_PERFORMANCE", "GIT_TRACE_SETUP", "GIT_TRACE_SHALLOW",
          "GIT_TRACE_CURL_NO_DATA", "GIT_TRACE_REDACT")
"""git's trace variables: never passed to a push (traces can print headers)."""
_WITH_TOKEN = ("GIT_ASKPASS", "SSH_ASKPASS", "GIT_SSL_NO_VERIFY")
"""Also dropped when a token authenticates: no other credentials, no unverified TLS."""


def remote_url(repo: Path, remote: str) -> str:
    """The URL (or path) ``remote`` stands for: a remote's name in ``repo``, a URL, or a
    path of a repository."""
    if is_url(remote):
        return remote
    done = plumbing.run(repo, "remote", "get-url", "--", remote)
    if done.returncode == 0:
        return done.stdout.decode("utf-8", "replace").strip()
    path = Path(remote).expanduser()
    if path.is_absolute() and path.is_dir():
        return str(path)
    names = plumbing.run(repo, "remote").stdout.decode("utf-8", "replace").split()
    raise PullRequestError(
        f"no git remote named {remote!r} in the downstream repository", key="pr.remote",
        fix=(f"use one of its remotes ({', '.join(names)})" if names else
             "add one (`git remote add origin URL`)") + ", a URL, or an absolute path")


def _http(url: str) -> bool:
    return url[:8].lower().startswith(("http://", "https://"))


def shown(url: str) -> str:
    """``url`` without any credentials in it (for messages and results)."""
    if not _http(url):
        return redact(url)
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = host if parts.port is None else f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def push(repo: Path, remote: str, branch: str, *, token: str | None = None,
         token_env: str = "") -> str:
    """Push ``branch`` of ``repo`` to the branch of the same name at ``remote`` (a name, a
    URL or a path); the token (from the variable ``token_env``) authenticates an HTTP(S)
    remote. Returns the remote's URL without credentials."""
    url = remote_url(repo, remote)
    env = {k: v for k, v in os.environ.items() if k not in _QUIET}
    if token is not None and _http(url):
        register(token)
        env = {k: v for k, v in env.items() if k not in _WITH_TOKEN}
        header = base64.b64encode(f"x-access-token:{token}".encode()).decode()
        settings = {"credential.helper": "",
                    f"http.{shown(url)}.extraHeader": f"Authorization: Basic {header}"}
        count = int(env.get("GIT_CONFIG_COUNT", "0") or 0)
        for offset, (key, value) in enumerate(settings.items()):
            env[f"GIT_CONFIG_KEY_{count + offset}"] = key
            env[f"GIT_CONFIG_VALUE_{count + offset}"] = value
        env["GIT_CONFIG_COUNT"] = str(count + len(settings))
    logger.info("pushing %s to %s", branch, shown(url))
    ref = f"refs/heads/{branch}"
    done = plumbing.run(repo, "push", "--quiet", "--porcelain", remote, f"{ref}:{ref}",
                        env=env)
    if done.returncode != 0:
        message = redact(done.stderr.decode("utf-8", "replace").strip())
        raise _refused(message, branch, shown(url), token_env)
    return shown(url)


def _refused(message: str, branch: str, url: str, token_env: str) -> PullRequestError:
    lowered = message.lower()
    if token_env and any(s in lowered for s in ("authentication", "401", "403", "username",
                                                "permission", "denied")):
        return PullRequestError(
            f"git push of {branch} to {url} was refused: {message}", key="pr.token_env",
            fix=f"set {token_env} to a token that may push to the repository (Contents: "
                "read and write)")
    if "non-fast-forward" in lowered or "fetch first" in lowered or "rejected" in lowered:
        return PullRequestError(
            f"git push of {branch} to {url} was refused: {message}", key="pr.remote",
            fix=f"the remote's {branch} has commits this run does not: delete that branch "
                "on the remote, or start a new run")
    return PullRequestError(f"git push of {branch} to {url} failed: {message}",
                            key="pr.remote",
                            fix="check [pr] remote and that this machine can reach it")
