"""Which verdicts the evidence allows for one upstream commit, when an agent confirms it.

The gap scan gives every commit a candidate verdict; an ``uncertain`` one goes to the gap
verifier, whose answer is a *proposal*. The framework records it only when the scan's own
evidence allows it:

``missing``
    always allowed: nothing observed shows the change landed, and the port run that follows
    verifies the gap again at the row's level before anything is written.
``partial`` (also a verifier's ``stale``)
    needs at least one signal the framework found carried by the port (at its HEAD).
``landed``
    needs at least one carried signal and no ``strong`` signal found absent.
``not_applicable``
    never from an agent: only the scan decides it, from facts it checks itself (the kinds
    of the files changed, changes with no behaviour, a revert pair in the range).

Signals a later commit of the range superseded are not counted.
"""

from __future__ import annotations

from portwright.evidence.gapmodels import CommitGap, Verdict

__all__ = ["allowed_verdicts", "why_not"]


def allowed_verdicts(commit: CommitGap) -> list[Verdict]:
    """The verdicts a confirmation of ``commit`` may give (``missing`` first)."""
    counted = [e for e in commit.evidence if e.superseded_by is None]
    carried = [e for e in counted if e.carried]
    strong_absent = [e for e in counted if not e.carried and e.strength == "strong"]
    allowed = [Verdict.MISSING]
    if carried:
        allowed.append(Verdict.PARTIAL)
        if not strong_absent:
            allowed.append(Verdict.LANDED)
    return allowed


def why_not(commit: CommitGap, verdict: Verdict) -> str | None:
    """Why the evidence does not allow ``verdict`` for ``commit`` (None when it does)."""
    if verdict in allowed_verdicts(commit):
        return None
    if verdict is Verdict.NOT_APPLICABLE or verdict is Verdict.UNCERTAIN:
        return (f"{verdict.value} is the scan's to decide, not a confirmation's: answer "
                "missing, partial or landed")
    counted = [e for e in commit.evidence if e.superseded_by is None]
    if not any(e.carried for e in counted):
        return (f"{verdict.value} needs a signal the port carries, and the framework found "
                f"none of the commit's {len(counted)} signal(s) in the port: answer missing")
    absent = [e.signal for e in counted if not e.carried and e.strength == "strong"]
    return (f"landed is contradicted by strong signals absent from the port "
            f"({', '.join(absent[:4])}): answer partial or missing")
