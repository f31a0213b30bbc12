"""``portwright serve``: the app under uvicorn, behind a token always (one is made when
none is given); off loopback only with a token given."""

from __future__ import annotations

import errno
import logging
import secrets
import socket
from collections.abc import Iterable
from pathlib import Path

from portwright.errors import UsageError
from portwright.web.security import Guard, is_loopback

logger = logging.getLogger(__name__)

MIN_TOKEN = 16
"""Shortest token accepted."""


def new_token() -> str:
    """A token for a server started without one (43 URL-safe characters)."""
    return secrets.token_urlsafe(32)


def guard_for(host: str, token: str | None, allow_hosts: Iterable[str] = (), *,
              made: str | None = None) -> Guard:
    """The access rules for a server bound to ``host`` that requires ``token`` (the one
    given), else ``made`` (one made for it, :func:`new_token`); off loopback a token must be
    given: one made would travel in clear to whoever the link is sent to."""
    if token is not None and len(token) < MIN_TOKEN:
        raise UsageError(f"the token has {len(token)} characters; at least {MIN_TOKEN} are "
                         "needed", key="--token",
                         fix="use a long random one: python3 -c 'import secrets; "
                             "print(secrets.token_urlsafe(32))'")
    if not is_loopback(host) and token is None:
        raise UsageError(f"--host {host} is not a loopback address: anyone who reaches it "
                         "could approve runs", key="--host",
                         fix="pass --token (or --token-file) to require it, or serve on "
                             "127.0.0.1 and reach it through an SSH tunnel")
    return Guard.for_bind(host, token if token is not None else made, allow_hosts)


def bind(host: str, port: int) -> socket.socket:
    """A socket listening on ``host:port``, made before anything is printed: a port in use
    or an address this machine does not have is bad input (the option names it), not a
    server that announces itself and then fails."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                   flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise UsageError(f"--host {host} is no address of this machine ({exc.strerror})",
                         key="--host", fix="give an address it has, e.g. 127.0.0.1") from exc
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise UsageError(f"port {port} on {host} is in use by another program",
                             key="--port", fix="pick another --port, or stop what holds it "
                                               f"(`ss -ltnp 'sport = :{port}'`)") from exc
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}",
                         key="--host", fix="give an address this machine has and a port "
                                           "you may use (1024 or more)") from exc
    return sock


def serve(root: Path, *, sock: socket.socket, guard: Guard, allow_local: bool = False) -> None:
    """Serve the project at ``root`` on ``sock`` (:func:`bind`) until stopped."""
    import uvicorn

    from portwright.web.app import create_app

    app = create_app(root, guard, allow_local=allow_local)
    config = uvicorn.Config(app, log_level="warning",
                            access_log=False, server_header=False, proxy_headers=False,
                            timeout_graceful_shutdown=3, lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])
