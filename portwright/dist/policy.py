"""What a worker takes from a workflow's input, and what only from its own command line.

Anyone who can reach the Temporal frontend can start a workflow or send it input, so a
worker treats its input as untrusted. What decides isolation and where secrets go is the
worker's own: the project it serves (its ``-C``), whether runs may use the unisolated
``local`` backend (``portwright worker --allow-local``), and the sandbox, model endpoint,
upstream and service settings (its committed ``portwright.toml``). Input that asks for any
of them otherwise is refused, naming what and why, and is not retried.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from temporalio.exceptions import ApplicationError

WORKER_ONLY = ("sandbox.", "model.base_url", "model.api_key_env", "model.headers",
               "upstream.", "temporal.", "runs.", "pr.")
"""Override keys a workflow's input may not set: isolation, endpoints, secrets' names, the
upstream the sandbox mounts, the service and the run store."""
INPUT_MAY = frozenset({"sandbox.backend"})
"""Of those, what a command's options may still choose (``--sandbox docker|bwrap``): each
isolates, and ``local`` needs the worker's own ``--allow-local`` besides."""


@dataclass(frozen=True)
class WorkerPolicy:
    """The worker's own answers (set when it starts)."""

    roots: tuple[Path, ...] = ()
    """The project it serves, as its checkout and its main worktree (empty: a process that
    is no worker, such as a test calling an activity's body, where only the other checks
    apply)."""
    allow_local: bool = False
    """Whether runs may use the unisolated ``local`` backend."""


_POLICY = WorkerPolicy()


def set_policy(policy: WorkerPolicy) -> None:
    """What this worker process takes from its command line (``portwright worker``)."""
    global _POLICY
    _POLICY = policy


def check_input(root: str, allow_local: bool, overrides: dict[str, str]) -> None:
    """Raise a non-retryable :class:`ApplicationError` for input that asks for what only
    the worker decides."""
    refused: list[str] = []
    if _POLICY.roots and Path(root).resolve() not in {p.resolve() for p in _POLICY.roots}:
        refused.append(f"the project {root} (this worker serves {_POLICY.roots[0]})")
    if allow_local and not _POLICY.allow_local:
        refused.append("allow_local (start the worker with `portwright worker --allow-local` "
                       "to let its runs use the unisolated local backend)")
    refused += [f"the setting {key!r} (the worker's own portwright.toml decides it)"
                for key in sorted(overrides)
                if key.startswith(WORKER_ONLY) and key not in INPUT_MAY]
    if refused:
        raise ApplicationError("the workflow's input asks for what only the worker decides: "
                               + "; ".join(refused), type="InputRefused", non_retryable=True)
