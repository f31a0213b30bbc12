"""What ``portwright eval`` records and concludes: one :class:`TaskResult` per task and mode,
an :class:`EvalReport` per mode with its :class:`Aggregate` (resolve rate with a 95 % Wilson
score interval), and a :class:`Comparison` of two reports (tasks paired by id, McNemar's
exact test on the discordant pairs). See ``docs/eval.md``, "Results".
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field, model_validator

from portwright.config import ModelBudget

Z95 = 1.959963984540054
"""The standard normal quantile at 0.975: a two-sided 95 % interval."""


class Mode(StrEnum):
    """How a task was run."""

    CYCLE = "cycle"
    """The port-cycle graph (``portwright run``), approvals off."""
    LOOP = "loop"
    """The baseline: one agent with the implementer's tools, no checks between."""


class Failure(StrEnum):
    """Why a task ended unresolved (the first cause that applies, in this order)."""

    BUDGET = "budget"
    """Tokens, cost, calls or wall time ran out."""
    BOUND = "bound"
    """A loop bound of the cycle was reached (attempts, rounds of review)."""
    GATE = "gate"
    """A gate did not pass and the run ended blocked."""
    REVIEW = "review"
    """The reviewer did not approve."""
    HIDDEN_TESTS = "hidden_tests"
    """The run finished, but a hidden test failed or a regress test newly failed."""
    INTEGRITY = "integrity"
    """The agent's diff touched protected paths or tampered with the checks."""
    ERROR = "error"
    """The harness or the run broke (sandbox, model endpoint, a crash)."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True,
                              allow_inf_nan=False)


class TaskResult(_Model):
    """One task in one mode: ``results/<task-id>.<mode>.json`` in the output folder."""

    task: str = Field(min_length=1)
    """The task's id in the suite."""
    mode: Mode
    """``cycle`` or ``loop``."""
    model: str
    """The model the agents used."""
    resolved: bool
    """Every hidden test passes, no regress test newly fails, the integrity checks pass."""
    hidden_passed: list[str] = Field(default_factory=list)
    """Hidden test ids that passed on the tree the run left."""
    hidden_failed: list[str] = Field(default_factory=list)
    """Hidden test ids that failed (or did not appear in the output)."""
    regressions: list[str] = Field(default_factory=list)
    """Regress test ids that passed at ``parent`` and fail now."""
    red_observed: bool | None = None
    """Cycle: the framework saw the ported tests fail before the implementation. Loop:
    null."""
    gates_passed: bool | None = None
    """Cycle: every ``full`` gate passed. Loop: null."""
    # the reviewer's own words (portwright.agents.results.ReviewVerdict.decision)
    review: Literal["approve", "changes_requested"] | None = None
    """Cycle: the reviewer's verdict, when a review ran. Loop: null."""
    tokens_in: int = Field(default=0, ge=0)
    """Prompt tokens, summed over every model call of the task."""
    tokens_out: int = Field(default=0, ge=0)
    """Completion tokens, summed likewise."""
    cost_usd: float = Field(default=0.0, ge=0)
    """Cost in US dollars, from the price table (0 when the model has no price)."""
    calls: int = Field(default=0, ge=0)
    """Model calls, failed and unparseable ones included."""
    wall_seconds: float = Field(default=0.0, ge=0)
    """The task's wall time, harness included (workspace, sandbox, hidden tests)."""
    failure: Failure | None = None
    """Why the task is unresolved; null when resolved."""
    detail: str = ""
    """One line: why."""

    @model_validator(mode="after")
    def _consistent(self) -> TaskResult:
        if self.resolved and self.failure is not None:
            raise ValueError(f"a resolved task has no failure (got {self.failure.value!r})")
        if not self.resolved and self.failure is None:
            raise ValueError("an unresolved task needs a failure: "
                             + ", ".join(f.value for f in Failure))
        if self.mode is Mode.LOOP:
            cycle_only = [name for name in ("red_observed", "gates_passed", "review")
                          if getattr(self, name) is not None]
            if cycle_only:
                raise ValueError(f"{', '.join(cycle_only)}: cycle only, null in loop mode")
        return self


class Aggregate(_Model):
    """What a set of results adds up to."""

    tasks: int
    """Results counted."""
    resolved: int
    """Of which resolved."""
    resolve_rate: float | None
    """``resolved / tasks``; null without tasks."""
    resolve_low: float
    """Lower end of the 95 % Wilson score interval of the resolve rate."""
    resolve_high: float
    """Upper end of that interval."""
    cost_usd: float
    """Total cost of every task, resolved or not."""
    tokens_in: int
    """Total prompt tokens."""
    tokens_out: int
    """Total completion tokens."""
    cost_per_resolved: float | None
    """Total cost divided by the tasks resolved (what one resolved task costs, failures
    paid for); null when nothing resolved."""
    tokens_in_per_resolved: float | None
    """Total prompt tokens per resolved task; null when nothing resolved."""
    tokens_out_per_resolved: float | None
    """Total completion tokens per resolved task; null when nothing resolved."""
    wall_seconds: float
    """Total wall time."""
    median_wall_seconds: float | None
    """Median wall time of a task; null without tasks."""
    failures: dict[Failure, int]
    """Unresolved tasks per failure class (every class, zeros included)."""
    red_observed: int
    """Tasks where the framework saw the ported tests fail first (cycle)."""


class EvalReport(_Model):
    """One mode's run over a suite: ``report.json`` in the output folder."""

    suite: str
    """The suite's name (its folder or file)."""
    mode: Mode
    """The mode of every result."""
    model: str
    """The model the agents used."""
    budget: ModelBudget
    """The budget each task had."""
    results: list[TaskResult] = Field(default_factory=list)
    """One per task, in suite order."""

    @model_validator(mode="before")
    @classmethod
    def _derived(cls, data: Any) -> Any:
        # ``aggregate`` is written for readers and computed again on load: a report is
        # never trusted to add up its own results
        if isinstance(data, dict) and "aggregate" in data:
            data = {k: v for k, v in data.items() if k != "aggregate"}
        return data

    @model_validator(mode="after")
    def _one_mode_each_task_once(self) -> EvalReport:
        seen: set[str] = set()
        for result in self.results:
            if result.mode is not self.mode:
                raise ValueError(f"task {result.task!r} ran in {result.mode.value} mode, the "
                                 f"report is {self.mode.value}")
            if result.task in seen:
                raise ValueError(f"task {result.task!r} appears twice")
            seen.add(result.task)
        return self

    @computed_field  # type: ignore[prop-decorator]
    @property
    def aggregate(self) -> Aggregate:
        """The results added up (see :func:`aggregate`)."""
        return aggregate(self.results)


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of ``successes`` out of ``n`` (95 % by default)."""
    raise NotImplementedError


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided p of McNemar's exact test on ``b`` and ``c`` discordant pairs."""
    raise NotImplementedError


def aggregate(results: list[TaskResult]) -> Aggregate:
    """Add ``results`` up."""
    raise NotImplementedError
