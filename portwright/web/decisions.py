"""A person's decision, from a page to the run: checked, then handed to the driver.

A decision names the interrupt it answers (its id, from the page that showed the
request). It is sent only when the run still waits at that very interrupt and no other
decision for the run is in flight in this server; otherwise the answer is "already
decided", never a second resume. Sent, it runs
:func:`portwright.workflows.driver.answer` — what ``portwright approve / reject / edit``
call — in a background thread, so the request returns at once and the run's page follows
the run through its event stream. The driver's own lock and its check of the pending
interrupt guard against a decision from another process.

An edited spec is first checked by the rules' ``spec`` gates — the gates ``check_spec``
runs — on a throwaway worktree of the run's branch with the new text; a spec that fails
them is refused with their messages.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from portwright import safefs
from portwright.errors import PortwrightError, UsageError
from portwright.project import Project
from portwright.vcs import plumbing
from portwright.vcs.worktree import remove_worktree
from portwright.web.checkpoints import Checkpoints
from portwright.web.summaries import web_dir
from portwright.workflows import driver
from portwright.workflows.approvals import HITLRequest, parse_response

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Outcome:
    """What the page is told."""

    status: int
    """HTTP status: 202 sent, 409 already decided, 422 refused, 400 not a decision."""
    headline: str
    detail: str = ""

    @property
    def sent(self) -> bool:
        return self.status == 202


@dataclass(frozen=True)
class SpecCheck:
    """The ``spec`` gates on an edited spec."""

    passed: bool
    results: list[tuple[str, bool, list[str]]]
    """(gate, passed, messages) in order."""

    def messages(self) -> str:
        return "\n".join(f"gate {name}: {m}" for name, ok, msgs in self.results if not ok
                         for m in msgs)


ALREADY = "already decided"


@dataclass
class Decider:
    """Sends decisions to runs of one project, one at a time per run."""

    root: Path
    """The downstream repository (its committed config is loaded per decision, as the CLI
    does)."""
    checkpoints: Checkpoints
    allow_local: bool = False
    """Passed to the driver: the unisolated local backend is allowed."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _inflight: dict[str, str] = field(default_factory=dict, repr=False)
    _failures: dict[str, str] = field(default_factory=dict, repr=False)
    _threads: list[threading.Thread] = field(default_factory=list, repr=False)

    def inflight(self, run_id: str) -> str:
        """What was sent to ``run_id`` and is still resuming it ('' if nothing)."""
        with self._lock:
            return self._inflight.get(run_id, "")

    def failure(self, run_id: str) -> str:
        """Why the last decision sent to ``run_id`` could not resume it ('' if it could)."""
        with self._lock:
            return self._failures.get(run_id, "")

    def send(self, run_id: str, interrupt: str, decision: dict[str, Any]) -> Outcome:
        """Send ``decision`` to ``run_id`` if it still waits at ``interrupt``."""
        with self._lock:
            if run_id in self._inflight:
                return Outcome(409, f"{ALREADY}: a decision for this run is being applied",
                               self._inflight[run_id])
            current, pending = self.checkpoints.pending(run_id)
            if current.waiting is None or not interrupt or pending != interrupt:
                state = ("it waits at another question now" if current.waiting is not None
                         else f"it is {current.status.value} now")
                return Outcome(409, f"{ALREADY}: the run moved on ({state})",
                               "reload the page to see where it stands")
            try:
                parse_response({"decisions": [decision]},
                               HITLRequest.model_validate(current.waiting))
            except UsageError as exc:
                return Outcome(400, "not a decision this run accepts", exc.render())
            what = f"{decision['type']} at {datetime.now(UTC):%H:%M:%S} UTC"
            self._inflight[run_id] = what
            self._failures.pop(run_id, None)
            thread = threading.Thread(target=self._answer, args=(run_id, interrupt, decision),
                                      name=f"answer-{run_id}", daemon=True)
            self._threads.append(thread)
        thread.start()
        return Outcome(202, f"{decision['type']} sent: the run is resuming",
                       "this page follows it")

    def _answer(self, run_id: str, interrupt: str, decision: dict[str, Any]) -> None:
        try:
            project = Project.load(self.root, at="HEAD")
            driver.answer(project, run_id, decision, lambda event: None,
                          allow_local=self.allow_local, question=interrupt)
        except PortwrightError as exc:
            logger.warning("run %s: the decision could not resume it: %s", run_id, exc)
            with self._lock:
                self._failures[run_id] = exc.render() if isinstance(exc, UsageError) \
                    else str(exc)
        except Exception as exc:  # a bug must reach the page, not vanish with its thread
            logger.exception("run %s: resuming failed", run_id)
            with self._lock:
                self._failures[run_id] = f"{type(exc).__name__}: {exc}"
        finally:
            with self._lock:
                self._inflight.pop(run_id, None)

    def join(self, timeout: float | None = None) -> None:
        """Wait for the decisions in flight (tests, a clean shutdown)."""
        for thread in list(self._threads):
            thread.join(timeout)


def check_spec(project: Project, checkpoints: Checkpoints, run_id: str, text: str) -> SpecCheck:
    """The run's ``spec`` gates on its branch with ``text`` as the spec, in a throwaway
    worktree (the run's own worktree is left alone)."""
    from portwright.gates import run_gates
    from portwright.gates._diff import name_status

    values = checkpoints.view(run_id).values
    spec_path, branch, base = (str(values.get(k, "")) for k in ("spec_path", "branch", "base"))
    if not (spec_path and branch and base):
        raise UsageError(f"run {run_id} has no spec yet", key="RUN")
    scratch = Path(tempfile.mkdtemp(prefix="spec-check-", dir=web_dir(project)))
    folder = scratch / "worktree"
    plumbing.git(project.root, "worktree", "add", "--detach", "--quiet", str(folder), branch)
    try:
        safefs.write_file(folder, spec_path, text.encode("utf-8"))
        checked = Project.load(folder, at=base)  # config and rules as the run obeys them
        changed = [c.path for c in name_status(folder, base)]
        results = run_gates(checked.rules(), "spec", sandbox=None, repo=folder,
                            config=checked.config, changed=changed, base=base)
    finally:
        remove_worktree(project.root, folder)
        shutil.rmtree(scratch, ignore_errors=True)
    return SpecCheck(all(r.passed for r in results),
                     [(r.name, r.passed, list(r.messages)) for r in results])
