"""A scripted porter: answers each role's requests the way a competent model would for a
small, known port. It reads the role and the turn from the request itself (the system
prompt, the candidates listed, the tool answers so far), so any process can answer any
step of any run: a resumed run gets the same answers."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from portwright.agents.llm import CompletionRequest, Message
from portwright.agents.loop import SUBMIT
from portwright.agents.offline import ScriptedModel, call


@dataclass
class Plan:
    """What the porter does for one row."""

    gap: dict[str, Any]
    """The gap verifier's verdict."""
    answers: dict[str, str]
    """Answers to the spec questions."""
    tests: dict[str, str]
    """Test files it ports (path → text)."""
    implementation: dict[str, str]
    """Implementation files it writes (path → text)."""
    review: dict[str, Any] = field(default_factory=lambda: {
        "decision": "approve", "summary": "The change follows the spec; tests cover it."})
    reviews: list[dict[str, Any]] = field(default_factory=list)
    """Reviews given in order before ``review`` (e.g. one asking for changes)."""
    seen: list[str] = field(default_factory=list)
    """Every user-message text the porter was sent (checks on what reached an agent)."""


def _role(request: CompletionRequest) -> str:
    system = request.messages[0].content or ""
    for role in ("gap verifier", "surface enumerator", "implementer", "reviewer"):
        if f"You are the {role}" in system:
            return role
    raise AssertionError(f"unknown role: {system[:80]!r}")


def _turn(request: CompletionRequest) -> int:
    """How many tool answers this turn has had so far."""
    return sum(1 for m in request.messages if m.role == "tool")


def _candidates(task: str) -> list[str]:
    match = re.search(r"Candidate items \(\d+\):\n((?:- .*\n?)+)", task)
    assert match, task[:400]
    return [line[2:] for line in match.group(1).splitlines() if line.startswith("- ")]


def porter(plan: Plan) -> ScriptedModel:
    def script(request: CompletionRequest) -> Message | str:
        role = _role(request)
        task = "\n".join(m.content or "" for m in request.messages if m.role == "user")
        if _turn(request) == 0:
            plan.seen.append(task)
        if role == "gap verifier":
            return call(SUBMIT, plan.gap)
        if role == "surface enumerator":
            items = [{"item": c, "classification": "ported"} for c in _candidates(task)]
            return call(SUBMIT, {"items": items, "slice": "the whole function",
                                 "answers": plan.answers})
        if role == "implementer":
            system = request.messages[0].content or ""
            mode = "tests_only" if "This turn: TESTS ONLY" in system else "implementation_only"
            files = plan.tests if mode == "tests_only" else plan.implementation
            done = _turn(request)
            paths = list(files)
            if done < len(paths):
                return call("write_file", {"path": paths[done], "content": files[paths[done]]})
            return call(SUBMIT, {"mode": mode, "summary": f"wrote {', '.join(paths)}",
                                 "files": paths})
        reviews = plan.reviews
        verdict = reviews.pop(0) if reviews else plan.review
        return call(SUBMIT, verdict)

    return ScriptedModel(script, model="porter")


def json_args(message: Message) -> dict[str, Any]:
    return json.loads(message.tool_calls[0].arguments)
