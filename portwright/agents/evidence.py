"""The evidence engines as tool sources: what the framework found, as text for the model.

:func:`gap_source` wraps :func:`portwright.evidence.gap.row_evidence`;
:func:`surface_source` wraps :func:`portwright.evidence.surface.enumerate_surface`.
Errors of the engines (a symbol with no definition, a bad revision) become
:class:`~portwright.errors.ToolError` answers the model can act on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path

from portwright.config import PortwrightConfig
from portwright.errors import PortwrightError, ToolError
from portwright.evidence.gap import RowEvidence, row_evidence
from portwright.evidence.lookup import Location
from portwright.evidence.surface import SurfaceReport, enumerate_surface

logger = logging.getLogger(__name__)

SHOWN = 10
"""Most locations listed per kind; the rest are counted."""


def _locations(title: str, found: Sequence[Location]) -> list[str]:
    if not found:
        return [f"  {title}: none"]
    lines = [f"  {title}: {len(found)}"]
    lines += [f"    {loc.path}:{loc.line}  {loc.text.strip()[:120]}" for loc in found[:SHOWN]]
    if len(found) > SHOWN:
        lines.append(f"    … {len(found) - SHOWN} more")
    return lines


def render_row_evidence(evidence: RowEvidence) -> str:
    """The row evidence as the gap verifier reads it."""
    lines = [f"upstream pin {evidence.pin[:12]}, upstream head {evidence.upstream_head[:12]}, "
             f"downstream head {evidence.downstream_head[:12]}"]
    for item in evidence.symbols:
        kind = "path" if item.is_path else "symbol"
        lines.append(f"{kind} {item.symbol}")
        lines += _locations("upstream at the pin", item.upstream_at_pin)
        lines += _locations("downstream at HEAD", item.downstream_at_head)
        if item.downstream_history:
            changes = ", ".join(f"{c.sha[:12]} ({c.delta:+d})"
                                for c in item.downstream_history[:SHOWN])
            lines.append(f"  downstream history: {changes}")
        else:
            lines.append("  downstream history: no commit changed it")
        if item.upstream_changes:
            shas = ", ".join(sha[:12] for sha in item.upstream_changes[:SHOWN])
            lines.append(f"  upstream changes after the pin: {shas}")
    return "\n".join(lines)


def candidate_labels(report: SurfaceReport) -> list[str]:
    """One label per surface item, as the enumerator must classify them: one line each
    (a condition that spans lines upstream has its whitespace collapsed), since the
    enumerator must write every label back exactly and the prompt lists one a line."""
    labels: list[str] = []
    for item in report.items:
        label = f"{item.kind}: {' '.join(item.name.split())}"
        if label in labels:
            label = f"{label} ({item.anchor})"
        labels.append(label)
    return labels


def render_surface(report: SurfaceReport) -> str:
    """The surface report as the enumerator reads it."""
    lines = [f"{report.symbol} ({report.language}) defined at {report.definition}"]
    for label, item in zip(candidate_labels(report), report.items, strict=True):
        lines.append(f"- {label}  [{item.anchor}]  {item.detail.strip()[:160]}")
    return "\n".join(lines)


def gap_source(upstream: Path, downstream: Path, pin: str, config: PortwrightConfig
               ) -> Callable[[list[str]], str]:
    """The ``gap_evidence`` tool's engine for one run."""

    def run(symbols: list[str]) -> str:
        try:
            found = row_evidence(upstream, downstream, symbols, pin, config)
        except PortwrightError as exc:
            raise ToolError(f"gap evidence failed: {exc}") from exc
        return render_row_evidence(found)

    return run


def surface_source(upstream: Path, pin: str, config: PortwrightConfig
                   ) -> Callable[[str], str]:
    """The ``surface_candidates`` tool's engine for one run."""

    def run(symbol: str) -> str:
        try:
            report = enumerate_surface(upstream, symbol, pin,
                                       path_kinds=config.upstream.path_kinds)
        except PortwrightError as exc:
            raise ToolError(f"surface enumeration failed: {exc}") from exc
        return render_surface(report)

    return run
