"""The data of a surface enumeration: its items and the report.

Public API: ``ItemKind``, ``Language``, ``LANGUAGES``, ``SurfaceItem``, ``SurfaceReport``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

ItemKind = Literal["function", "parameter", "branch", "guard", "raise", "throw", "assert",
                   "dtype", "layout", "env", "config", "context", "global", "helper", "test",
                   "parametrize", "fixture", "value", "entry"]
Language = Literal["python", "javascript", "typescript", "tsx", "cpp", "re2c"]

LANGUAGES: dict[str, Language] = {
    ".py": "python", ".pyi": "python", ".js": "javascript", ".mjs": "javascript",
    ".cjs": "javascript", ".jsx": "javascript", ".ts": "typescript", ".mts": "typescript",
    ".tsx": "tsx", ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp",
    ".h": "cpp", ".c": "cpp", ".cu": "cpp", ".cuh": "cpp", ".re": "re2c",
}


class SurfaceItem(BaseModel):
    """One item of the surface of a symbol."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: ItemKind
    """What sort of item (see :mod:`portwright.evidence.surface`)."""
    name: str
    """Its name: the parameter, condition, exception, dtype, variable, helper or test id."""
    detail: str
    """The source text that establishes it (a default, a condition, a message)."""
    anchor: str
    """``path:line@sha`` at the enumerated revision."""


class SurfaceReport(BaseModel):
    """The surface of one upstream symbol at one revision."""

    model_config = ConfigDict(extra="forbid")

    symbol: str
    """As asked for."""
    rev: str
    """Full sha of the revision enumerated."""
    language: Language
    """Language of the defining file."""
    definition: str
    """Anchor of the definition."""
    items: list[SurfaceItem]
    """Every item found, definition items first, then tests and fixtures."""

    def of_kind(self, kind: ItemKind) -> list[SurfaceItem]:
        """The items of one kind."""
        return [item for item in self.items if item.kind == kind]
