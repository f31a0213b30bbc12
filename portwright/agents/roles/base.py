"""What every role is: a prompt template, a context model, allowed tools, a result model.

A role receives its model, workspace, budget and transcript; it does not build them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict

from portwright.agents.budget import RoleBudget
from portwright.agents.llm import LLMClient, Message
from portwright.agents.loop import SUBMIT, AgentOutcome, run_agent
from portwright.agents.prompting import Excerpt, build_messages
from portwright.agents.tools import Toolbox, Workspace
from portwright.agents.transcript import Transcript
from portwright.errors import RunFailure

logger = logging.getLogger(__name__)

C = TypeVar("C", bound="RoleContext")
R = TypeVar("R", bound=BaseModel)

READ_TOOLS = ("read_file", "show_upstream", "list_dir", "search", "git_history")
"""The read-only tools every role gets."""


class RoleContext(BaseModel):
    """Base of the per-role contexts: what the framework hands a role, nothing more."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    rules_prose: str
    """The downstream AGENTS.md prose that applies (``Rules.prose_for(paths)``)."""
    excerpts: list[Excerpt] = []
    """Cited ranges (upstream at the pin, downstream) the framework selected."""

    def template_values(self) -> dict[str, Any]:
        """Values for the template: every field but the excerpts (filled to the ceiling)."""
        values = {name: getattr(self, name) for name in type(self).model_fields}
        values.pop("excerpts")
        return values


class ContextLeak(RunFailure):
    """A role's context holds messages of another role it must not see."""


LEAK_MIN_CHARS = 40
"""Shorter texts (``done``, ``I will read the file.``) are too common to prove a leak."""


def check_fresh(messages: Sequence[Message], forbidden: Sequence[Message], *, role: str) -> None:
    """Raise :class:`ContextLeak` when ``messages`` equal or quote what another role's model
    said in ``forbidden``.

    Checked: every ``forbidden`` message as a whole, and the text of each of its
    assistant messages (the other model's own words) wherever it is quoted. Texts the
    other role was itself given (its system and user messages: the spec, the rules) are
    shared context, not a leak; tool answers are observations of the repository, which a
    fresh role may make again.
    """
    given = [m.content for m in forbidden if m.role in ("system", "user") and m.content]
    for other in forbidden:
        if other.role == "assistant" and other in messages:
            raise ContextLeak(f"{role}: its context holds an assistant message of another "
                              "role; it must start fresh")
    texts = [m.content for m in messages if m.content]
    for other in forbidden:
        piece = (other.content or "").strip() if other.role == "assistant" else ""
        if len(piece) < LEAK_MIN_CHARS or any(piece in text for text in given):
            continue
        if any(piece in text for text in texts):
            raise ContextLeak(
                f"{role}: its context quotes an assistant message of another role "
                f"({piece[:60]!r}…); it must start fresh")


@dataclass(frozen=True)
class Role(Generic[C, R]):
    """One role: its name, template, context and result types, tools and result check."""

    name: str
    template: str
    context: type[C]
    result: type[R]
    tools: tuple[str, ...]
    check: Callable[[C, R, Workspace], list[str]] | None = None
    """The framework's own check of a result: problems found, answered to the model."""
    sample: Callable[[], C] | None = field(default=None, compare=False)
    confine: Callable[[C, Workspace], Workspace] | None = None
    submit: str = SUBMIT
    """The tool the result comes through."""

    def messages(self, context: C, *, ceiling: int = 60_000) -> list[Message]:
        """The role's opening messages: system (static) then task, within ``ceiling``."""
        return build_messages(self.template, context.template_values(), ceiling=ceiling,
                              excerpts=context.excerpts)

    def run(
        self,
        context: C,
        *,
        client: LLMClient,
        workspace: Workspace,
        budget: RoleBudget,
        transcript: Transcript | None = None,
        max_steps: int = 40,
        ceiling: int = 60_000,
        tools: tuple[str, ...] | None = None,
        forbidden: Sequence[Message] = (),
    ) -> AgentOutcome[R]:
        """One turn of the role on ``context``; see :func:`~portwright.agents.loop.run_agent`.

        ``forbidden`` are messages that must not reach this role (another role's
        transcript): a :class:`ContextLeak` is raised before any call if one does.
        """
        check = self.check
        messages = self.messages(context, ceiling=ceiling)
        check_fresh(messages, forbidden, role=self.name)
        if self.confine is not None:
            workspace = self.confine(context, workspace)
        confined = workspace
        return run_agent(
            role=self.name,
            client=client,
            messages=messages,
            toolbox=Toolbox(workspace, tools if tools is not None else self.tools),
            result_model=self.result,
            budget=budget,
            transcript=transcript,
            max_steps=max_steps,
            check=None if check is None else (lambda result: check(context, result, confined)),
            submit=self.submit,
        )
