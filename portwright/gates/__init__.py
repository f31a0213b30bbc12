"""Gates: the checks that must pass before a phase ends.

A gate is a command from ``AGENTS.md`` run in the sandbox, or a built-in check the framework
runs itself (:mod:`portwright.gates.checks`). :func:`run_gates` runs the gates of a phase and
records each outcome as evidence.
"""

from portwright.gates.models import GateResult
from portwright.gates.runner import GateContext, require_passed, run_command, run_gate, run_gates

__all__ = ["GateContext", "GateResult", "require_passed", "run_command", "run_gate", "run_gates"]
