"""What a gate is given (:class:`GateContext`) and what it returns (:class:`GateResult`):
the types the runner and the built-in checks share, so neither imports the other's
module for them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from portwright.runs.models import EvidenceRecord

if TYPE_CHECKING:
    from portwright.config import PortwrightConfig
    from portwright.rules import Phase, ResolvedGate, Rules
    from portwright.runs.store import RunStore
    from portwright.sandboxes.base import Sandbox
    from portwright.vcs.git import Repo

__all__ = ["GateContext", "GateResult"]


class GateResult(BaseModel):
    """The verdict of one gate: a command run in the sandbox, or a built-in check."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    """Gate name (nested gates: ``dir:name``)."""
    passed: bool
    """Whether the gate passed."""
    messages: list[str] = Field(default_factory=list)
    """What was wrong (or notable), each naming ``file:line`` where there is one."""
    check: str | None = None
    """The built-in check, for a check gate."""
    command: str | None = None
    """The command, for a command gate."""
    record: EvidenceRecord | None = None
    """The evidence recorded for this gate."""

    def summary(self) -> str:
        head = f"{'ok  ' if self.passed else 'FAIL'} {self.name}"
        return head if not self.messages else head + "\n" + "\n".join(
            f"    {m}" for m in self.messages)


def result(name: str, messages: list[str], *, check: str | None = None,
           notes: list[str] | None = None) -> GateResult:
    """A check's result: it passes when ``messages`` (the failures) is empty."""
    return GateResult(name=name, passed=not messages, messages=messages + (notes or []),
                      check=check)


@dataclass
class GateContext:
    """Everything a built-in check may look at."""

    repo: Path
    """The downstream worktree."""
    config: PortwrightConfig
    """Its portwright.toml."""
    rules: Rules
    """Its AGENTS.md rules."""
    gate: ResolvedGate
    """The gate being run."""
    base: str | None = None
    """Downstream revision the change is measured from (diff ``base..HEAD``)."""
    head: str = "HEAD"
    """Downstream revision the change is measured to: the sha of HEAD when the gate's
    snapshot of the worktree was taken (what its record names), else ``HEAD``."""
    changed: list[str] | None = None
    """Paths the change touches (None: unknown, check everything)."""
    sandbox: Sandbox | None = None
    """The sandbox, for checks that run a command (runtime-config)."""
    store: RunStore | None = None
    """The run store, for checks that read evidence (red-green)."""
    phase: Phase | None = None
    """The phase being guarded: command gates of ``red`` record red evidence (and pass when
    the tests fail), those of ``focused`` record green evidence."""
    _upstream: Repo | None = field(default=None, repr=False)

    @property
    def options(self) -> dict[str, str | int | float | bool | list[str]]:
        return dict(self.gate.spec.options)

    def upstream(self) -> Repo:
        """The upstream repository (:meth:`Project.upstream_repo`)."""
        if self._upstream is None:
            from portwright.project import Project

            self._upstream = Project(self.repo, self.config).upstream_repo()
        return self._upstream
