"""People in the loop: where a run waits, what it asks, and what an answer may be.

The request is the human-in-the-loop shape LangChain's HITL middleware puts into a
LangGraph ``interrupt()`` and Agent Inbox / LangGraph Studio render: ``action_requests``
(``name``, ``args``, a markdown ``description``) and ``review_configs`` (``action_name``,
``allowed_decisions``). The answer is ``{"decisions": [...]}``, one decision per action:
``approve``, ``edit`` (with ``edited_action``), ``reject`` (with a ``message``) or
``respond`` (a ``message``; the run goes on and the next agent step hears it).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from portwright.config import ApprovalsConfig, BoundsConfig
from portwright.errors import UsageError

DecisionType = Literal["approve", "edit", "reject", "respond"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Action(_Model):
    name: str
    args: dict[str, Any] = Field(default_factory=dict)


class ActionRequest(_Model):
    name: str
    """What is asked, e.g. ``approve_spec``."""
    args: dict[str, Any] = Field(default_factory=dict)
    """What it is about (the spec path and text, the branch, the gates…)."""
    description: str = ""
    """Markdown for the person deciding."""


class ReviewConfig(_Model):
    action_name: str
    allowed_decisions: list[DecisionType]


class HITLRequest(_Model):
    action_requests: list[ActionRequest]
    review_configs: list[ReviewConfig]


class ApproveDecision(_Model):
    type: Literal["approve"] = "approve"


class EditDecision(_Model):
    type: Literal["edit"] = "edit"
    edited_action: Action


class RejectDecision(_Model):
    type: Literal["reject"] = "reject"
    message: str = ""


class RespondDecision(_Model):
    type: Literal["respond"] = "respond"
    message: str


Decision = Annotated[ApproveDecision | EditDecision | RejectDecision | RespondDecision,
                     Field(discriminator="type")]


class HITLResponse(_Model):
    decisions: list[Decision] = Field(min_length=1)


_RESPONSE = TypeAdapter(HITLResponse)


def parse_response(value: Any, request: HITLRequest) -> Decision:
    """The one decision answering ``request`` (one action per request here), checked
    against the decisions it allows."""
    try:
        response = _RESPONSE.validate_python(value)
    except ValueError as exc:
        raise UsageError(f"not a decision: {exc}",
                         fix="answer with approve, reject --message or edit --file") from exc
    decision = response.decisions[0]
    allowed = request.review_configs[0].allowed_decisions
    if decision.type not in allowed:
        raise UsageError(f"{decision.type!r} is not allowed at "
                         f"{request.action_requests[0].name}",
                         fix=f"answer with one of: {', '.join(allowed)}")
    return decision


def needs_approval(policy: str, *, unusual: list[str]) -> bool:
    """Whether a point with ``policy`` (always / never / unusual) asks a person."""
    return policy == "always" or (policy == "unusual" and bool(unusual))


def unusual_reasons(*, deferred: list[str], attempts: dict[str, int],
                    bounds: BoundsConfig, gates_retried: bool) -> list[str]:
    """What makes this run unusual: deferred surface items, a gate that had to be retried,
    a bound with one use left."""
    reasons = [f"surface item deferred: {item}" for item in deferred]
    if gates_retried:
        reasons.append("a gate failed before it passed")
    limits = {"spec": bounds.spec_attempts, "red": bounds.red_attempts,
              "implement": bounds.implement_attempts, "review": bounds.review_rounds}
    reasons += [f"{name} attempts nearly spent ({attempts.get(name, 0)} of {limit})"
                for name, limit in limits.items() if limit > 1
                and attempts.get(name, 0) >= limit - 1]
    return reasons


def approve_keys(approve: Literal["auto", "ask"]) -> dict[str, str]:
    """The config keys ``--approve`` sets: every approval point ``never`` (``auto``: a run
    that never waits for a person) or ``always`` (``ask``)."""
    policy = "never" if approve == "auto" else "always"
    return {f"approvals.{point}": policy for point in ApprovalsConfig.model_fields}


def policy_for(approvals: ApprovalsConfig, point: str) -> str:
    return str(getattr(approvals, point))


def request(name: str, args: dict[str, Any], description: str,
            allowed: list[DecisionType]) -> HITLRequest:
    return HITLRequest(action_requests=[ActionRequest(name=name, args=args,
                                                      description=description)],
                       review_configs=[ReviewConfig(action_name=name,
                                                    allowed_decisions=allowed)])
