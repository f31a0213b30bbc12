"""Shared CLI plumbing: consoles, the selected repo, JSON output."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

if TYPE_CHECKING:
    from portwright.config import PortwrightConfig
    from portwright.project import Project

console = Console(highlight=False, emoji=False)
# warnings and errors are not wrapped: a phrase or a path broken at 80 columns (off a
# terminal) cannot be grepped in a log
err_console = Console(stderr=True, highlight=False, emoji=False, soft_wrap=True)


@dataclass
class _State:
    repo: Path = field(default_factory=lambda: Path().resolve())


STATE = _State()


def repo_path() -> Path:
    return STATE.repo


def config() -> PortwrightConfig:
    return project().config


def project(*, committed: bool = False) -> Project:
    """The selected repository as a :class:`~portwright.project.Project`: its working
    config, or (``committed``) config and rules as committed at HEAD, which is what a
    command that runs code obeys. Warns when the working copies differ from the commit."""
    from portwright.project import Project

    loaded = Project.load(STATE.repo, at="HEAD" if committed else None)
    drift = loaded.drift()
    if drift:
        err_console.print(f"warning: {', '.join(drift)} differ from HEAD; this run obeys the "
                          "committed version (commit your edits to use them)", markup=False)
    return loaded


def revision(repo: Path, rev: str, option: str) -> str:
    """The commit sha ``rev`` (given with ``option``) names in ``repo``; the error names the
    option."""
    from portwright.errors import RevisionError
    from portwright.vcs.plumbing import rev_parse

    try:
        return rev_parse(repo, rev)
    except RevisionError as exc:
        raise RevisionError(exc.message, file=exc.file, key=option, fix=exc.fix) from exc


def emit_json(payload: Any) -> None:
    """Print ``payload`` (pydantic models welcome) as JSON on stdout, redacted."""
    from portwright.redact import redact_data

    print(json.dumps(redact_data(_plain(payload)), indent=2, sort_keys=False, default=str))


def _plain(value: Any) -> Any:
    # no model exists before pydantic is imported: a command that made none never pays for
    # the import (``--help``, ``--version`` and the light commands answer sooner)
    pydantic = sys.modules.get("pydantic")
    if pydantic is not None and isinstance(value, pydantic.BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


def override_keys(model: str | None, sandbox: str | None,
                  approve: str | None) -> dict[str, str]:
    """The config settings ``--model``, ``--sandbox`` and ``--approve`` change, as
    ``section.key`` → value; a value no run can use is refused (exit 2)."""
    from portwright.errors import UsageError
    from portwright.workflows.approvals import approve_keys

    if approve not in (None, "auto", "ask"):
        raise UsageError(f"--approve {approve!r}", key="--approve", fix="use auto or ask")
    if sandbox not in (None, "auto", "docker", "bwrap", "local"):
        raise UsageError(f"--sandbox {sandbox!r}", key="--sandbox",
                         fix="use auto, docker, bwrap or local")
    keys: dict[str, str] = {}
    if model:
        keys["model.name"] = model
    if sandbox:
        keys["sandbox.backend"] = sandbox
    if approve == "auto":
        keys.update(approve_keys("auto"))
    elif approve == "ask":
        keys.update(approve_keys("ask"))
    return keys


def export_overrides(keys: dict[str, str]) -> None:
    """``override_keys`` as ``PORTWRIGHT_*`` variables of this process: every project loaded
    from now on (a run's, a sync's and each of its port runs', read from their base commit)
    gets them, and each run records the config it started with (``run.json``), which its
    resumes use."""
    from portwright.environment import override_environ

    os.environ.update(override_environ(keys))


def check_options(proj: Project, overrides: dict[str, str]) -> None:
    """Refuse run options whose values the config does not accept, before anything
    starts."""
    from portwright.config import apply_overrides

    apply_overrides(proj.config, overrides)


def base_build_line(event: dict[str, Any]) -> str:
    """A ``base_build`` progress event, as one line."""
    if not event.get("ok"):
        return (f"base build failed (exit {event.get('exit_code')}): gate phases build from "
                f"scratch; its log: {event.get('log')}")
    if event.get("reused"):
        return f"base build reused ({event.get('files')} files)"
    return f"base build: {event.get('files')} files, {event.get('seconds', 0):.1f} s"
