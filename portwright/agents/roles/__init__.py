"""The four roles: gap verifier, enumerator, implementer, fresh reviewer."""

from __future__ import annotations

from typing import Any

from portwright.agents.roles import enumerator, gap_verifier, implementer, reviewer
from portwright.agents.roles.base import ContextLeak, Role, RoleContext, check_fresh

ROLES: dict[str, Role[Any, Any]] = {
    gap_verifier.ROLE.name: gap_verifier.ROLE,
    enumerator.ROLE.name: enumerator.ROLE,
    implementer.ROLE.name: implementer.ROLE,
    reviewer.ROLE.name: reviewer.ROLE,
}
"""Every role by name."""

__all__ = ["ROLES", "ContextLeak", "Role", "RoleContext", "check_fresh"]
