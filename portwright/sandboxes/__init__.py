"""Sandboxes: where every build, test and agent command runs.

Backends: :class:`DockerSandbox` (a real engine, one container per run),
:class:`BwrapSandbox` (bubblewrap namespaces, no engine), :class:`LocalSandbox`
(a plain subprocess; not isolation). :func:`open_sandbox` picks one from config.
Images: :func:`ensure_image`, :func:`build_base_image`; leftovers: :func:`prune`
(:mod:`portwright.sandboxes.prune`).
The Docker-backed names are imported on first use (the docker SDK is not loaded
until then).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from portwright.sandboxes.base import ExecResult, Sandbox
from portwright.sandboxes.local import LocalSandbox
from portwright.sandboxes.output import read_log
from portwright.sandboxes.selection import Selection, open_sandbox, select_backend

if TYPE_CHECKING:
    from portwright.sandboxes.bwrap import BwrapSandbox
    from portwright.sandboxes.docker import DockerSandbox
    from portwright.sandboxes.images import build_base_image, ensure_image
    from portwright.sandboxes.prune import prune

_LAZY = {
    "BwrapSandbox": "portwright.sandboxes.bwrap",
    "DockerSandbox": "portwright.sandboxes.docker",
    "build_base_image": "portwright.sandboxes.images",
    "ensure_image": "portwright.sandboxes.images",
    "prune": "portwright.sandboxes.prune",
}

__all__ = [
    "BwrapSandbox",
    "DockerSandbox",
    "ExecResult",
    "LocalSandbox",
    "Sandbox",
    "Selection",
    "build_base_image",
    "ensure_image",
    "open_sandbox",
    "prune",
    "read_log",
    "select_backend",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
