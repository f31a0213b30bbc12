"""What a gate returns."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from portwright.runs.models import EvidenceRecord


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
