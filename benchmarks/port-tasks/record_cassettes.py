"""Re-record the replay cassettes of the bundled suite's real pairs (every task outside
``examples/``): ``cassettes/<task slug>.<mode>.jsonl``, one per task and mode, beside the
examples' (``examples/record_cassettes.py``).

``portwright eval run benchmarks/port-tasks --replay benchmarks/port-tasks/cassettes
--repos DIR`` plays the agents of the whole suite from these, with no model endpoint. The
model they hold is an *oracle*: a scripted model that answers each task from its real
porting commit (the task's ``downstream.port``), served on a local OpenAI-compatible
endpoint and driven through ``portwright eval run --record`` (``recording.py``, shared with
the examples' recorder). It needs the real clones (``DIR/<owner>/<name>``, see README.md)
and Docker; nothing is fetched.

- cycle: the gap is ``missing``, its evidence a line of upstream at the pin that the
  upstream change touches first (``path:line``, checked to exist there); every surface item
  ported; the tests first: the port commit's changes to test paths (for fixture-driven
  suites, such as markdown-it-py's, the fixture files), which must fail before the
  implementation; then the port commit's other changes; an approving review;
- loop: the port commit's files written (the tests too: scoring puts every test path the
  agent changed back as it was at ``parent`` before it applies the hidden paths), files the
  port deletes removed, the suite run once (its output kept out of the transcript: only
  whether it passed), then ``done``.

A file the port deletes stays in the cycle's tree (the scripted implementer writes files;
it has no command to remove one).

    python benchmarks/port-tasks/record_cassettes.py --repos DIR [--mode cycle|loop]
        [--only TASK_ID ...] [--out DIR]
"""

from __future__ import annotations

import argparse
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))
from recording import CASSETTES, MODEL, MODES, record, show  # noqa: E402

if TYPE_CHECKING:
    from portwright.agents.offline import ScriptedModel
    from portwright.eval.repos import ResolvedTask
    from portwright.eval.tasks import PortTask

EXAMPLES = "examples"


def real_tasks(only: list[str] | None = None) -> list[PortTask]:
    """The tasks of the real pairs (every folder but ``examples/``), or those of ``only``."""
    from portwright.eval.tasks import load_suite

    tasks = [t for t in load_suite(HERE).tasks
             if t.file.relative_to(HERE).parts[0] != EXAMPLES]
    if only:
        missing = set(only) - {t.id for t in tasks}
        if missing:
            raise SystemExit(f"no such real task: {', '.join(sorted(missing))}")
        tasks = [t for t in tasks if t.id in only]
    return tasks


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout


@dataclass(frozen=True)
class PortFiles:
    """What the real porting commit changes, as the oracle writes it."""

    tests: dict[str, str]
    """Test paths (the default path kinds' ``tests``), as at ``port``."""
    implementation: dict[str, str]
    """Every other path the port adds or changes, as at ``port``."""
    deleted: list[str]
    """Paths the port deletes (a rename: deleted and added)."""


def port_files(resolved: ResolvedTask) -> PortFiles:
    """The files ``parent..port`` changes, split into tests and the rest, each group in
    ascending size (a large generated file last: the fewer requests repeat it, the smaller
    the cassette)."""
    from portwright.pathkinds import classify, default_path_kinds

    kinds = default_path_kinds()
    repo = resolved.downstream
    out = _git(repo, "diff", "--name-status", "--no-renames", "-z", resolved.parent,
               resolved.port).split("\0")
    changes = list(zip(out[0::2], out[1::2], strict=False))
    deleted = sorted(path for status, path in changes if status == "D")
    files = {path: show(repo, resolved.port, path) for status, path in changes
             if path and status != "D"}
    ordered = dict(sorted(files.items(), key=lambda item: (len(item[1]), item[0])))
    tests = {p: t for p, t in ordered.items() if classify(p, kinds) == "tests"}
    return PortFiles(tests=tests,
                     implementation={p: t for p, t in ordered.items() if p not in tests},
                     deleted=deleted)


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+", re.MULTILINE)


def upstream_anchor(resolved: ResolvedTask) -> tuple[str, str]:
    """A ``path:line`` of upstream at the pin that the upstream change touches first (a
    source file before a test file), and what it shows; the line is checked to exist."""
    from portwright.pathkinds import classify, default_path_kinds

    kinds = default_path_kinds()
    up, pin, last = resolved.upstream, resolved.pin, resolved.commits[-1]
    paths = [p for p in _git(up, "diff", "--name-only", "--no-renames", "-z", pin,
                             last).split("\0") if p]
    at_pin = set(_git(up, "ls-tree", "-r", "--name-only", "-z", pin).split("\0"))
    paths = sorted((p for p in paths if p in at_pin),
                   key=lambda p: (classify(p, kinds) != "source", p))
    for path in paths:
        hunk = _HUNK.search(_git(up, "diff", "-U0", pin, last, "--", path))
        if hunk is None:
            continue
        lines = len(show(up, pin, path).splitlines())
        line = min(max(int(hunk[1]), 1), lines)
        if line >= 1:
            return (f"{path}:{line}", f"{path} at the pin, where upstream {last[:12]} "
                                      "changes it; the port does not carry the change")
    raise SystemExit(f"{resolved.task.id}: the upstream change touches no file of the pin")


def oracle(task: PortTask, repos: Path) -> ScriptedModel:
    """The model that ports ``task`` as its real porting commit did, in both modes."""
    from portwright.eval.harness import test_gate_command
    from portwright.eval.repos import resolve
    from tests.eval.scripted import LoopPlan, both_modes
    from tests.workflows.porter import Plan

    resolved = resolve(task, repos)
    files = port_files(resolved)
    ref, detail = upstream_anchor(resolved)
    cycle = Plan(
        gap={"status": "missing",
             "reasoning": f"upstream changes this after the pin ({task.title}); the port "
                          "does not carry it",
             "evidence": [{"kind": "upstream", "ref": ref, "detail": detail}]},
        answers={}, tests=files.tests, implementation=files.implementation)
    commands = [f"rm -f {' '.join(shlex.quote(p) for p in files.deleted)}"] \
        if files.deleted else []
    commands.append(f"( {test_gate_command(task)}\n) >/dev/null 2>&1 && echo green")
    loop = LoopPlan(files={**files.tests, **files.implementation}, commands=commands,
                    summary=f"Ported {task.title} from upstream with its tests; they pass.")
    return both_modes(cycle, loop, model=MODEL)


def scripted_model(tasks: list[PortTask], repos: Path) -> ScriptedModel:
    """One model for every task (each request answered by the oracle of its row)."""
    from portwright.eval.harness import row_id
    from tests.eval.scripted import by_row

    models = {row_id(task): oracle(task, repos) for task in tasks}
    return by_row(models, model=MODEL)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repos", type=Path, default=None,
                        help="the clones (DIR/<owner>/<name>); default $PORTWRIGHT_EVAL_REPOS")
    parser.add_argument("--mode", choices=MODES, action="append",
                        help="record this mode only (repeatable; default both)")
    parser.add_argument("--only", action="append", metavar="TASK_ID",
                        help="record this task only (repeatable; default every real task)")
    parser.add_argument("--out", type=Path, default=None,
                        help="keep the runs' output folder here (results, workspaces, "
                             "reports); default a temporary folder")
    args = parser.parse_args(argv)
    from portwright.eval.repos import repos_root

    repos = repos_root(args.repos)
    tasks = real_tasks(args.only)
    model = scripted_model(tasks, repos)
    with tempfile.TemporaryDirectory(prefix="eval-record-real-") as name:
        scratch = args.out.resolve() if args.out else Path(name)
        suites = [task.file for task in tasks] if args.only else sorted(
            {task.file.parent for task in tasks})
        code = record(suites, repos, model, scratch, modes=args.mode or MODES)
    size = sum(p.stat().st_size for t in tasks for p in CASSETTES.glob(f"{t.slug}.*.jsonl"))
    print(f"{len(tasks)} task(s): cassettes of {size / 1e6:.1f} MB in "
          f"{CASSETTES.relative_to(ROOT)}")
    return code


if __name__ == "__main__":
    sys.exit(main())
