"""Records that cannot silently shrink: each record signs its predecessor's signature and
the store keeps a signed head (how many records, the last one's signature). A record
removed from the middle or the end, two records swapped, or a head put back from earlier
is named by the store, by `portwright log` (exit 1) and by the red-green gate."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from portwright.config import PortwrightConfig
from portwright.gates.checks import check_red_green
from portwright.runs import RunStore
from portwright.runs.models import EvidenceKind, EvidenceRecord
from tests.parity.world import World


def _record(n: int, kind: EvidenceKind = EvidenceKind.GATE) -> EvidenceRecord:
    return EvidenceRecord(gate=f"g{n}", kind=kind, command="true", exit_code=0, passed=True,
                          duration=0.1, commit="a" * 40, timestamp=datetime.now(UTC))


def _filled(store: RunStore, count: int = 4, config: PortwrightConfig | None = None
            ) -> list[Path]:
    if config is not None:
        store.write_manifest(command="test", commit="a" * 40, rules_digests={}, config=config)
    return [store.add(_record(n)) for n in range(1, count + 1)]


def test_an_untouched_chain_verifies(store: RunStore) -> None:
    _filled(store)
    assert store.untrusted() == []
    assert [r.seq for r in store.records()] == [1, 2, 3, 4]


def test_a_record_removed_from_the_middle_is_named(store: RunStore) -> None:
    paths = _filled(store)
    paths[1].unlink()
    problems = [p.render() for p in store.untrusted()]
    assert any("record 2 is missing" in p for p in problems), problems


def test_records_removed_at_the_end_are_named(store: RunStore) -> None:
    paths = _filled(store)
    paths[3].unlink()
    paths[2].unlink()
    problems = [p.render() for p in store.untrusted()]
    assert any("4 records were signed, 2 remain" in p for p in problems), problems


def test_a_head_put_back_from_earlier_is_named(store: RunStore) -> None:
    _filled(store, 2)
    head = (store.dir / "chain.json").read_bytes()
    store.add(_record(3))
    (store.dir / "chain.json").write_bytes(head)
    problems = [p.render() for p in store.untrusted()]
    assert any("chain" in p for p in problems), problems


def test_a_deleted_head_is_named(store: RunStore) -> None:
    _filled(store, 2)
    (store.dir / "chain.json").unlink()
    problems = [p.render() for p in store.untrusted()]
    assert any("head of the chain is missing" in p for p in problems), problems


def test_two_records_swapped_are_named(store: RunStore) -> None:
    paths = _filled(store, 3)
    one = json.loads(paths[0].read_text())
    two = json.loads(paths[1].read_text())
    paths[0].write_text(json.dumps({**two, "seq": 1}))
    paths[1].write_text(json.dumps({**one, "seq": 2}))
    assert store.untrusted()


def test_the_red_green_gate_refuses_a_shrunk_chain(world: World, store: RunStore) -> None:
    _filled(store, 1)
    red = store.add(_record(2, EvidenceKind.RED))
    store.add(_record(3, EvidenceKind.GATE))
    store.add(_record(4, EvidenceKind.GREEN))
    red.unlink()  # the red that would have failed the gate is gone
    verdict = check_red_green(world.repo, store, tests=["tests/**"])
    assert not verdict.passed
    assert any("missing" in m for m in verdict.messages), verdict.messages


def test_log_names_a_missing_record_and_exits_1(world: World, store: RunStore) -> None:
    paths = _filled(store, 3, world.config())
    paths[1].unlink()
    done = subprocess.run([sys.executable, "-m", "portwright", "-C", str(world.repo), "log",
                           store.run_id], capture_output=True, text=True, check=False,
                          timeout=120, env={k: v for k, v in os.environ.items()
                                            if k != "PORTWRIGHT_STATE_DIR"})
    assert done.returncode == 1, done.stdout + done.stderr
    assert "record 2 is missing" in done.stderr
    assert "all signed" not in done.stderr


def test_records_of_older_runs_without_a_chain_still_verify(store: RunStore) -> None:
    """A run written before chains (no ``prev`` in its records, no head) reads as before."""
    paths = _filled(store, 2)
    (store.dir / "chain.json").unlink()
    key = store._signing_key()
    for path in paths:
        data = json.loads(path.read_text())
        data.pop("prev", None)
        record = EvidenceRecord.model_validate({**data, "mac": None})
        path.write_text(record.model_copy(update={"mac": record.sign(key)})
                        .model_dump_json(exclude={"prev"}))
    assert store.untrusted() == []



def test_the_next_record_does_not_mend_a_chain_cut_at_the_end(store: RunStore) -> None:
    paths = _filled(store, 3)
    paths[2].unlink()
    (store.dir / "chain.json").unlink()
    store.add(_record(9))  # numbered 3 again: it must not pass for the removed one
    assert store.untrusted(), "a cut chain read as whole after one more record"
