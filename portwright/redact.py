"""The one redactor: every text portwright writes outward (an error, a log line, a
checkpoint, ``status`` and ``runs`` output, a page, a pull request's body, a transcript,
``run.json``) goes through :func:`redact` first.

It masks, with :data:`MASK`:

- the password of a URL's userinfo, whatever the scheme and its case
  (``HTTPS://user:pw@``, ``postgresql://user:pw@``, ``git+ssh://user:pw@``);
- the value of an ``Authorization`` / ``Proxy-Authorization`` header, and what follows
  ``Bearer``, ``token`` and ``Basic`` when it looks like a credential (8 characters or
  more, a digit among them: prose such as "the token ceiling." or "token GITHUB_TOKEN"
  stays);
- well-known token shapes: GitHub's (``ghp_``, ``gho_``, ``ghs_``, ``ghu_``, ``ghr_``,
  ``github_pat_``), OpenAI-style keys (``sk-…``), ``x-access-token:…``;
- the values of the secrets this process knows (the model's key, the forge's token, the
  web token, …: :func:`register`, done when a project is loaded), replaced exactly;
  values shorter than :data:`MIN_SECRET` characters are never registered (they would
  mask ordinary words).

Every pattern is precompiled and bounded, so a hostile text costs linear time. The
registry is the only state: a set of values, replaced as a whole under a lock.
"""

from __future__ import annotations

import base64
import dataclasses
import re
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar
from urllib.parse import quote

MASK = "***"
"""What a secret is replaced with."""
MIN_SECRET = 8
"""Registered values shorter than this are ignored."""

_USERINFO = re.compile(
    r"(?i)\b([a-z][a-z0-9+.-]{0,31}://)([^\s/?#@:]{0,256}):([^\s/?#]{1,256})@")
"""``scheme://user:password@``: the password may hold ``@``; the last one ends it."""
_CREDENTIAL_URL = re.compile(r"(?i)^\s*[a-z][a-z0-9+.-]{0,31}://[^\s/?#]{0,512}@")
_HEADER = re.compile(
    r"(?i)\b((?:proxy-)?authorization)([\"']?[ \t]{0,16}[:=][ \t]{0,16}[\"']?)"
    r"([^\r\n\"'<]{1,4096})")
_SCHEME = re.compile(r"(?i)\b(bearer|basic)([ \t]{1,16})([A-Za-z0-9._~+/=-]{8,4096})"
                     r"|\b(token)([ \t]{1,16})([A-Za-z0-9._~+/=-]{8,4096})")
_TOKENS = re.compile(
    r"\b(?:gh[pousr]_[A-Za-z0-9]{20,255}|github_pat_[A-Za-z0-9_]{20,255}"
    r"|sk-[A-Za-z0-9_-]{16,512})"
    r"|(?i:x-access-token):[^\s@/\"'<]{1,512}")

_lock = threading.Lock()
_known: tuple[str, ...] = ()
"""Registered values, longest first (a value inside another is masked with it)."""

T = TypeVar("T")


def redact(text: str) -> str:
    """``text`` with every secret it holds masked."""
    for value in _known:
        if value in text:
            text = text.replace(value, MASK)
    text = _USERINFO.sub(rf"\1\2:{MASK}@", text)
    text = _HEADER.sub(rf"\1\2{MASK}", text)
    text = _SCHEME.sub(_scheme, text)
    return _TOKENS.sub(_token, text)


def _scheme(match: re.Match[str]) -> str:
    word, space, value = (match.group(1, 2, 3) if match.group(1) is not None
                          else match.group(4, 5, 6))
    if not any(c.isdigit() for c in value):  # prose ("token ceiling."), a name (token_env)
        return match.group(0)
    return f"{word}{space}{MASK}"


def _token(match: re.Match[str]) -> str:
    found = match.group(0)
    if found[:15].lower() == "x-access-token:":
        return f"{found[:15]}{MASK}"
    return MASK


def redact_data(value: T) -> T:
    """``value`` with every string in it redacted: dicts (keys too), lists, tuples, sets,
    pydantic models and dataclasses holding a secret are rebuilt; anything else, and
    whatever holds none, is returned as it is (the same object, of the same type: an enum
    member stays one)."""
    return _walk(value)  # type: ignore[no-any-return]


def _walk(value: Any) -> Any:
    if isinstance(value, str):
        said = redact(value)
        return value if said == value else said
    if isinstance(value, dict):
        items = [(_walk(k), _walk(v)) for k, v in value.items()]
        if all(k is a and v is b for (k, v), (a, b) in zip(items, value.items(), strict=True)):
            return value
        return type(value)(items)
    if isinstance(value, list | tuple | set | frozenset):
        walked = [_walk(v) for v in value]
        if all(a is b for a, b in zip(walked, value, strict=True)):
            return value
        return (type(value)(*walked) if hasattr(value, "_fields")  # a named tuple
                else type(value)(walked))
    pydantic = sys.modules.get("pydantic")  # no model exists before it is imported
    if pydantic is not None and isinstance(value, pydantic.BaseModel):
        changed = {name: new for name in type(value).model_fields
                   if (new := _walk(old := getattr(value, name))) is not old}
        return value.model_copy(update=changed) if changed else value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changed = {f.name: new for f in dataclasses.fields(value) if f.init
                   and (new := _walk(old := getattr(value, f.name))) is not old}
        return dataclasses.replace(value, **changed) if changed else value
    return value


def unredacted(recorded: Any, current: Any) -> Any:
    """``recorded`` (data :func:`redact_data` wrote) with each string that is the redacted
    form of the string at the same place in ``current`` put back as ``current`` has it: a
    config recorded redacted, read again where today's config holds its secrets."""
    if isinstance(recorded, str) and isinstance(current, str):
        return current if recorded != current and redact(current) == recorded else recorded
    if isinstance(recorded, dict) and isinstance(current, dict):
        return {k: unredacted(v, current.get(k)) for k, v in recorded.items()}
    if isinstance(recorded, list) and isinstance(current, list) and len(recorded) == len(current):
        return [unredacted(a, b) for a, b in zip(recorded, current, strict=True)]
    return recorded


def credentials_in(url: str) -> bool:
    """Whether ``url`` names a user or a password before its host (``scheme://…@``), in
    any case of the scheme."""
    return bool(_CREDENTIAL_URL.match(url))


def register(*values: str | None) -> None:
    """Make these values secrets :func:`redact` masks (with their URL-encoded form and the
    ``x-access-token`` Basic header git pushes with); short or empty ones are ignored."""
    global _known
    added: set[str] = set()
    for value in values:
        if value and len(value) >= MIN_SECRET:
            added |= {value, quote(value, safe=""),
                      base64.b64encode(f"x-access-token:{value}".encode()).decode()}
    with _lock:
        _known = tuple(sorted(set(_known) | added, key=lambda v: (-len(v), v)))


def register_environment(environ: Mapping[str, str], names: Iterable[str]) -> None:
    """:func:`register` the values of the variables ``names`` that ``environ`` sets."""
    register(*(environ.get(name) for name in names))


@contextmanager
def registered(*values: str) -> Iterator[None]:
    """A block within which ``values`` are registered too; the registry is as it was when
    the block ends (for tests and short-lived secrets)."""
    global _known
    with _lock:
        before = _known
    register(*values)
    try:
        yield
    finally:
        with _lock:
            _known = before
