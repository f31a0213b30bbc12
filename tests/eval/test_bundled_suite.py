"""The bundled suite of real ports (benchmarks/port-tasks/, its examples/ aside) loads, and
holds what the issue asks of it.

Whether each task is valid needs the real clones and Docker: `portwright eval validate
benchmarks/port-tasks --repos DIR` (see benchmarks/port-tasks/README.md).
"""

from __future__ import annotations

import re
from pathlib import Path

from portwright.eval.tasks import PortTask, load_suite

SUITE = Path(__file__).resolve().parents[2] / "benchmarks" / "port-tasks"
SHA = re.compile(r"[0-9a-f]{40}")


def real_tasks() -> list[PortTask]:
    """The tasks of the real pairs: every folder but examples/ (the bundled examples, whose
    repositories are built at test time)."""
    return [t for t in load_suite(SUITE).tasks
            if t.file.relative_to(SUITE).parts[0] != "examples"]


def test_the_bundled_suite_loads_with_twenty_tasks_over_three_pairs() -> None:
    tasks = real_tasks()
    pairs = {(t.upstream.repo, t.downstream.repo) for t in tasks}
    languages = {t.languages for t in tasks}
    assert len(tasks) >= 20
    assert len(pairs) >= 3
    assert len(languages) >= 2
    assert "" not in languages


def test_bundled_tasks_name_full_shas_and_printable_test_ids() -> None:
    for task in real_tasks():
        revisions = [*task.upstream.commits, task.downstream.parent, task.downstream.port]
        assert all(SHA.fullmatch(r) for r in revisions), task.id
        # pytest prints parameter ids escaped (a newline as backslash-n): an id holding a
        # control character could never match a summary line
        assert all(i.isprintable() for i in task.hidden.tests), task.id
        assert task.id.split("/")[0] == task.file.parent.name
