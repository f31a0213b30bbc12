"""A flood of unique test ids (a command printing hundreds of thousands of ``PASSED`` lines
with ids of its own making) is counted and capped: the record stays one the store reads
back, host memory stays bounded, and a red or focused record that lost ids fails."""

from __future__ import annotations

from portwright.gates.command import MAX_IDS, run_command
from portwright.runs import RunStore
from portwright.runs.models import EvidenceKind
from portwright.sandboxes.local import LocalSandbox
from tests.parity.world import World

FLOOD = ("python3 -c \"import sys\nw = sys.stdout.write\n"
         "for i in range(200000): w('PASSED tests/test_flood.py::test_%07d_%s\\\\n' "
         "% (i, 'x' * 120))\"")


def test_a_flood_of_unique_ids_is_capped_and_the_record_reads_back(
        world: World, sandbox: LocalSandbox, store: RunStore) -> None:
    record, _ = run_command(sandbox, FLOOD, repo=world.repo, name="flood",
                            kind=EvidenceKind.GATE, store=store)
    assert len(record.tests_passed) <= MAX_IDS
    assert any("test ids" in m and "200000" in m for m in record.messages), record.messages
    assert [r.gate for r in store.records()] == ["flood"]  # the store reads it back


def test_a_focused_record_that_lost_ids_fails(world: World, sandbox: LocalSandbox,
                                             store: RunStore) -> None:
    record, _ = run_command(sandbox, FLOOD, repo=world.repo, name="flood",
                            kind=EvidenceKind.GREEN, store=store)
    assert not record.passed
