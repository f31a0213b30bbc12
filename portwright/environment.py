"""The ``PORTWRIGHT_*`` environment variables.

Two kinds exist, and nothing else with the prefix is accepted:

- variables portwright reads itself (:data:`OWN`), and ``PORTWRIGHT_TEST_*`` for test
  suites;
- config overrides: ``PORTWRIGHT_<SECTION>__<KEY>`` sets ``[section] key`` of
  ``portwright.toml`` (``PORTWRIGHT_MODEL__NAME=qwen3``), nested keys joined with ``__``;
  a top-level key has no section (``PORTWRIGHT_STATE_DIR`` is ``state_dir``). Values are
  parsed as TOML when they parse, as plain strings otherwise.

An unknown name (``PORTWRIGHT_SNADBOX__MEMORY``, a typo in the section) is a
:class:`~portwright.errors.ConfigError` naming the variable, never silently ignored.
"""

from __future__ import annotations

import errno
import os
import tomllib
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from portwright.errors import ConfigError

PREFIX = "PORTWRIGHT_"
TEST_PREFIX = "PORTWRIGHT_TEST_"
"""Variables of test suites (``PORTWRIGHT_TEST_MODEL_URL``); portwright ignores them."""

OWN: dict[str, str] = {
    "PORTWRIGHT_EVIDENCE_KEY": "the evidence key file (an absolute path)",
    "PORTWRIGHT_REFUSE_REAL_MODELS": "refuse requests to real model endpoints (tests)",
    "PORTWRIGHT_REQUIRE_ENGINE": "a missing Docker engine or bubblewrap fails the tests",
    "PORTWRIGHT_HOME": "reserved",
    "PORTWRIGHT_REPO": "the downstream repository of a graph a LangGraph server drives "
                       "(`langgraph dev`)",
    "PORTWRIGHT_REPLAY": "the cassette such a graph plays the model from",
    "PORTWRIGHT_REAL_REPOS": "the folder of real repositories' clones (`<owner>/<name>`) the "
                             "benchmarks and the real-port tests read",
}
"""Variables portwright reads itself, with what each means."""


def variable(dotted: str) -> str:
    """The variable that sets ``section.key``: ``model.name`` → ``PORTWRIGHT_MODEL__NAME``."""
    return PREFIX + dotted.upper().replace(".", "__")


def where(name: str) -> str:
    """How errors name a variable (in place of a file)."""
    return f"environment variable {name}"


def overlay(data: dict[str, Any], environ: Mapping[str, str],
            sections: Collection[str]) -> dict[tuple[str, ...], str]:
    """Apply the config overrides of ``environ`` to the parsed ``data`` (whose top-level
    keys may be ``sections``); return the key path each override set → its variable."""
    sources: dict[tuple[str, ...], str] = {}
    for name, raw in sorted(environ.items()):
        if not name.startswith(PREFIX) or name in OWN or name.startswith(TEST_PREFIX):
            continue
        keys = _keys(name, sections)
        target = data
        for key in keys[:-1]:
            nested = target.setdefault(key, {})
            if not isinstance(nested, dict):
                raise ConfigError(
                    f"sets a key inside {'.'.join(keys[:keys.index(key) + 1])}, which "
                    "portwright.toml gives a plain value", file=where(name),
                    key=".".join(keys), fix=f"unset {name}, or make that key a table")
            target = nested
        target[keys[-1]] = _value(raw)
        sources[keys] = name
    return sources


def override_environ(keys: Mapping[str, str]) -> dict[str, str]:
    """Config keys (dotted) → values, as the ``PORTWRIGHT_*`` variables that set them."""
    return {variable(key): value for key, value in keys.items()}


def _keys(name: str, sections: Collection[str]) -> tuple[str, ...]:
    parts = name[len(PREFIX):].split("__")
    own = ", ".join(sorted(OWN))
    if not all(parts):
        raise ConfigError(
            "not a config override: an empty part between the `__` separators",
            file=where(name),
            fix=f"write PORTWRIGHT_<SECTION>__<KEY> (e.g. PORTWRIGHT_SANDBOX__MEMORY), or "
                f"unset {name}")
    keys = tuple(part.lower() for part in parts)
    if keys[0] not in sections:
        raise ConfigError(
            f"unknown variable: portwright.toml has no section or key {keys[0]!r}",
            file=where(name),
            fix=f"unset {name}, or correct it: PORTWRIGHT_<SECTION>__<KEY> with a section of "
                f"{', '.join(sorted(sections))}; portwright itself reads {own} and "
                "PORTWRIGHT_TEST_*")
    return keys


def _value(raw: str) -> Any:
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


STATE_ENV = "PORTWRIGHT_STATE_DIR"
"""Environment variable naming the state folder (it sets ``state_dir``)."""


def default_state_home(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_STATE_HOME/portwright``, else ``~/.local/state/portwright``."""
    env = os.environ if environ is None else environ
    xdg = env.get("XDG_STATE_HOME", "").strip()
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".local" / "state"
    return base / "portwright"


def state_home(environ: Mapping[str, str] | None = None) -> Path:
    """The state folder of a command that has no project's config to read (the validation
    store, the image logs, ``sandbox exec`` outside a repository): ``$PORTWRIGHT_STATE_DIR``
    when absolute, else :func:`default_state_home`."""
    env = os.environ if environ is None else environ
    configured = env.get(STATE_ENV, "").strip()
    if configured and Path(configured).is_absolute():
        return Path(configured)
    return default_state_home(env)


def private_folder(folder: Path) -> Path:
    """``folder``, made when missing with each missing folder above it at mode ``0700``
    whatever the umask (what XDG asks of the folders it names); a folder that exists is
    left as it is. Each folder that can be the first of portwright's state on a machine
    (a project's, the image logs', the validation store's, the evidence key's) is made
    through this: the evidence key refuses a folder others can reach, and its folder is the
    state folder's root, so a root some other command made at the umask's ``0755`` would
    stop every later run. Folders below those may be made with a plain ``mkdir``."""
    missing: list[Path] = []
    here = folder
    while not here.is_dir() and here.parent != here:
        missing.append(here)
        here = here.parent
    for path in reversed(missing):
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:
            if path.is_dir():  # made meanwhile by another process: left as it is
                continue
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR),
                                     str(path)) from None
        path.chmod(0o700)  # mkdir's mode is masked by the umask
    return folder
