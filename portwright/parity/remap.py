"""Re-locate the anchors of the parity records after upstream moved.

:func:`remap_records` looks up every anchor of the specs and of the ledger's upstream column
at a new upstream revision, by content (:func:`~portwright.evidence.anchors.remap_anchor`),
rewrites the ones it placed (only their own bytes), moves each spec's ``pin`` to the new
revision and reports the ones it could not place. It is all or nothing: when one anchor
cannot be placed no file is written (a half-moved record would pass ``anchors check``
against a pin it was never checked at).
"""

from __future__ import annotations

import logging
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from portwright.config import PortwrightConfig
from portwright.evidence.anchors import BlobReader, iter_anchor_matches, remap_anchor
from portwright.parity._files import glob_files, read_text, rel, write_text
from portwright.parity.ledger import parse_ledger
from portwright.parity.pin import read_pin, write_pin
from portwright.parity.spec import parse_spec, set_front_matter_scalar

logger = logging.getLogger(__name__)

__all__ = ["Moved", "RemapReport", "Unplaced", "remap_records"]


class Moved(BaseModel):
    """An anchor that was re-located."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    where: str
    """``file:line`` where it is written."""
    old: str
    """The anchor before."""
    new: str
    """The anchor after."""


class Unplaced(BaseModel):
    """An anchor that could not be re-located."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    where: str
    """``file:line`` where it is written."""
    anchor: str
    """The anchor."""
    reason: str
    """Why it could not be placed."""


class RemapReport(BaseModel):
    """What :func:`remap_records` did."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    to: str
    """Full sha of the revision the anchors were re-located at."""
    moved: list[Moved] = Field(default_factory=list)
    """Anchors rewritten."""
    unplaced: list[Unplaced] = Field(default_factory=list)
    """Anchors left as they were, with the reason."""
    dry_run: bool = False
    """Nothing was written because it was asked not to be."""
    written: bool = False
    """The records were rewritten (never when an anchor could not be placed)."""
    pin_moved: bool = False
    """The pin now records ``to``."""


def remap_records(repo: Path, config: PortwrightConfig, upstream_path: Path, to: str, *,
                  dry_run: bool = False, move_pin: bool = False) -> RemapReport:
    """Re-locate every anchor of the specs and the ledger at ``to``."""
    from portwright.vcs.git import open_repo

    upstream = open_repo(upstream_path, what="the upstream checkout")
    reader = BlobReader(upstream)
    target = reader.commit(to)
    pin = read_pin(repo, config)
    folder = config.artifacts.specs.rstrip("/")
    files = glob_files(repo, [f"{folder}/**/*.md"])
    ledger = repo / config.artifacts.ledger
    if ledger.is_file():
        files.append(ledger)
    moved: list[Moved] = []
    lost: list[Unplaced] = []
    writes: list[tuple[Path, str]] = []
    for path in files:
        text = read_text(path)
        relpath = rel(repo, path)
        default, spec_pin = pin, None
        cited: set[tuple[int, str]] | None = None  # in the ledger: its upstream column only
        if path == ledger:
            entries, _ = parse_ledger(text, relpath)
            cited = {(e.line, e.anchor.render()) for e in entries if e.anchor is not None}
        else:
            spec_pin = parse_spec(text, path, relpath).pin
            default = spec_pin or pin
        pieces: list[str] = []
        last = 0
        for found in iter_anchor_matches(text):
            if cited is not None and (found.line, found.anchor.render()) not in cited:
                continue
            outcome = remap_anchor(upstream, found.anchor, default, target, reader=reader)
            where = f"{relpath}:{found.line}"
            if outcome.new is None:
                lost.append(Unplaced(where=where, anchor=found.anchor.render(),
                                     reason=outcome.reason))
            elif outcome.new != found.anchor:
                moved.append(Moved(where=where, old=found.anchor.render(),
                                   new=outcome.new.render()))
                pieces += [text[last:found.start], outcome.new.render()]
                last = found.end
        new_text = "".join(pieces) + text[last:]
        if spec_pin is not None and spec_pin != target:
            new_text = set_front_matter_scalar(new_text, "pin", target)
        if new_text != text:
            writes.append((path, new_text))
    write = not dry_run and not lost
    for path, new_text in writes if write else []:
        write_text(repo, path, new_text)
        logger.info("remapped anchors in %s", rel(repo, path))
    if move_pin and write:
        write_pin(repo, config, target)
    return RemapReport(to=target, moved=moved, unplaced=lost, dry_run=dry_run,
                       written=write and bool(writes), pin_moved=move_pin and write)
