"""Traceability: which names a downstream change adds can be traced to upstream at the pin.

Public API:

- ``trace_changes(downstream: Path, upstream: Path, base: str, pin: str,
  config: PortwrightConfig, *, head: str = "HEAD") -> TraceReport``

For every distinctive identifier the downstream change ``base..head`` adds (present in an
added line of a source or tests file, absent from the tree of ``base``), the report gives the
upstream identifier at the pin with the same canonical key (see
:mod:`portwright.evidence.names`), or none: names that are mechanically traceable to upstream,
and names that were invented.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from portwright.config import PortwrightConfig
from portwright.evidence import names, tokens
from portwright.evidence.lookup import TreeView, present_in_tree
from portwright.evidence.patch import classify, range_patch
from portwright.vcs.plumbing import check_repo, rev_parse

logger = logging.getLogger(__name__)


class TraceItem(BaseModel):
    """One identifier the downstream change adds."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    """The identifier, as the downstream spells it."""
    downstream_anchor: str
    """First added line that carries it: ``path:line``."""
    status: Literal["traced", "invented"]
    """``traced`` when upstream has a name with the same canonical key at the pin."""
    upstream_name: str | None = None
    """The upstream spelling."""
    upstream_anchor: str | None = None
    """Where upstream has it: ``path:line@pin``."""
    how: Literal["same spelling", "normalised", "test title", None] = None
    """Whether the spelling is identical, only the canonical key matches, or (for a test
    function) an upstream test title has the same words."""


class TraceReport(BaseModel):
    """The names a downstream change adds, each traced to upstream or not."""

    model_config = ConfigDict(extra="forbid")

    base: str
    """Downstream base (full sha)."""
    head: str
    """Downstream head (full sha)."""
    pin: str
    """Upstream pin (full sha)."""
    items: list[TraceItem]
    """In the order the change introduces them."""

    def counts(self) -> dict[str, int]:
        """Number of traced and invented names."""
        traced = sum(1 for item in self.items if item.status == "traced")
        return {"traced": traced, "invented": len(self.items) - traced}


def _trace_one(name: str, anchor: str, upstream: TreeView,
               path_kinds: Mapping[str, list[str]]) -> TraceItem:
    order = {"source": 0, "tests": 1}
    hits = sorted(upstream.find_name(name),
                  key=lambda loc: order.get(classify(loc.path, path_kinds), 2))
    exact = [h for h in hits if h.text == name]
    ranked = exact or hits
    how: Literal["same spelling", "normalised", "test title"] = (
        "same spelling" if exact else "normalised")
    words = [w for w in names.split_words(name) if w != "test"]
    if not ranked and name.lower().startswith("test") and len(words) >= 2:
        ranked = upstream.find_literal(" ".join(words))
        how = "test title"
    if not ranked:
        return TraceItem(name=name, downstream_anchor=anchor, status="invented")
    hit = ranked[0]
    return TraceItem(name=name, downstream_anchor=anchor, status="traced",
                     upstream_name=hit.text,
                     upstream_anchor=f"{hit.path}:{hit.line}@{upstream.sha}", how=how)


def trace_changes(downstream: Path, upstream: Path, base: str, pin: str,
                  config: PortwrightConfig, *, head: str = "HEAD") -> TraceReport:
    """Trace the identifiers that ``base..head`` adds in the downstream to upstream at
    ``pin``."""
    downstream = check_repo(downstream, "downstream repository")
    upstream = check_repo(upstream, "upstream checkout")
    base_sha, head_sha = rev_parse(downstream, base), rev_parse(downstream, head)
    pin_sha = rev_parse(upstream, pin)
    first_seen: dict[str, str] = {}
    for patch in range_patch(downstream, base_sha, head_sha):
        if classify(patch.path, config.upstream.path_kinds) not in ("source", "tests"):
            continue
        for number, text in patch.added:
            for name in tokens.code_identifiers(text):
                if tokens.distinctive(name) and name not in first_seen:
                    first_seen[name] = f"{patch.path}:{number}"
    existing = present_in_tree(downstream, base_sha, first_seen, words=True)
    upstream_tree = TreeView(upstream, pin_sha)
    items: list[TraceItem] = []
    for name, anchor in first_seen.items():
        if name in existing:
            continue
        items.append(_trace_one(name, anchor, upstream_tree, config.upstream.path_kinds))
    logger.info("traced %d new downstream names", len(items))
    return TraceReport(base=base_sha, head=head_sha, pin=pin_sha, items=items)
