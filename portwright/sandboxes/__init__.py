"""Sandboxes: where every build, test and agent command runs.

Backends: :class:`DockerSandbox` (a real engine, one container per run),
:class:`BwrapSandbox` (bubblewrap namespaces, no engine), :class:`LocalSandbox`
(a plain subprocess; not isolation). :func:`open_sandbox` picks one from config.
"""

from portwright.sandboxes.base import ExecResult, Sandbox
from portwright.sandboxes.local import LocalSandbox
from portwright.sandboxes.output import read_log
from portwright.sandboxes.selection import Selection, open_sandbox, select_backend

__all__ = [
    "ExecResult",
    "LocalSandbox",
    "Sandbox",
    "Selection",
    "open_sandbox",
    "read_log",
    "select_backend",
]
