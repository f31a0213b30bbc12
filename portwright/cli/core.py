"""CLI commands of the foundation: init, rules check, doctor."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add the foundation's commands to ``app``."""
