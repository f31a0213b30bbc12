"""Who may read the pages and who may change a run.

- **Hosts.** On a loopback address only loopback host names are answered (a page of
  another site that rebinds its name to 127.0.0.1 gets 400); ``allow_hosts`` adds names.
- **Token.** Every request but ``/healthz`` needs the server's token (``portwright
  serve`` makes one when none is given, on loopback too: any local process, or a page
  another site runs in a browser on this machine, could otherwise approve runs):
  ``Authorization: Bearer <token>``, or the session cookie that ``/login?token=…`` sets
  (it holds a digest of the token, never the token).
- **Cross-site requests.** A request that changes state (any method but GET/HEAD/OPTIONS)
  needs an ``Origin`` (or, failing that, a ``Referer``) of this very server, and the
  per-session CSRF token (a random cookie) repeated in its form's ``csrf`` field.
- **Headers.** Every answer forbids framing, sniffing and scripts from anywhere but this
  server (Content-Security-Policy).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qs, urlsplit

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from portwright.config import is_loopback as is_loopback_host

CSRF_COOKIE = "portwright_csrf"
SESSION_COOKIE = "portwright_session"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
OPEN_PATHS = frozenset({"/healthz"})

CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
       "img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
       "form-action 'self'")
HEADERS = [(b"content-security-policy", CSP.encode()), (b"x-content-type-options", b"nosniff"),
           (b"x-frame-options", b"DENY"), (b"referrer-policy", b"same-origin"),
           (b"cache-control", b"no-store")]


def is_loopback(host: str) -> bool:
    return host in LOOPBACK_NAMES or is_loopback_host(host)


@dataclass(frozen=True)
class Guard:
    """The server's access rules."""

    token: str | None
    """Needed by every request when set."""
    hosts: frozenset[str] | None
    """Host names answered (None: any, behind the token)."""

    @classmethod
    def for_bind(cls, host: str, token: str | None, allow_hosts: Iterable[str] = ()) -> Guard:
        extra = {h.lower() for h in allow_hosts}
        if is_loopback(host):
            return cls(token, frozenset(LOOPBACK_NAMES | {host.lower()} | extra))
        return cls(token, frozenset(extra | LOOPBACK_NAMES | {host.lower()}) if extra
                   else None)

    def session(self) -> str:
        """The session cookie's value: a digest of the token."""
        assert self.token is not None
        return hmac.new(self.token.encode(), b"portwright-session", hashlib.sha256).hexdigest()

    def signed_in(self, headers: Headers, cookies: dict[str, str]) -> bool:
        if self.token is None:
            return True
        scheme, _, given = headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(),
                                                              self.token.encode()):
            return True
        cookie = cookies.get(SESSION_COOKIE, "")
        return bool(cookie) and hmac.compare_digest(cookie.encode(), self.session().encode())


def _cookies(headers: Headers) -> dict[str, str]:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(headers.get("cookie", ""))
    except Exception:  # a malformed cookie header is as good as none
        return {}
    return {k: m.value for k, m in jar.items()}


def _hostname(host: str) -> str:
    if host.startswith("["):
        return host[1:].split("]", 1)[0].lower()
    return host.rsplit(":", 1)[0].lower() if host.count(":") == 1 else host.lower()


def same_origin(headers: Headers, scheme: str) -> bool:
    """The request comes from a page of this server: its ``Origin`` (else ``Referer``)
    names the scheme and host it was sent to."""
    host = headers.get("host", "")
    origin = headers.get("origin", "")
    if origin == "null":  # an opaque origin (a sandboxed frame, a file, a data: URL)
        return False
    if not origin:
        referer = urlsplit(headers.get("referer", ""))
        if not referer.scheme or not referer.netloc:
            return False
        origin = f"{referer.scheme}://{referer.netloc}"
    return bool(host) and hmac.compare_digest(origin.encode(), f"{scheme}://{host}".encode())


def csrf_ok(request: Request, form_value: object) -> bool:
    """The form repeats this session's CSRF token."""
    cookie = request.cookies.get(CSRF_COOKIE, "")
    return (isinstance(form_value, str) and bool(cookie) and len(form_value) == len(cookie)
            and hmac.compare_digest(form_value.encode(), cookie.encode()))


def _cookie_header(name: str, value: str) -> tuple[bytes, bytes]:
    return (b"set-cookie",
            f"{name}={value}; Path=/; HttpOnly; SameSite=Lax".encode())


class GuardMiddleware:
    """Applies a :class:`Guard` to every HTTP request of ``app``."""

    def __init__(self, app: ASGIApp, guard: Guard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            await refusal(scope, receive, self._with_headers(send, []))
            return
        cookies = _cookies(headers)
        csrf = cookies.get(CSRF_COOKIE, "")
        extra: list[tuple[bytes, bytes]] = []
        if len(csrf) != 64:
            csrf = secrets.token_hex(32)
            extra.append(_cookie_header(CSRF_COOKIE, csrf))
        scope.setdefault("state", {})["csrf"] = csrf
        if scope["path"] == "/login" and self.guard.token is not None:
            extra.append(_cookie_header(SESSION_COOKIE, self.guard.session()))
            response: Any = RedirectResponse("/", status_code=303)
            await response(scope, receive, self._with_headers(send, extra))
            return
        await self.app(scope, receive, self._with_headers(send, extra))

    def _refusal(self, scope: Scope, headers: Headers) -> Response | None:
        hosts = self.guard.hosts
        if hosts is not None and _hostname(headers.get("host", "")) not in hosts:
            return PlainTextResponse("unknown host: this server answers only its own names",
                                     status_code=400)
        if scope["path"] in OPEN_PATHS:
            return None
        if self.guard.token is not None and not self._signed_in(scope, headers):
            return PlainTextResponse(
                "sign in: open the link `portwright serve` printed (/login?token=…), or send "
                "Authorization: Bearer <token>", status_code=401)
        if scope["method"] not in SAFE_METHODS and not same_origin(headers, scope["scheme"]):
            return PlainTextResponse("refused: a request that changes a run must come from "
                                     "this server's own page", status_code=403)
        return None

    def _signed_in(self, scope: Scope, headers: Headers) -> bool:
        if self.guard.signed_in(headers, _cookies(headers)):
            return True
        if scope["path"] != "/login" or self.guard.token is None:
            return False
        given = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token", [""])
        return hmac.compare_digest(given[0].encode(), self.guard.token.encode())

    @staticmethod
    def _with_headers(send: Send, extra: list[tuple[bytes, bytes]]
                      ) -> Callable[[Message], Awaitable[None]]:
        async def wrapped(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *HEADERS,
                                                  *extra]}
            await send(message)

        return wrapped
