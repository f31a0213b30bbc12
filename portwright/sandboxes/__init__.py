"""Sandboxes: where every build, test and agent command runs."""

from portwright.sandboxes.base import ExecResult, Sandbox

__all__ = ["ExecResult", "Sandbox"]
