"""Record files a command turned into links (or put behind a linked folder) are never
written through: the host's writer refuses them, naming the file, and the file outside the
worktree keeps its bytes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from portwright.errors import ParityFileError
from portwright.parity.inventory import add_item
from portwright.parity.ledger import add_entry
from portwright.parity.matrix import update_row
from portwright.parity.pin import write_pin
from tests.parity.world import World

OUTSIDE = b"[core]\n\trepositoryformatversion = 0\n"

WRITES: dict[str, tuple[str, Callable[[World], object]]] = {
    "ledger": ("parity-ledger.md", lambda w: add_entry(
        w.repo, w.config(), change="src/x.py", upstream="attn/fp8.py:4", kind="port")),
    "matrix": ("docs/parity/models.md", lambda w: update_row(
        w.repo, w.config(), "attn-fp8", status="ported")),
    "inventory": ("porting-inventory.md", lambda w: add_item(
        w.repo, w.config(), item="x", path="src/x.py", searched=["attn/"])),
    "pin": ("upstream-sync.md", lambda w: write_pin(w.repo, w.config(), "0" * 40)),
}


def _target(world: World) -> Path:
    target = world.repo.parent / "outside" / "config"
    target.parent.mkdir()
    target.write_bytes(OUTSIDE)
    return target


@pytest.mark.parametrize("record", sorted(WRITES))
def test_a_record_that_is_a_link_is_not_written_through(world: World, record: str) -> None:
    rel, write = WRITES[record]
    target = _target(world)
    text = (world.repo / rel).read_bytes()
    (world.repo / rel).unlink()
    target.write_bytes(text)  # the link leads to a file the writer would accept
    (world.repo / rel).symlink_to(target)
    with pytest.raises(ParityFileError) as caught:
        write(world)
    assert rel in str(caught.value)
    assert target.read_bytes() == text


@pytest.mark.parametrize("record", ["matrix"])
def test_a_record_behind_a_linked_folder_is_not_written_through(world: World,
                                                                record: str) -> None:
    rel, write = WRITES[record]
    folder = world.repo / rel.rsplit("/", 1)[0]
    elsewhere = world.repo.parent / "elsewhere"
    folder.rename(elsewhere)
    folder.symlink_to(elsewhere)
    before = (elsewhere / rel.rsplit("/", 1)[1]).read_bytes()
    with pytest.raises(ParityFileError):
        write(world)
    assert (elsewhere / rel.rsplit("/", 1)[1]).read_bytes() == before
