"""The ``portwright`` command: the only place that prints or configures logging.

Each module here registers the commands of one room on the shared app.
Exit codes: 0 ok, 1 a check failed (gates, anchors, doctor), 2 bad input.
"""

from portwright.cli import (
    agents,
    core,
    dist,
    evidence,
    gates,
    parity,
    runs,
    sandbox,
    sync,
    web,
)
from portwright.cli import eval as eval_commands  # not `eval`: the builtin
from portwright.cli.app import app, main

for _module in (core, sandbox, parity, gates, evidence, agents, runs, sync, web, dist,
                eval_commands):
    _module.register(app)

__all__ = ["app", "main"]
