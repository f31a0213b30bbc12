"""The runs of a project as far as their state reads: what ``runs`` and ``status`` show.

A run is two things in the state folder: its run folder (``run.json``: what started it,
its commit and config; its evidence, transcripts and spend) and its checkpoint (where it
stands). Either may be lost without the other:

- the checkpoint database damaged, emptied or replaced: a run whose folder remains is
  still listed, from its folder, as *lost* (status ``unknown``), and a warning names the
  database and the fix;
- a ``run.json`` that does not read: a warning names the file, the run is shown from its
  checkpoint when there is one, and the other runs go on.

A checkpoint store that does not answer (Postgres down, a wrong password) is an error, not
a warning: nothing can be said about any run without it. Runs Temporal drives are left
to it (``temporal``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from portwright.config import CONFIG_FILE
from portwright.errors import RunStateError, UsageError
from portwright.project import Project
from portwright.runs.models import RunManifest
from portwright.workflows.checkpoints import KEY, checkpoint_file, open_checkpointer
from portwright.workflows.cycle import build_cycle
from portwright.workflows.driver import RunView, run_folders, view

UNKNOWN = "unknown"
"""The status of a lost run: its checkpoint, which holds where it stands, is gone."""


@dataclass(frozen=True)
class LostRun:
    """A run whose folder remains and whose checkpoint is lost: what its folder tells."""

    run_id: str
    manifest: RunManifest
    problem: str
    """What was lost, in a few words."""

    @property
    def row(self) -> str:
        """The row of the command that started it (``run ROW``), else ``-``."""
        words = self.manifest.command.split()
        return words[1] if len(words) > 1 and words[0] == "run" else "-"


@dataclass
class Survey:
    """The runs of the cycle in a project, as far as they read."""

    views: list[RunView] = field(default_factory=list)
    """Runs read from their checkpoints."""
    lost: list[LostRun] = field(default_factory=list)
    """Runs whose folder remains and whose checkpoint is lost."""
    temporal: list[str] = field(default_factory=list)
    """Runs Temporal drives (their state is the workflow's: ask it)."""
    warnings: list[UsageError] = field(default_factory=list)
    """What could not be read, each naming the file (or setting) and the fix."""


def survey(project: Project, only: str | None = None) -> Survey:
    """Every run of the cycle in ``project`` (or the run ``only``) as far as its state
    reads (see the module)."""
    out = Survey()
    local: dict[str, RunManifest | None] = {}
    for run_id, manifest in run_folders(project):
        if only is not None and run_id != only:
            continue
        if isinstance(manifest, RunStateError):
            out.warnings.append(manifest)
            local[run_id] = None  # its checkpoint may still say where it stands
        elif manifest.engine == "temporal":
            out.temporal.append(run_id)
        else:
            local[run_id] = manifest
    missing: list[LostRun] = []
    try:
        with open_checkpointer(project) as saver:
            graph = build_cycle().compile(checkpointer=saver)
            for run_id, started in local.items():
                try:
                    out.views.append(view(project, run_id, saver, graph=graph))
                except (UsageError, ValidationError):  # no checkpoint of the cycle's
                    if started is not None:
                        missing.append(LostRun(run_id, started, "no checkpoint of it"))
    except RunStateError as exc:  # the database is damaged: every checkpoint in it is lost
        out.warnings.append(exc)
        out.lost = [LostRun(run_id, started, "the checkpoint database is damaged")
                    for run_id, started in local.items() if started is not None]
        return out
    if missing:
        out.lost = missing
        out.warnings.append(_no_checkpoints(project, [run.run_id for run in missing]))
    return out


def _no_checkpoints(project: Project, run_ids: list[str]) -> RunStateError:
    """The warning for runs whose folders remain and whose checkpoints are not in the
    store."""
    which = (f"run {run_ids[0]}, whose run folder remains" if len(run_ids) == 1
             else f"runs {', '.join(run_ids)}, whose run folders remain")
    message = (f"holds no checkpoint of {which}: the database was emptied, replaced or "
               "removed since, or the runs were checkpointed in another store (or stopped "
               f"before their first step); listed from the run folders, status {UNKNOWN}")
    fix = ("put the database back from a copy, or set [runs] checkpoint_url back to the "
           "store they used; without it these runs cannot be resumed: start a new run of "
           "each row (`portwright run ROW`)")
    if project.config.runs.checkpoint_url:
        where: Path | str = project.config.origin(KEY, project.root / CONFIG_FILE)
        return RunStateError(f"the Postgres database {message}", file=where, key=KEY, fix=fix)
    return RunStateError(f"the checkpoint database {message}", file=checkpoint_file(project),
                         fix=fix)
