"""The loop-mode agent: the baseline the port cycle is measured against.

One agent with the implementer's tools (read, list, search, history, upstream files,
write, edit, commands in the run's sandbox), asked to port the change and make the tests
pass, as a plain agent loop does it (mini-swe-agent): no gap verification, no spec, no
observed red, no gates, no reviewer. It ends by calling ``done`` with a summary, or when a
bound ends it; either way the framework commits what it left in the worktree on the run's
branch — what the agent says it did is never taken for what it did. Its budget is the
task's: the ``[model] budget`` of the config, the same the cycle's run has. The loop is one
turn for the whole task, so no step limit of its own ends it before that budget does.

Tokens, cost and calls are read back from the turn's transcript in the run folder
(:func:`portwright.runs.report.spend`), as the cycle's are.
"""

from __future__ import annotations

import logging

from pydantic import BaseModel, ConfigDict, Field

from portwright.agents.loop import AgentOutcome, Status
from portwright.agents.prompting import Excerpt
from portwright.agents.roles import implementer
from portwright.agents.roles.base import Role, RoleContext
from portwright.parity.matrix import find_row
from portwright.parity.pin import read_pin
from portwright.vcs import plumbing
from portwright.vcs.worktree import commit_step, reset_to_head
from portwright.workflows.context import RunContext
from portwright.workflows.steps import load, run_role, save, workspace

logger = logging.getLogger(__name__)

STEP = "loop"
"""The ``Portwright-Step`` of the commit that holds what the agent left."""
OUTCOME = "loop.json"
"""How the agent's turn ended, in the run folder (written before the commit)."""
MAX_COMMITS = 40
"""Most upstream commits listed in the prompt (the newest)."""
UNLIMITED_STEPS = 10_000
"""The loop's step limit when the budget does not limit calls (``calls = 0``)."""


class LoopContext(RoleContext):
    """What the loop agent is given: the row and the upstream change, nothing the cycle's
    own steps would have found out."""

    row: str
    """The parity row's id."""
    title: str
    """The row's title (what the change is)."""
    upstream: list[str] = Field(default_factory=list)
    """The row's upstream names and paths."""
    pin: str
    """The upstream revision the port matches."""
    target: str
    """The upstream revision to port up to (every upstream tool reads it)."""
    commits: list[str] = Field(default_factory=list)
    """``<sha> <subject>`` of the upstream commits pin..target, newest first."""
    test_commands: list[str] = Field(default_factory=list)
    """The command gates of the rules (how the project runs its tests)."""


class LoopReport(BaseModel):
    """What the loop agent says when it is done (a claim: the framework checks the tree)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    summary: str = Field(min_length=1)
    """What you changed and how you checked it."""
    files: list[str] = Field(default_factory=list)
    """Files you wrote or edited."""


class LoopEnd(BaseModel):
    """How the loop's turn ended, as the loop saw it (``loop.json``)."""

    model_config = ConfigDict(extra="forbid")

    status: Status
    reason: str
    summary: str = ""


def sample() -> LoopContext:
    return LoopContext(
        rules_prose="<!-- AGENTS.md -->\n# Port rules\n\nFollow upstream semantics exactly.",
        row="moving-average", title="movingAverage: trailing and centered windows",
        upstream=["movingAverage", "src/stats.js"], pin="0123456789ab" * 3 + "0123",
        target="fedcba987654" * 3 + "fedc",
        commits=["fedcba98765 Add movingAverage with trailing and centered windows"],
        test_commands=["python3 -m pytest -q -p no:cacheprovider tests"],
        excerpts=[Excerpt(ref="upstream src/stats.js:1-2@fedcba987654",
                          text="     1\texport function movingAverage(xs, n) {\n     2\t}",
                          why="example")])


ROLE: Role[LoopContext, LoopReport] = Role(
    name="loop",
    template="loop.j2",
    context=LoopContext,
    result=LoopReport,
    tools=implementer.ROLE.tools,
    sample=sample,
    submit="done",
)


def loop_context(ctx: RunContext, row_id: str, target: str | None = None) -> LoopContext:
    """The loop's context for ``row_id`` of the run's project, porting up to ``target``
    (default: ``[upstream] branch``, as the cycle's ``prepare`` does)."""
    root, config = ctx.project.root, ctx.project.config
    row = find_row(root, config, row_id)
    upstream = ctx.project.upstream()
    pin = plumbing.rev_parse(upstream, read_pin(root, config))
    head = plumbing.rev_parse(upstream, target or config.upstream.branch)
    log = plumbing.git(upstream, "log", f"--max-count={MAX_COMMITS}", "--format=%h %s",
                       f"{pin}..{head}").decode("utf-8", "replace")
    commands = [g.spec.run for g in ctx.rules.gates() if g.spec.run]
    return LoopContext(rules_prose=ctx.rules.prose_for(None), row=row.id, title=row.title,
                       upstream=[u.strip("`") for u in row.upstream if u.strip("`")],
                       pin=pin, target=head, commits=log.splitlines(),
                       test_commands=list(dict.fromkeys(commands)))


def port_in_loop(ctx: RunContext, row_id: str, target: str | None = None) -> LoopEnd:
    """Run the loop agent on ``row_id`` in the run's worktree and sandbox, then commit what
    it left on the run's branch. Run again after a crash, a turn that ended is not run a
    second time (its outcome and commit are found); one cut short starts over from the
    branch's head."""
    root = ctx.project.root
    if (ctx.dir / OUTCOME).is_file():
        end = LoopEnd.model_validate(load(ctx, OUTCOME))
    else:
        reset_to_head(root)
        context = loop_context(ctx, row_id, target)
        budget = ctx.project.config.model.budget
        outcome: AgentOutcome[LoopReport] = run_role(
            ctx, ROLE, context, workspace(ctx, context.target, commands=True),
            max_steps=budget.calls + 1 if budget.calls else UNLIMITED_STEPS)
        end = LoopEnd(status=outcome.status, reason=outcome.reason,
                      summary=outcome.result.summary if outcome.result is not None else "")
        save(ctx, OUTCOME, end)
    commit_step(root, ctx.run_id, STEP, f"port: {row_id} (loop mode)")
    return end
