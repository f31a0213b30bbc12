"""The agent loop: bounded steps of model call → tool calls → answers, to a structured result.

Nothing the model sends can crash the loop or make it endless:

- a reply that is neither a tool call nor a valid result, invalid JSON, an unknown tool,
  or arguments that break the schema is answered to the model as an error and counted
  (in the outcome and in the budget);
- the same call answered the same way ``repeat_limit`` times is stopped as ``stuck``;
- the budget is checked before every call; exhausting it ends the turn
  ``budget_exhausted``; so does reaching ``max_steps`` (``step_limit``);
- every exchange is written to the :class:`~portwright.agents.transcript.Transcript`.

The result comes through a ``submit_result`` tool (or another name the caller gives, e.g.
``done``) whose arguments are the role's result model (tool calling is what every Chat
Completions server shares); a plain reply that is the result as JSON is accepted too.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Generic, TypeVar

from pydantic import BaseModel, ValidationError

from portwright.agents.budget import RoleBudget, Spent
from portwright.agents.llm import (
    Completion,
    CompletionRequest,
    LLMClient,
    Message,
    ResponseSchema,
    ToolCall,
    ToolSpec,
    Usage,
)
from portwright.agents.offline import CassetteMismatch
from portwright.agents.tools import InvalidToolCall, Toolbox
from portwright.agents.transcript import Transcript
from portwright.errors import BudgetExhausted, ModelError, RunFailure, ToolError

logger = logging.getLogger(__name__)

R = TypeVar("R", bound=BaseModel)

SUBMIT = "submit_result"


class Status(StrEnum):
    """How an agent turn ended."""

    DONE = "done"
    BUDGET_EXHAUSTED = "budget_exhausted"
    STEP_LIMIT = "step_limit"
    STUCK = "stuck"
    MODEL_ERROR = "model_error"
    FAILED = "failed"
    """A tool hit a run failure (the sandbox died, …)."""


class AgentStuck(RunFailure):
    """The model repeated the same call without progress, or ran out of steps."""


@dataclass
class AgentOutcome(Generic[R]):
    """What one agent turn produced."""

    role: str
    status: Status
    reason: str
    result: R | None
    steps: int
    messages: list[Message]
    spent: Spent
    invalid_replies: int = 0
    tool_errors: int = 0
    error: RunFailure | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        return self.status is Status.DONE and self.result is not None

    def unwrap(self) -> R:
        """The result, or the :class:`RunFailure` that ended the turn."""
        if self.result is not None and self.status is Status.DONE:
            return self.result
        if self.error is not None:
            raise self.error
        raise AgentStuck(f"{self.role}: {self.status}: {self.reason}")


def submit_spec(result_model: type[BaseModel], name: str = SUBMIT) -> ToolSpec:
    schema = result_model.model_json_schema()
    schema.pop("title", None)
    return ToolSpec(name=name, description=(
        f"Give your final answer ({result_model.__name__}). Call it once, when done; "
        "the framework checks it."), parameters=schema)


class _Turn(Generic[R]):
    """State of one loop run (kept small: the conversation, counters, the budget)."""

    def __init__(self, role: str, client: LLMClient, messages: list[Message],
                 toolbox: Toolbox | None,
                 result_model: type[R], budget: RoleBudget, transcript: Transcript,
                 repeat_limit: int, check: Callable[[R], list[str]] | None = None,
                 submit: str = SUBMIT) -> None:
        self.role = role
        self.submit = submit
        self.check = check
        self.client = client
        self.conversation = list(messages)
        self.toolbox = toolbox
        self.result_model = result_model
        self.budget = budget
        self.transcript = transcript
        self.repeat_limit = repeat_limit
        self.specs = [] if toolbox is None else [*toolbox.specs(),
                                                 submit_spec(result_model, submit)]
        self.seen: Counter[str] = Counter()
        self.invalid = 0
        self.tool_errors = 0
        self.steps = 0
        self.spent = Spent()

    def add(self, message: Message) -> None:
        self.conversation.append(message)
        self.transcript.write("message", step=self.steps,
                              message=message.model_dump(mode="json", exclude_defaults=True))

    def count_invalid(self, kind: str, detail: str) -> None:
        self.invalid += 1
        self.spent.invalid_replies += 1
        self.budget.charge_invalid()
        self.transcript.write("invalid", step=self.steps, kind=kind, detail=detail)

    def outcome(self, status: Status, reason: str, result: R | None = None,
                error: RunFailure | None = None) -> AgentOutcome[R]:
        self.transcript.write(
            "end", status=str(status), reason=reason, steps=self.steps,
            invalid_replies=self.invalid, tool_errors=self.tool_errors,
            spent=self.spent.model_dump(mode="json"),
            result=None if result is None else result.model_dump(mode="json"))
        logger.info("%s: %s after %d steps (%s)", self.role, status, self.steps, reason)
        return AgentOutcome(role=self.role, status=status, reason=reason, result=result,
                            steps=self.steps, messages=self.conversation, spent=self.spent,
                            invalid_replies=self.invalid, tool_errors=self.tool_errors,
                            error=error)

    def call(self, request: CompletionRequest) -> Completion | AgentOutcome[R]:
        """One model call within the budget, charged (failed calls too) and added to the
        conversation; an outcome when the budget is spent or the endpoint failed."""
        try:
            self.budget.check()
        except BudgetExhausted as exc:
            return self.outcome(Status.BUDGET_EXHAUSTED, str(exc), error=exc)
        try:
            completion = self.client.complete(request)
        except CassetteMismatch:
            raise
        except ModelError as exc:
            self.charge(Usage(), failed=True)
            return self.outcome(Status.MODEL_ERROR, str(exc), error=exc)
        self.charge(completion.usage, failed=False)
        self.add(completion.message)
        return completion

    def charge(self, usage: Usage, failed: bool) -> None:
        cost = self.budget.charge(self.client.model, usage, failed=failed)
        self.spent.usage = self.spent.usage + usage
        self.spent.cost_usd += cost
        self.spent.calls += 1
        self.spent.failed_calls += int(failed)
        self.transcript.write("usage", step=self.steps, failed=failed, cost_usd=cost,
                              **usage.model_dump())

    def parse_result(self, text: str) -> R:
        """The result model from JSON text, or a :class:`ToolError` saying what is wrong."""
        fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
        body = fenced.group(1) if fenced else text
        try:
            data = json.loads(body)
        except json.JSONDecodeError as exc:
            raise InvalidToolCall(f"not valid JSON ({exc.msg} at character {exc.pos})") from exc
        try:
            result = self.result_model.model_validate(data)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or '(object)'}: {e['msg']}"
                for e in exc.errors())
            raise InvalidToolCall(f"does not fit {self.result_model.__name__}: {problems}"
                                  ) from exc
        found = self.check(result) if self.check is not None else []
        if found:
            raise InvalidToolCall("was checked and refused: " + "; ".join(found))
        return result

    def answer_call(self, call: ToolCall) -> tuple[str, bool]:
        """Run one tool call; return its answer and whether the turn is stuck."""
        try:
            if self.toolbox is None:
                raise InvalidToolCall("no tools here; answer with JSON that fits the schema")
            answer = self.toolbox.call(call.name, call.arguments)
        except InvalidToolCall as exc:
            self.tool_errors += 1
            self.count_invalid("tool_call", str(exc))
            answer = f"error: {exc}"
        except ToolError as exc:
            self.tool_errors += 1
            answer = f"error: {exc}"
        signature = hashlib.sha256(
            f"{call.name}\0{_canonical(call.arguments)}\0{answer}".encode()).hexdigest()
        self.seen[signature] += 1
        repeats = self.seen[signature]
        if repeats == self.repeat_limit - 1:
            answer += ("\n[note: this exact call already got this exact answer; repeating it "
                       f"will not help — change approach or {self.submit}]")
        return answer, repeats >= self.repeat_limit

    def step(self) -> AgentOutcome[R] | None:
        """One model call and its tool calls; an outcome when the turn ends."""
        completion = self.call(CompletionRequest(messages=self.conversation, tools=self.specs))
        if isinstance(completion, AgentOutcome):
            return completion
        message = completion.message
        if not message.tool_calls:
            try:
                result = self.parse_result(message.content or "")
            except InvalidToolCall as exc:
                self.count_invalid("reply", str(exc))
                self.add(Message(role="user", content=(
                    f"error: your reply is neither a tool call nor a valid result: {exc}. "
                    f"Call a tool, or call {self.submit} with your final answer.")))
                return None
            return self.outcome(Status.DONE, "result given as a reply", result)
        stuck = False
        for call in message.tool_calls:
            if call.name == self.submit:
                try:
                    result = self.parse_result(call.arguments)
                except InvalidToolCall as exc:
                    self.count_invalid("result", str(exc))
                    self.add(Message(role="tool", tool_call_id=call.id,
                                     content=f"error: the result {exc}; fix it and call "
                                             f"{self.submit} again"))
                    continue
                self.add(Message(role="tool", tool_call_id=call.id, content="accepted"))
                return self.outcome(Status.DONE, "result submitted", result)
            try:
                answer, repeated = self.answer_call(call)
            except RunFailure as exc:
                self.add(Message(role="tool", tool_call_id=call.id, content=f"error: {exc}"))
                return self.outcome(Status.FAILED, f"{call.name}: {exc}", error=exc)
            self.add(Message(role="tool", tool_call_id=call.id, content=answer))
            stuck = stuck or repeated
        if stuck:
            reason = (f"the same call got the same answer {self.repeat_limit} times "
                      "without progress")
            return self.outcome(Status.STUCK, reason, error=AgentStuck(f"{self.role}: {reason}"))
        return None


def _canonical(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), sort_keys=True)
    except json.JSONDecodeError:
        return arguments


def run_agent(
    *,
    role: str,
    client: LLMClient,
    messages: list[Message],
    toolbox: Toolbox,
    result_model: type[R],
    budget: RoleBudget,
    transcript: Transcript | None = None,
    max_steps: int = 40,
    repeat_limit: int = 3,
    check: Callable[[R], list[str]] | None = None,
    submit: str = SUBMIT,
) -> AgentOutcome[R]:
    """Run one role's turn until it gives a valid ``result_model`` or a bound ends it.

    ``check`` is the framework's own check of a result (e.g. every surface candidate
    classified); its problems are answered to the model like any invalid reply.
    ``submit`` names the tool the result comes through.
    """
    transcript = transcript if transcript is not None else Transcript()
    turn = _Turn(role, client, [], toolbox, result_model, budget, transcript, repeat_limit,
                 check, submit)
    transcript.write("start", role=role, model=client.model, max_steps=max_steps,
                     tools=[spec.name for spec in turn.specs])
    for message in messages:
        turn.add(message)
    while turn.steps < max_steps:
        turn.steps += 1
        started = time.monotonic()
        try:
            outcome = turn.step()
        finally:
            elapsed = time.monotonic() - started
            budget.charge_time(elapsed)
            turn.spent.wall_seconds += elapsed
        if outcome is not None:
            return outcome
    error = AgentStuck(f"{role}: no result within {max_steps} steps")
    return turn.outcome(Status.STEP_LIMIT, f"no result within {max_steps} steps", error=error)


def ask_structured(
    *,
    role: str,
    client: LLMClient,
    messages: list[Message],
    result_model: type[R],
    budget: RoleBudget,
    transcript: Transcript | None = None,
    attempts: int = 2,
    check: Callable[[R], list[str]] | None = None,
) -> AgentOutcome[R]:
    """One question without tools, answered through structured output (JSON schema).

    An unusable answer is sent back with what is wrong, up to ``attempts`` calls; every
    call is charged to ``budget``, unusable ones counted as invalid.
    """
    transcript = transcript if transcript is not None else Transcript()
    turn: _Turn[R] = _Turn(role, client, [], None, result_model, budget, transcript,
                           repeat_limit=attempts + 1, check=check)
    schema = ResponseSchema(name=result_model.__name__,
                            schema=result_model.model_json_schema())
    transcript.write("start", role=role, model=client.model, max_steps=attempts,
                     tools=[], response_format=schema.name)
    for message in messages:
        turn.add(message)
    while turn.steps < attempts:
        turn.steps += 1
        started = time.monotonic()
        try:
            completion = turn.call(CompletionRequest(messages=turn.conversation,
                                                     response_format=schema))
            if isinstance(completion, AgentOutcome):
                return completion
            try:
                result = turn.parse_result(completion.message.content or "")
            except InvalidToolCall as exc:
                turn.count_invalid("reply", str(exc))
                turn.add(Message(role="user", content=f"error: your answer {exc}; answer "
                                                      "again with JSON that fits the schema"))
                continue
            return turn.outcome(Status.DONE, "structured answer", result)
        finally:
            elapsed = time.monotonic() - started
            budget.charge_time(elapsed)
            turn.spent.wall_seconds += elapsed
    error = AgentStuck(f"{role}: no usable answer in {attempts} attempts")
    return turn.outcome(Status.STEP_LIMIT, f"no usable answer in {attempts} attempts",
                        error=error)
