"""The ``portwright.run`` workflow: the port cycle driven by Temporal.

The workflow opens the run (an activity: worktree, branch, manifest), then runs the
cycle's graph as Temporal's LangGraph plugin compiles it: routers and LangGraph's loop
here, every node an activity on some worker. At an approval point the graph returns its
``interrupt()``; the workflow parks, answers the ``view`` query with the request, and
resumes the graph with the decision the ``decide`` update brings (refused, with the
reason, when the run is not waiting, the decision names another question than the one it
waits at, or is not one the request allows). A
node that fails every attempt ends the run ``blocked`` with the failure as its reason.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command
    from temporalio.langgraph import graph

    from portwright.dist.models import (
        DECIDE_UPDATE,
        GRAPH,
        OPEN_RUN_ACTIVITY,
        RUN_WORKFLOW,
        VIEW_QUERY,
        Decide,
        OpenRun,
        RunRef,
        RunRequest,
        RunSnapshot,
        question_id,
        run_id_of,
    )
    from portwright.errors import UsageError
    from portwright.workflows.approvals import HITLRequest, parse_response
    from portwright.workflows.driver import _serde
    from portwright.workflows.state import CycleState, RunStatus

RECURSION_LIMIT = 400
OPEN_TIMEOUT = timedelta(minutes=10)


@workflow.defn(name=RUN_WORKFLOW)
class PortCycleWorkflow:
    """One run of the port cycle (workflow id = run id)."""

    def __init__(self) -> None:
        self._app: Any = None
        self._config: RunnableConfig = {}
        self._waiting: dict[str, Any] | None = None
        self._decision: dict[str, Any] | None = None
        self._asked = 0
        self._failure = ""

    @workflow.run
    async def run(self, request: RunRequest) -> RunSnapshot:
        info = workflow.info()
        run_id = run_id_of(info.workflow_id)
        base = await workflow.execute_activity(
            OPEN_RUN_ACTIVITY, OpenRun(request=request, run_id=run_id,
                                       workflow_id=info.workflow_id),
            result_type=str, start_to_close_timeout=OPEN_TIMEOUT,
            retry_policy=RetryPolicy(maximum_attempts=5))
        ref = RunRef(root=request.root, run_id=run_id, base=base, command=f"run {request.row}",
                     overrides=request.overrides, replay=request.replay,
                     allow_local=request.allow_local)
        # the checkpoints live in the workflow's memory, rebuilt from its history on
        # replay; they read back only the state's own types, as the local engine's do
        self._app = graph(GRAPH).compile(checkpointer=InMemorySaver(serde=_serde()))
        self._config = {"configurable": {"thread_id": run_id},
                        "recursion_limit": RECURSION_LIMIT}
        graph_input: Any = CycleState(row=request.row)
        while True:
            try:
                result = await self._app.ainvoke(graph_input, self._config, context=ref)
            except ActivityError as exc:
                cause = exc.cause.message if isinstance(exc.cause, ApplicationError) \
                    else str(exc.cause or exc)
                self._failure = f"a node failed on every attempt: {cause}"
                return self.view()
            interrupts = result.get("__interrupt__") if isinstance(result, dict) else None
            if not interrupts:
                return self.view()
            self._waiting = dict(interrupts[0].value)
            self._asked += 1
            await workflow.wait_condition(lambda: self._decision is not None)
            graph_input = Command(resume={"decisions": [self._decision]})
            self._decision = None

    @workflow.query(name=VIEW_QUERY)
    def view(self) -> RunSnapshot:
        """The run's state, what runs next, and the request it waits at."""
        if self._app is None:
            return RunSnapshot()
        snapshot = self._app.get_state(self._config)
        values = CycleState.model_validate(snapshot.values).model_dump(mode="json") \
            if snapshot.values else {}
        if self._failure and values:
            values = {**values, "status": RunStatus.BLOCKED.value, "reason": self._failure}
        return RunSnapshot(values=values, next=[t.name for t in snapshot.tasks],
                           waiting=self._waiting, asked=self._asked,
                           question=question_id(self._asked) if self._waiting else "",
                           failure=self._failure)

    @workflow.update(name=DECIDE_UPDATE)
    def decide(self, decide: Decide) -> int:
        """A person's decision on the request the run waits at; returns its number."""
        self._decision = decide.decision
        self._waiting = None
        return self._asked

    @decide.validator
    def _check_decision(self, decide: Decide) -> None:
        if self._waiting is None:
            raise ApplicationError("the run is not waiting for a decision", type="NotWaiting")
        if decide.question != question_id(self._asked):
            raise ApplicationError(
                f"the question changed: the run waits at {question_id(self._asked)}, the "
                f"decision answers {decide.question!r} (decided already, or never asked)",
                type="QuestionChanged")
        try:
            parse_response({"decisions": [decide.decision]},
                           HITLRequest.model_validate(self._waiting))
        except UsageError as exc:
            raise ApplicationError(exc.render(), type="NotAllowed") from exc
