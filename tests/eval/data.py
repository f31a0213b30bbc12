"""Reports built from :class:`TaskResult` models, shared by the eval tests and the golden
regeneration script: a cycle and a loop run of a small suite whose tasks do not all
overlap."""

from __future__ import annotations

from typing import Any

from portwright.config import ModelBudget
from portwright.eval.results import EvalReport, Failure, Mode, TaskResult


def result(task: str, mode: Mode, resolved: bool, failure: Failure | None = None,
           **fields: Any) -> TaskResult:
    base: dict[str, Any] = {"tokens_in": 10_000, "tokens_out": 1_000, "cost_usd": 0.25,
                            "calls": 12, "wall_seconds": 60.0}
    if mode is Mode.CYCLE:
        base |= {"red_observed": resolved, "gates_passed": resolved,
                 "review": "approve" if resolved else None}
    return TaskResult.model_validate({
        "task": task, "mode": mode, "model": "small-model", "resolved": resolved,
        "failure": failure, **base, **fields})


def cycle_report() -> EvalReport:
    """Five tasks: three resolved, a gate failure, a budget failure."""
    results = [
        result("pair/alpha", Mode.CYCLE, True, hidden_passed=["t::alpha"],
               wall_seconds=120.0),
        result("pair/beta", Mode.CYCLE, True, tokens_in=20_000, cost_usd=0.5),
        result("pair/gamma", Mode.CYCLE, False, Failure.GATE, red_observed=True,
               detail="gate full/tests failed: 2 tests | exit 1"),
        result("pair/delta", Mode.CYCLE, True, wall_seconds=30.0),
        result("pair/only-cycle", Mode.CYCLE, False, Failure.BUDGET,
               detail="budget exhausted: run tokens used 2e+06 of 2e+06"),
    ]
    return EvalReport(suite="port-tasks", mode=Mode.CYCLE, model="small-model",
                      budget=ModelBudget(), results=results)


def loop_report() -> EvalReport:
    """Five tasks, four shared with the cycle run: one resolved."""
    results = [
        result("pair/alpha", Mode.LOOP, True, hidden_passed=["t::alpha"]),
        result("pair/beta", Mode.LOOP, False, Failure.HIDDEN_TESTS,
               hidden_failed=["t::beta"], detail="1 hidden test failed"),
        result("pair/gamma", Mode.LOOP, False, Failure.INTEGRITY,
               detail="edited tests/conftest.py (protected)"),
        result("pair/delta", Mode.LOOP, False, Failure.HIDDEN_TESTS),
        result("pair/only-loop", Mode.LOOP, False, Failure.ERROR, detail="sandbox died"),
    ]
    return EvalReport(suite="port-tasks", mode=Mode.LOOP, model="small-model",
                      budget=ModelBudget(), results=results)
