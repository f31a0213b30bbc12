"""Scripted models for ``portwright eval``: a loop agent that follows a plan (an oracle that
ports correctly, or one that makes a known mistake), and one model that answers both modes
(the cycle's roles as the scripted porter, the loop agent as its plan).

Like the scripted porter, they read where they are from the request itself (the system
prompt, the tool answers so far), so any process can answer any step: a local server built
on them answers ``portwright eval run`` in a subprocess through the real openai SDK."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from portwright.agents.llm import CompletionRequest, Message
from portwright.agents.offline import ScriptedModel, call
from tests.workflows.porter import Plan, porter

LOOP_SYSTEM = "You are a software engineer porting a change"
"""How the loop agent's system prompt starts (``portwright/prompts/loop.j2``)."""


@dataclass
class LoopPlan:
    """What the scripted loop agent does: write files, run commands, say it is done."""

    files: dict[str, str]
    """Files it writes, in order (path → text)."""
    commands: list[str] = field(default_factory=list)
    """Commands it runs afterwards."""
    summary: str = "Ported the change; the tests pass."
    """What it claims when done."""


def is_loop(request: CompletionRequest) -> bool:
    return (request.messages[0].content or "").startswith(LOOP_SYSTEM)


def loop_reply(plan: LoopPlan, request: CompletionRequest) -> Message:
    """The loop agent's next message: one step of the plan per tool answer so far."""
    steps: list[tuple[str, dict[str, Any]]] = [
        ("write_file", {"path": path, "content": text}) for path, text in plan.files.items()]
    steps += [("run_command", {"command": command}) for command in plan.commands]
    done = sum(1 for m in request.messages if m.role == "tool")
    if done < len(steps):
        name, arguments = steps[done]
        return call(name, arguments, id=f"call_{done}")
    return call("done", {"summary": plan.summary, "files": list(plan.files)},
                id=f"call_{done}")


def loop_agent(plan: LoopPlan) -> ScriptedModel:
    """A loop agent that follows ``plan``."""
    return ScriptedModel(lambda request: loop_reply(plan, request), model="loop-agent")


def both_modes(cycle: Plan, loop: LoopPlan, *, model: str = "eval-agent") -> ScriptedModel:
    """One model for both modes: the cycle's roles answered by the porter of ``cycle``,
    the loop agent by ``loop``."""
    port = porter(cycle)

    def script(request: CompletionRequest) -> Message | str:
        if is_loop(request):
            return loop_reply(loop, request)
        return port.complete(request).message

    return ScriptedModel(script, model=model)


_ROW = re.compile(r"Parity row:\n(?P<a>[\w.-]+)|\(row (?P<b>[\w.-]+) of the parity matrix\)")


def row_of(request: CompletionRequest) -> str:
    """The row a request is about, as every role's and the loop's prompt names it."""
    for message in request.messages:
        found = _ROW.search(message.content or "")
        if found is not None:
            return found["a"] or found["b"]
    raise AssertionError("the request names no row")


def by_row(models: dict[str, ScriptedModel], *, model: str = "eval-agent") -> ScriptedModel:
    """One model for several tasks: each request answered by the model of its row."""
    return ScriptedModel(lambda request: models[row_of(request)].complete(request).message,
                         model=model)
