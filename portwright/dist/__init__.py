"""Scale-out on Temporal (``pip install 'portwright[temporal]'``): the port cycle and the
pin sync as Temporal workflows whose nodes run as activities on ``portwright worker``
processes.

Nothing here is a hand-written bridge. Temporal's LangGraph plugin
(:mod:`temporalio.langgraph`, the ``temporalio-langgraph`` package; ``temporalio 1.35``
keeps ``temporalio.contrib.langgraph`` only as a re-export of it) takes the uncompiled
cycle and the uncompiled sync graph (registered under two names) and turns each node
into an activity with a timeout, a retry policy and a task queue; a graph's routers and
LangGraph's own loop run inside the workflow, with an in-memory checkpointer that
Temporal's history makes durable; an ``interrupt()`` in a node
comes back to the workflow, which waits for a decision sent as a Temporal update. The
plugin is experimental: the extra pins ``temporalio==1.35.0`` and
``temporalio-langgraph==0.1.0`` (built against langgraph 1.2).

What portwright adds around it:

- :mod:`.activities` — the cycle's nodes as the plugin wants them: no LangGraph retry (Temporal
  retries), options per node from ``[temporal]``, and each activity opens the run's context
  (worktree, manifest, store, sandbox) from a small serialisable :class:`.models.RunRef`,
  because the plugin carries a node's runtime context across the activity boundary as
  data. Each activity opens and closes its own sandbox: activities of one run may land on
  different workers, and a container never outlives the node that started it. Long nodes
  heartbeat, so a killed worker's node is retried elsewhere after ``heartbeat_timeout``;
  the retried node finds its commit by trailer and the dead worker's container by label.
- :mod:`.workflow` — the ``portwright.run`` workflow (workflow id = run id): opens the run
  (its manifest says ``engine = "temporal"``), drives the graph, parks at approvals, answers
  the ``view`` query and the ``decide`` update.
- :mod:`.sync_workflow`, :mod:`.sync_activities` — the ``portwright.sync`` workflow
  (workflow id = sync id): an activity opens the sync, then the plugin runs the sync graph
  as it runs the cycle (port runs fanned out with ``Send``, one activity each, each driving
  its run of the cycle on its worker); every checkpoint the workflow saves is written into
  the project's checkpoints by an activity, so the sync is read (``status``, ``report``)
  and resumed as a local one. The limits of the plugin this works around are listed
  there.
- :mod:`.client` — what the CLI asks of a run driven by Temporal: start, view, answer; and
  of a sync: start it, whether its workflow still runs.
- :mod:`.worker` — ``portwright worker``: one process polling one task queue.
- :mod:`.schedules` — Temporal schedules that start a workflow by name with arguments.

Nothing below :mod:`portwright.workflows` imports this package; the CLI is its only caller.
"""
