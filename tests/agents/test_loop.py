"""The agent loop with scripted models: errors answered, loops stopped, transcripts written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from portwright.agents.budget import RunBudget
from portwright.agents.llm import CompletionRequest, Message, ToolCall
from portwright.agents.loop import SUBMIT, AgentStuck, Status, run_agent
from portwright.agents.offline import ScriptedModel, call
from portwright.agents.tools import Toolbox, Workspace
from portwright.agents.transcript import TRANSCRIPT_NAME, Transcript, read_transcript
from portwright.config import ModelBudget
from portwright.errors import BudgetExhausted, SandboxDied
from tests.agents.helpers import SubprocessSandbox


class Done(BaseModel):
    answer: str


def run(pair: dict[str, Any], model: ScriptedModel, **kwargs: Any) -> Any:
    options: dict[str, Any] = {"budget": RunBudget(ModelBudget()).for_role("r"),
                               "max_steps": 10, **kwargs}
    return run_agent(role="r", client=model, messages=[Message(role="user", content="go")],
                     toolbox=Toolbox(pair["workspace"], ["read_file", "write_file"]),
                     result_model=Done, **options)


def test_a_plain_reply_can_be_the_result(pair: dict[str, Any]) -> None:
    outcome = run(pair, ScriptedModel.from_replies(['```json\n{"answer": "42"}\n```']))
    assert outcome.status is Status.DONE
    assert outcome.unwrap() == Done(answer="42")


def test_prose_instead_of_a_tool_call_is_answered_and_counted(pair: dict[str, Any]) -> None:
    model = ScriptedModel.from_replies(["I think the answer is 42.", '{"answer": 42}',
                                        call(SUBMIT, {"answer": "42"})])
    outcome = run(pair, model)
    assert outcome.ok
    assert outcome.invalid_replies == 2
    errors = [m.content or "" for m in outcome.messages if m.role == "user"][1:]
    assert "neither a tool call nor a valid result: not valid JSON" in errors[0]
    assert "answer: Input should be a valid string" in errors[1]


def test_the_same_call_without_progress_is_stopped(pair: dict[str, Any]) -> None:
    same = call("read_file", {"path": "notes.txt"})
    outcome = run(pair, ScriptedModel(lambda request: same))
    assert outcome.status is Status.STUCK
    assert outcome.steps == 3
    warned = [m.content or "" for m in outcome.messages if m.role == "tool"][1]
    assert "repeating it will not help" in warned
    with pytest.raises(AgentStuck, match="same answer 3 times"):
        outcome.unwrap()


def test_repeating_with_progress_is_not_stuck(pair: dict[str, Any]) -> None:
    counter = iter(range(100))

    def script(request: CompletionRequest) -> Message:
        n = next(counter)
        if n < 4:  # the same write, but the file it reads back changes every time
            return Message(role="assistant", tool_calls=[
                ToolCall(id=f"w{n}", name="write_file",
                         arguments=json.dumps({"path": "log.txt", "content": str(n)})),
                ToolCall(id=f"r{n}", name="read_file", arguments='{"path": "log.txt"}')])
        return call(SUBMIT, {"answer": "done"})

    outcome = run(pair, ScriptedModel(script))
    assert outcome.ok
    assert outcome.steps == 5


def test_step_limit_ends_the_turn(pair: dict[str, Any]) -> None:
    counter = iter(range(100))
    outcome = run(pair, ScriptedModel(lambda r: call(
        "write_file", {"path": "f.txt", "content": str(next(counter))})), max_steps=4)
    assert outcome.status is Status.STEP_LIMIT
    assert outcome.steps == 4
    with pytest.raises(AgentStuck, match="no result within 4 steps"):
        outcome.unwrap()


def test_unparseable_calls_count_against_the_call_budget(pair: dict[str, Any]) -> None:
    budget = RunBudget(ModelBudget(calls=3)).for_role("r")
    outcome = run(pair, ScriptedModel(lambda r: call("read_file", "{nope")), budget=budget,
                  repeat_limit=99,
                  max_steps=100)
    assert outcome.status is Status.BUDGET_EXHAUSTED
    assert outcome.spent.calls == 3
    assert outcome.invalid_replies == 3
    assert isinstance(outcome.error, BudgetExhausted)
    assert outcome.error.budget == "calls"


def test_transcript_records_every_event(pair: dict[str, Any],
                                                     tmp_path: Path) -> None:
    path = tmp_path / "runs" / "run-1" / TRANSCRIPT_NAME
    model = ScriptedModel.from_replies([call("read_file", {"path": "notes.txt"}),
                                        call(SUBMIT, {"answer": "alpha"})])
    outcome = run(pair, model, transcript=Transcript(path))
    assert outcome.ok
    events = read_transcript(path)
    kinds = [e["event"] for e in events]
    assert kinds == ["start", "message", "usage", "message", "message", "usage", "message",
                     "message", "end"]
    assert events[0]["tools"] == ["read_file", "write_file", SUBMIT]
    assert events[4]["message"]["role"] == "tool"
    assert "alpha" in events[4]["message"]["content"]
    assert events[-1]["status"] == "done"
    assert events[-1]["result"] == {"answer": "alpha"}
    assert events[-1]["spent"]["calls"] == 2
    assert all("t" in e for e in read_transcript(path, drop_times=False))


class DeadSandbox(SubprocessSandbox):
    def exec(self, argv: Any, **kwargs: Any) -> Any:
        raise SandboxDied("the container went away")


def test_a_dead_sandbox_ends_the_turn_with_its_reason(pair: dict[str, Any],
                                                      tmp_path: Path) -> None:
    workspace = Workspace(worktree=pair["downstream"].path, sandbox=DeadSandbox())
    transcript = Transcript(tmp_path / "t.jsonl")
    outcome = run_agent(role="r", client=ScriptedModel.from_replies([
        call("run_command", {"command": "make"})]), messages=[Message(role="user",
                                                                      content="go")],
        toolbox=Toolbox(workspace, ["run_command"]), result_model=Done,
        budget=RunBudget(ModelBudget()).for_role("r"), transcript=transcript)
    assert outcome.status is Status.FAILED
    assert outcome.reason == "run_command: the container went away"
    assert read_transcript(tmp_path / "t.jsonl")[-1]["status"] == "failed"
    with pytest.raises(SandboxDied):
        outcome.unwrap()
