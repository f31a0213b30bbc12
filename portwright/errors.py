"""The exceptions portwright raises, and what each one means for the caller.

::

    PortwrightError
    ├── UsageError                 bad input from a person: names the file, line/key and fix
    │   ├── ConfigError            portwright.toml (or a PORTWRIGHT_* variable)
    │   ├── RulesError             AGENTS.md and its gates block
    │   ├── ParityFileError        a matrix, ledger, inventory, spec or pin store
    │   ├── RevisionError          an upstream/downstream revision that does not resolve
    │   ├── RepositoryError        not a git repository, dirty tree, missing checkout
    │   ├── RunStateError          a file of the state folder portwright wrote no longer
    │   │                          reads (the SQLite checkpoint database, a run's run.json):
    │   │                          the file, what is lost, the fix (move it aside)
    │   └── PullRequestError       the forge (GitHub) or the push refused a pull request:
    │                              what it answered, the [pr] key or variable to change
    ├── ToolError                  a tool call the agent loop answers back to the model
    │   └── ConfinementError       a path that leaves the worktree / a write to upstream
    ├── UnsafePath                 a path in an untrusted tree the host will not open: a
    │                              link, `..`, not a regular file/directory, over its cap
    └── RunFailure                 a run cannot go on; it ends ``blocked`` with this reason
        ├── BudgetExhausted        tokens, cost, calls or wall time ran out
        ├── GateFailed             a gate did not pass
        ├── ModelError             the model endpoint failed after its retries, or
        │                          answered no chat completion: what it said, the fix
        ├── RateLimited            the forge's rate limit is spent: when it resets
        ├── TemporalUnavailable    the Temporal service does not answer: how to reach one
        ├── CheckpointUnavailable  the checkpoint store does not answer (the Postgres of
        │                          [runs] checkpoint_url, an SQLite file it cannot open)
        ├── UnsafeChange           a step's commit would take a link, a nested repository
        │                          or a file that steers portwright or a toolchain
        └── SandboxError           the sandbox could not do what was asked
            ├── EngineUnavailable  no Docker engine / no bubblewrap: how to start one
            ├── ImageMissing       the sandbox image does not exist: how to build it
            └── SandboxDied        the container went away under a command

Exceptions are plain data: they format themselves and have no side effects.
Raise them ``from`` their cause. What one says is redacted (:mod:`portwright.redact`): an
endpoint that echoes a key, a URL with a password, never reaches a message, a state field
or a log through an exception.
"""

from __future__ import annotations

from pathlib import Path

from portwright.redact import redact


class PortwrightError(Exception):
    """Base of every error portwright raises on purpose."""

    def __str__(self) -> str:
        return redact(super().__str__())


class UsageError(PortwrightError):
    """Bad input from a person. The message names where, what, and how to fix it."""

    def __init__(
        self,
        message: str,
        *,
        file: Path | str | None = None,
        line: int | None = None,
        key: str | None = None,
        fix: str | None = None,
    ) -> None:
        self.message = message
        self.file = str(file) if file is not None else None
        self.line = line
        self.key = key
        self.fix = fix
        super().__init__(self.render())

    def render(self) -> str:
        where = ""
        if self.file is not None:
            where = self.file if self.line is None else f"{self.file}:{self.line}"
        head = f"{where}: " if where else ""
        key = f"[{self.key}] " if self.key else ""
        tail = f"\n  fix: {self.fix}" if self.fix else ""
        return redact(f"{head}{key}{self.message}{tail}")


class ConfigError(UsageError):
    """portwright.toml or a PORTWRIGHT_* environment variable is wrong."""


class RulesError(UsageError):
    """AGENTS.md (or its gates block) is wrong."""


class ParityFileError(UsageError):
    """A coverage matrix, ledger, inventory, spec or pin store is malformed."""


class RevisionError(UsageError):
    """A revision (sha, branch, tag) does not resolve in its repository."""


class RepositoryError(UsageError):
    """A repository is missing, not a git repository, or not in the state required."""


class RunStateError(UsageError):
    """A file of the state folder that portwright wrote no longer reads: the SQLite
    checkpoint database is damaged, a run's ``run.json`` is not a manifest. ``file`` names
    it; the message says what is lost, the fix how to go on (move it aside)."""


class PullRequestError(UsageError):
    """The forge refused to open or update a pull request, or to take its branch: a bad or
    missing token, a repository it cannot see, a base branch or reviewer it rejects. The
    message says what it answered (never the token); ``key`` names what to change."""


class ToolError(PortwrightError):
    """A tool call failed in a way the model can correct; answered back to it."""


class ConfinementError(ToolError):
    """A path leaves the run's worktree, or a write targets the read-only upstream."""


class UnsafePath(PortwrightError):
    """A path inside a tree sandboxed code can write that the host refuses to open: it goes
    through a symbolic link, up (``..``) or from ``/``, names something that is neither a
    regular file nor a directory, changed under the walk, or holds more than allowed.

    Raised by :mod:`portwright.safefs`; the agent tools answer it to the model as a
    :class:`ConfinementError`, other callers treat the file as untrustworthy."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path!r} {reason}")


class RunFailure(PortwrightError):
    """A run cannot go on. It ends ``blocked`` with this reason and its evidence."""


class BudgetExhausted(RunFailure):
    """A token, cost, call or wall-time budget ran out."""

    def __init__(self, budget: str, used: float, limit: float, scope: str = "run") -> None:
        self.budget = budget
        self.used = used
        self.limit = limit
        self.scope = scope
        super().__init__(f"budget exhausted: {scope} {budget} used {used:g} of {limit:g}")


class GateFailed(RunFailure):
    """A gate did not pass."""


class ModelError(RunFailure):
    """The model endpoint failed after its retries, or answered something that is no chat
    completion (a page that is not JSON, JSON cut off, no choices): the message names the
    endpoint and what it answered, the fix what to change or start."""

    def __init__(self, message: str, *, fix: str | None = None) -> None:
        self.message = message
        self.fix = fix
        super().__init__(message if fix is None else f"{message}\n  fix: {fix}")


class RateLimited(RunFailure):
    """The forge's rate limit is spent: the message says when it resets (or how long the
    forge asks to wait); the fix, how to try again."""

    def __init__(self, message: str, *, fix: str) -> None:
        self.message = message
        self.fix = fix
        super().__init__(f"{message}\n  fix: {fix}")


class TemporalUnavailable(RunFailure):
    """The Temporal service of ``[temporal]`` does not answer (``portwright[temporal]``)."""

    def __init__(self, message: str, *, fix: str | None = None) -> None:
        self.message = message
        self.fix = fix
        super().__init__(message if fix is None else f"{message}\n  fix: {fix}")


class CheckpointUnavailable(RunFailure):
    """The checkpoint store does not answer: the Postgres server of ``[runs]
    checkpoint_url`` is down or out of reach, or the SQLite file in the state folder
    cannot be opened. A store that answers and refuses (a wrong password, no such
    database) is a :class:`ConfigError` naming the setting instead."""

    def __init__(self, message: str, *, fix: str) -> None:
        self.message = message
        self.fix = fix
        super().__init__(f"{message}\n  fix: {fix}")


class UnsafeChange(RunFailure):
    """A step's commit would take what no step may change: the paths, why, and the fix."""

    def __init__(self, problems: list[str], *, fix: str) -> None:
        self.problems = problems
        self.fix = fix
        super().__init__(self.render())

    def render(self) -> str:
        listed = "; ".join(self.problems[:8]) + (
            f"; and {len(self.problems) - 8} more" if len(self.problems) > 8 else "")
        return f"the step's commit is refused: {listed}\n  fix: {self.fix}"


class SandboxError(RunFailure):
    """The sandbox could not do what was asked."""

    def __init__(self, message: str, *, fix: str | None = None) -> None:
        self.message = message
        self.fix = fix
        super().__init__(message if fix is None else f"{message}\n  fix: {fix}")


class EngineUnavailable(SandboxError):
    """No Docker engine answers (or bubblewrap is missing)."""


class ImageMissing(SandboxError):
    """The sandbox image does not exist locally."""


class SandboxDied(SandboxError):
    """The sandbox container stopped or vanished while in use."""
