"""What ``portwright eval`` records and concludes: one :class:`TaskResult` per task and mode,
an :class:`EvalReport` per mode with its :class:`Aggregate` (resolve rate with a 95 % Wilson
score interval), and a :class:`Comparison` of two reports (tasks paired by id, McNemar's
exact test on the discordant pairs). See ``docs/eval.md``, "Results".
"""

from __future__ import annotations

import json
import math
import statistics
from collections import Counter
from enum import StrEnum
from fractions import Fraction
from itertools import pairwise
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    ValidationError,
    computed_field,
    model_validator,
)

from portwright.config import ModelBudget
from portwright.errors import UsageError

Z95 = 1.959963984540054
"""The standard normal quantile at 0.975: a two-sided 95 % interval."""


class Mode(StrEnum):
    """How a task was run."""

    CYCLE = "cycle"
    """The port-cycle graph (``portwright run``), approvals off."""
    LOOP = "loop"
    """The baseline: one agent with the implementer's tools, no checks between."""


class Failure(StrEnum):
    """Why a task ended unresolved."""

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
    resolved: StrictBool
    """Every hidden test passes, no regress test newly fails, the integrity checks pass."""
    hidden_passed: list[str] = Field(default_factory=list)
    """Hidden test ids that passed on the tree the run left."""
    hidden_failed: list[str] = Field(default_factory=list)
    """Hidden test ids that failed (or did not appear in the output)."""
    regressions: list[str] = Field(default_factory=list)
    """Regress test ids that passed at ``parent`` and fail now."""
    red_observed: StrictBool | None = None
    """Cycle: the framework saw the ported tests fail before the implementation. Loop:
    null."""
    gates_passed: StrictBool | None = None
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


class HarnessError(_Model):
    """A task the harness, not the agent, stopped: its cassette stopped matching the run's
    requests. Kept as ``runs/<mode>/<slug>/harness-error.json`` in the output folder, never
    as a result: the task counts nowhere, and a rerun runs it again from scratch."""

    task: str = Field(min_length=1)
    """The task's id."""
    mode: Mode
    """The mode it ran in."""
    cassette: str
    """The cassette it was replayed from."""
    request: int | None = None
    """The number (from 1) of the request the cassette did not hold (its line)."""
    what: str
    """What went wrong with it: ``request 3 differs from the recorded one (message 3
    (tool) changed: …)``."""

    def describe(self) -> str:
        """One line: which cassette, which request, what differs."""
        where = f"{self.cassette}:{self.request}" if self.request else self.cassette
        return f"harness error: the cassette stopped matching the run at {where}: {self.what}"


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
    budget: ModelBudget | None
    """The budget each task had; null in a report put together from result files alone
    (``eval report`` on an unfinished run)."""
    results: list[TaskResult] = Field(default_factory=list)
    """One per task, in suite order."""
    missing: dict[str, str] = Field(default_factory=dict)
    """Tasks of the suite without a result in this mode, each with why: dropped as
    invalid, stopped by a harness error (a cassette that stopped matching: a rerun runs it
    again), or not run yet. Counted nowhere in the aggregate."""

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
        both = sorted(seen & set(self.missing))
        if both:
            raise ValueError(f"task {both[0]!r} has a result and is listed as missing")
        return self

    @computed_field  # type: ignore[prop-decorator]
    @property
    def aggregate(self) -> Aggregate:
        """The results added up (see :func:`aggregate`)."""
        return aggregate(self.results)


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of ``successes`` out of ``n`` (95 % by default); without
    trials, all of ``[0, 1]``."""
    if not 0 <= successes <= n:
        raise ValueError(f"successes must lie in 0..{n}, not {successes}")
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    scale = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / scale
    half = z / scale * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    # the ends at 0 and n are exact in theory; keep rounding from moving them
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided p of McNemar's exact test on ``b`` and ``c`` discordant pairs: the
    binomial test of ``min(b, c)`` out of ``b + c`` at one half, doubled and capped at 1.
    Computed in exact fractions."""
    n = b + c
    tail = Fraction(sum(math.comb(n, i) for i in range(min(b, c) + 1)), 2 ** n)
    return float(min(Fraction(1), 2 * tail))


def aggregate(results: list[TaskResult]) -> Aggregate:
    """Add ``results`` up."""
    tasks = len(results)
    resolved = sum(r.resolved for r in results)
    low, high = wilson(resolved, tasks)
    cost = math.fsum(r.cost_usd for r in results)
    tokens_in = sum(r.tokens_in for r in results)
    tokens_out = sum(r.tokens_out for r in results)
    failures = Counter(r.failure for r in results if r.failure is not None)
    return Aggregate(
        tasks=tasks, resolved=resolved, resolve_rate=resolved / tasks if tasks else None,
        resolve_low=low, resolve_high=high, cost_usd=cost, tokens_in=tokens_in,
        tokens_out=tokens_out,
        cost_per_resolved=cost / resolved if resolved else None,
        tokens_in_per_resolved=tokens_in / resolved if resolved else None,
        tokens_out_per_resolved=tokens_out / resolved if resolved else None,
        wall_seconds=math.fsum(r.wall_seconds for r in results),
        median_wall_seconds=statistics.median(r.wall_seconds for r in results)
        if results else None,
        failures={f: failures[f] for f in Failure},
        red_observed=sum(r.red_observed is True for r in results))


class Side(_Model):
    """One report in a comparison."""

    label: str
    """How the tables and the chart name it."""
    suite: str
    """The report's suite."""
    mode: Mode
    """The report's mode."""
    model: str
    """The report's model."""
    aggregate: Aggregate
    """Its results on the paired tasks only."""


class Pair(_Model):
    """One task both reports hold."""

    task: str
    """The task's id."""
    a: TaskResult
    """Its result in the first report."""
    b: TaskResult
    """Its result in the second."""


class Concordance(_Model):
    """The two-by-two table of the paired tasks."""

    both: int
    """Resolved by both."""
    a_only: int
    """Resolved by the first only (a discordant pair)."""
    b_only: int
    """Resolved by the second only (a discordant pair)."""
    neither: int
    """Resolved by neither."""


class Comparison(_Model):
    """Two reports, task by task: ``compare.json``."""

    a: Side
    """The first report."""
    b: Side
    """The second report."""
    pairs: list[Pair]
    """The tasks both hold, in the first report's order."""
    only_a: list[str]
    """Tasks only the first report holds: listed, not counted."""
    only_b: list[str]
    """Tasks only the second report holds."""
    missing_a: list[str] = Field(default_factory=list)
    """Tasks the first report lists without a result (a harness error, dropped, not run):
    not counted."""
    missing_b: list[str] = Field(default_factory=list)
    """Tasks the second report lists without a result."""
    table: Concordance
    """Resolved / unresolved on each side, over the pairs."""
    p_value: float
    """McNemar's exact test, two-sided, on the discordant pairs."""
    reading: str
    """The result in one sentence."""


ALPHA = 0.05
"""The level at which a comparison calls a difference significant."""


def compare(a: EvalReport, b: EvalReport,
            labels: tuple[str, str] | None = None) -> Comparison:
    """Pair the tasks of ``a`` and ``b`` by id and test whether one side resolves more.

    ``labels`` name the sides; by default the modes, or the models when the modes agree,
    or ``A`` and ``B``."""
    theirs = {r.task: r for r in b.results}
    pairs = [Pair(task=r.task, a=r, b=theirs[r.task]) for r in a.results if r.task in theirs]
    paired = {p.task for p in pairs}
    table = Concordance(
        both=sum(p.a.resolved and p.b.resolved for p in pairs),
        a_only=sum(p.a.resolved and not p.b.resolved for p in pairs),
        b_only=sum(p.b.resolved and not p.a.resolved for p in pairs),
        neither=sum(not (p.a.resolved or p.b.resolved) for p in pairs))
    p_value = mcnemar_exact(table.a_only, table.b_only)
    name_a, name_b = labels or _labels(a, b)
    return Comparison(
        a=Side(label=name_a, suite=a.suite, mode=a.mode, model=a.model,
               aggregate=aggregate([p.a for p in pairs])),
        b=Side(label=name_b, suite=b.suite, mode=b.mode, model=b.model,
               aggregate=aggregate([p.b for p in pairs])),
        pairs=pairs, only_a=[r.task for r in a.results if r.task not in paired],
        only_b=[r.task for r in b.results if r.task not in paired],
        missing_a=list(a.missing), missing_b=list(b.missing),
        table=table, p_value=p_value, reading=_reading(table, p_value, name_a, name_b))


def p_text(p_value: float) -> str:
    """A p-value to four places (``< 0.0001`` below that)."""
    return "< 0.0001" if p_value < 0.0001 else f"{p_value:.4f}"


def _labels(a: EvalReport, b: EvalReport) -> tuple[str, str]:
    if a.mode is not b.mode:
        return a.mode.value, b.mode.value
    if a.model != b.model:
        return a.model, b.model
    return "A", "B"


def _reading(table: Concordance, p_value: float, name_a: str, name_b: str) -> str:
    n = table.both + table.a_only + table.b_only + table.neither
    if n == 0:
        return "no task in both reports: nothing to compare"
    split = (f"{table.a_only} tasks only {name_a} resolved, {table.b_only} only {name_b}"
             if table.a_only + table.b_only else "both resolved the same tasks")
    if p_value >= ALPHA:
        return f"no significant difference at n={n}: {split}"
    ahead = name_a if table.a_only > table.b_only else name_b
    return f"{ahead} resolves more at n={n}: {split} (significant at the 5 % level)"


# reading reports from files

_Loaded = TypeVar("_Loaded", bound=BaseModel)

REPORT_FIX = "pass a report.json that `portwright eval run` wrote, or its output folder"
AGAIN = "or write the report again with `portwright eval run`"


def read_report(path: Path, mode: Mode | None = None) -> EvalReport:
    """The report at ``path``: a report file, or an output folder of ``eval run`` (its
    ``report*.json`` of ``mode``, or without one its ``results/`` files put together).

    Raises :class:`UsageError` naming the file (and line, and key) and the fix."""
    if path.is_dir():
        return _from_folder(path, mode)
    report = _load(path, EvalReport, "a report")
    if mode is not None and report.mode is not mode:
        raise UsageError(f"a {report.mode.value} report, not {mode.value}", file=path,
                         key="--mode", fix=f"pass --mode {report.mode.value}, or another file")
    return report


def _from_folder(folder: Path, mode: Mode | None) -> EvalReport:
    found = [r for r in (_load(p, EvalReport, "a report")
                         for p in sorted(folder.glob("report*.json")))
             if mode is None or r.mode is mode]
    if len(found) > 1:
        raise UsageError(f"{len(found)} reports in the folder", file=folder, key="--mode",
                         fix="pass --mode cycle or --mode loop, or one report file")
    if found:
        return found[0]
    results_dir = folder / "results" if (folder / "results").is_dir() else folder
    results = [_load(p, TaskResult, "a task's result")
               for p in sorted(results_dir.rglob("*.json"))]
    modes = sorted({r.mode for r in results} if mode is None else {mode})
    if not results:
        raise UsageError("no report.json and no results/*.json in the folder", file=folder,
                         fix=REPORT_FIX)
    if len(modes) > 1:
        raise UsageError("the results hold both modes and there is no report.json",
                         file=folder, key="--mode", fix="pass --mode cycle or --mode loop")
    chosen = sorted((r for r in results if r.mode is modes[0]), key=lambda r: r.task)
    twice = [a.task for a, b in pairwise(chosen) if a.task == b.task]
    if twice:
        raise UsageError(f"task {twice[0]!r} has more than one {modes[0].value} result",
                         file=results_dir, fix="keep one result file per task and mode")
    return EvalReport(suite=folder.name, mode=modes[0],
                      model=", ".join(sorted({r.model for r in chosen})), budget=None,
                      results=chosen)


def _load(path: Path, model: type[_Loaded], what: str) -> _Loaded:
    """``path`` read as ``model``, or a :class:`UsageError` saying where and what to do."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise UsageError("no such file", file=path, fix=REPORT_FIX) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read it: {exc}", file=path, fix=REPORT_FIX) from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"not JSON: {exc.msg} (column {exc.colno})", file=path,
                         line=exc.lineno, fix=f"mend the JSON at that line, {AGAIN}") from exc
    except RecursionError as exc:
        raise UsageError("not a report: its JSON nests arrays or objects thousands deep",
                         file=path, fix=REPORT_FIX) from exc
    if model is EvalReport and isinstance(data, dict) and "task" in data:
        raise UsageError("one task's result, not a report", file=path,
                         fix="pass the output folder (its results are put together), or its "
                             "report.json")
    if not isinstance(data, dict) or not set(data) & set(model.model_fields):
        raise UsageError(f"not {what} of `portwright eval run`", file=path,
                         fix=REPORT_FIX)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        key = ".".join(str(part) for part in error["loc"]) or None
        given = (f" (given {_short(error['input'])})" if error["type"] != "missing" and key
                 else "")
        more = f"; {exc.error_count() - 1} more" if exc.error_count() > 1 else ""
        message = error["msg"]
        if error["type"] == "extra_forbidden":
            message = (f"unknown key {key!r}: not {what} of this version of portwright "
                       "(written by another version, or edited)")
            given = ""
        raise UsageError(f"{message}{given}{more}", file=path, key=key,
                         fix=f"correct {key or 'the file'} (docs/eval.md, Results), {AGAIN}"
                         ) from exc


def _short(value: object, width: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= width else text[:width - 1] + "…"
