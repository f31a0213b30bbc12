"""Workflows: the graphs that run the porting cycle, and :func:`open_run`, the one way a run
is opened (store, manifest, rules, budget, model client, sandbox)."""

from portwright.workflows.context import RunContext, new_run_id, open_run

__all__ = ["RunContext", "new_run_id", "open_run"]
