"""Budgets the framework enforces on model use, per run and per role, and the cost of usage.

A :class:`Meter` sums what one scope used (tokens, cost, calls — failed and unparseable
calls included — and wall time) against its :class:`~portwright.config.ModelBudget`.
:class:`RunBudget` holds the run's meter and one meter per role; a role's
:class:`RoleBudget` charges both and is exhausted when either is.
"""

from __future__ import annotations

import logging

from pydantic import BaseModel, ConfigDict

from portwright.agents.llm import Usage
from portwright.config import ModelBudget, Price
from portwright.errors import BudgetExhausted

logger = logging.getLogger(__name__)


def cost_usd(usage: Usage, price: Price | None) -> float:
    """Cost of ``usage`` at ``price`` (per million tokens); 0 when the model has no price."""
    if price is None:
        return 0.0
    cached = min(usage.cached_tokens, usage.prompt_tokens)
    cached_price = price.prompt if price.cached is None else price.cached
    return (
        (usage.prompt_tokens - cached) * price.prompt
        + cached * cached_price
        + usage.completion_tokens * price.completion
    ) / 1_000_000


class Spent(BaseModel):
    """What one scope used so far."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    usage: Usage = Usage()
    """Tokens, summed over calls."""
    cost_usd: float = 0.0
    """Cost in US dollars, from the price table."""
    calls: int = 0
    """Model calls, failed and unparseable ones included."""
    failed_calls: int = 0
    """Calls that raised (endpoint error after retries)."""
    invalid_replies: int = 0
    """Replies the loop could not use: bad JSON, unknown tool, arguments off schema."""
    wall_seconds: float = 0.0
    """Wall time spent in the agent loop."""


class Meter:
    """Usage of one scope against its limits (``0`` means unlimited)."""

    def __init__(self, limits: ModelBudget, scope: str) -> None:
        self.limits = limits
        self.scope = scope
        self.spent = Spent()

    def charge(self, usage: Usage, cost: float, *, failed: bool = False) -> None:
        self.spent.usage = self.spent.usage + usage
        self.spent.cost_usd += cost
        self.spent.calls += 1
        if failed:
            self.spent.failed_calls += 1

    def charge_invalid(self) -> None:
        self.spent.invalid_replies += 1

    def charge_time(self, seconds: float) -> None:
        self.spent.wall_seconds += seconds

    def check(self) -> None:
        """Raise :class:`BudgetExhausted` when any limit is reached."""
        limits, spent = self.limits, self.spent
        pairs: list[tuple[str, float, float]] = [
            ("tokens", spent.usage.total_tokens, limits.tokens),
            ("cost_usd", spent.cost_usd, limits.cost_usd),
            ("calls", spent.calls, limits.calls),
            ("wall_seconds", spent.wall_seconds, limits.wall_seconds),
        ]
        for name, used, limit in pairs:
            if limit and used >= limit:
                raise BudgetExhausted(name, used, limit, scope=self.scope)


class RoleBudget:
    """The budget one role's loop charges: its own meter and the run's."""

    def __init__(self, role: Meter, run: Meter, prices: dict[str, Price]) -> None:
        self.role = role
        self.run = run
        self.prices = prices

    def cost(self, model: str, usage: Usage) -> float:
        return cost_usd(usage, self.prices.get(model))

    def charge(self, model: str, usage: Usage, *, failed: bool = False) -> float:
        cost = self.cost(model, usage)
        for meter in (self.role, self.run):
            meter.charge(usage, cost, failed=failed)
        return cost

    def charge_invalid(self) -> None:
        for meter in (self.role, self.run):
            meter.charge_invalid()

    def charge_time(self, seconds: float) -> None:
        for meter in (self.role, self.run):
            meter.charge_time(seconds)

    def check(self) -> None:
        """Raise :class:`BudgetExhausted` naming the first scope (role, then run) that ran out."""
        self.role.check()
        self.run.check()


class RunBudget:
    """A run's budget and its roles' budgets, from ``[model]`` of portwright.toml."""

    def __init__(
        self,
        budget: ModelBudget,
        role_budgets: dict[str, ModelBudget] | None = None,
        prices: dict[str, Price] | None = None,
    ) -> None:
        self.run = Meter(budget, "run")
        self.role_limits = dict(role_budgets or {})
        self.prices = dict(prices or {})
        self.roles: dict[str, Meter] = {}

    def for_role(self, role: str) -> RoleBudget:
        """The budget of ``role`` (unlimited on its own when the config sets none)."""
        if role not in self.roles:
            limits = self.role_limits.get(role, ModelBudget(tokens=0, cost_usd=0, calls=0,
                                                            wall_seconds=0))
            self.roles[role] = Meter(limits, f"role {role}")
        return RoleBudget(self.roles[role], self.run, self.prices)

    def report(self) -> dict[str, Spent]:
        """What the run and each role spent."""
        out = {"run": self.run.spent}
        out.update({name: meter.spent for name, meter in self.roles.items()})
        return out
