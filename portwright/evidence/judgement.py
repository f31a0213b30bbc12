"""From a commit's facts and the downstream's evidence to a verdict and a confidence.

In order:

1. a merge, an empty commit, a commit that touches no ``source`` or ``tests`` file, or one
   whose every source and tests change has no behaviour (comments, formatting, module syntax,
   renamed locals, moves) is ``not_applicable``;
2. a commit with behaviour but no signal a port keeps is ``uncertain`` — unless it only
   changes test code without adding a case, a literal or a fixture (a test harness change:
   ``not_applicable``);
3. otherwise the evidence is weighed (strong 3, medium 2, weak 1; superseded signals left
   out): all carried → ``landed``; none carried → ``missing`` when the absence tells (a strong
   sign — the port still has the text the change replaced, or the previous version of a
   fixture — or enough weight), else ``uncertain``; both → ``partial`` when the code's signals
   are carried and the tests' are not (or the reverse), else ``landed`` or ``missing`` when
   one side clearly outweighs the other and carries no strong sign, else ``partial``.

Confidence is meant to be calibrated: a verdict given with confidence ``c`` should be right
about ``c`` of the time; :data:`CONFIDENCE` holds the values, measured on labelled real ports
(``benchmarks/score_evidence.py``).

Public API: ``decide(facts, evidence) -> tuple[Verdict, float, str]``.
"""

from __future__ import annotations

from portwright.evidence.downstream import strengths
from portwright.evidence.gapmodels import Evidence, Verdict
from portwright.evidence.upstream import CommitFacts
from portwright.pathkinds import CARRIED

CONFIDENCE = {
    "kinds": 0.97,
    "merge": 0.97,
    "no_behaviour": 0.93,
    "harness": 0.7,
    "no_signal": 0.5,
    "landed_strong": 0.93,
    "landed": 0.8,
    "landed_weak": 0.65,
    "missing_strong": 0.92,
    "missing": 0.8,
    "missing_weak": 0.65,
    "partial": 0.6,
    "partial_split": 0.7,
    "uncertain": 0.5,
}


def _static(facts: CommitFacts) -> tuple[Verdict, float, str] | None:
    if facts.merge:
        return (Verdict.NOT_APPLICABLE, CONFIDENCE["merge"],
                "merge commit: its changes are judged on its parents")
    if not facts.files:
        return Verdict.NOT_APPLICABLE, CONFIDENCE["merge"], "empty commit"
    if not set(facts.kinds) & CARRIED:
        kinds = "/".join(facts.kinds)
        return Verdict.NOT_APPLICABLE, CONFIDENCE["kinds"], f"changes only {kinds} files"
    reason = facts.no_behaviour
    if reason:
        return (Verdict.NOT_APPLICABLE, CONFIDENCE["no_behaviour"],
                f"no behaviour change in its source and tests: {reason}")
    return None


def decide(facts: CommitFacts, evidence: list[Evidence]) -> tuple[Verdict, float, str]:
    """The verdict on one commit (see the module docstring)."""
    static = _static(facts)
    if static is not None:
        return static
    counted = [e for e in evidence if not e.superseded_by]
    if not counted:
        carried_kinds = {f.kind for f in facts.files if f.kind in CARRIED and not f.no_behaviour}
        if carried_kinds == {"tests"}:
            return (Verdict.NOT_APPLICABLE, CONFIDENCE["harness"],
                    "changes test code but adds no test case, literal or fixture: a harness "
                    "change")
        return (Verdict.UNCERTAIN, CONFIDENCE["no_signal"],
                "changes behaviour but names nothing a port keeps (no new name, literal, test "
                "or fixture): ask the gap-verifier")
    split = _by_origin(counted)
    if split is not None:
        return split
    carried, missing = strengths(counted)
    strong_carried = any(e.carried and e.strength == "strong" for e in counted)
    strong_missing = any(not e.carried and e.strength == "strong" for e in counted)
    absent = ", ".join(e.signal[:60] for e in counted if not e.carried)
    if not missing:
        key = "landed_strong" if strong_carried or carried >= 6 else \
            "landed" if carried >= 2 else "landed_weak"
        return Verdict.LANDED, CONFIDENCE[key], f"all {len(counted)} signals carried by the port"
    if not carried:
        if strong_missing or missing >= 5:
            key = "missing_strong" if strong_missing else "missing"
            return (Verdict.MISSING, CONFIDENCE[key],
                    f"none of {len(counted)} signals carried: {_strongest(counted)}")
        if missing >= 2:
            return (Verdict.MISSING, CONFIDENCE["missing_weak"],
                    f"none of {len(counted)} signals found in the port's code")
        return (Verdict.UNCERTAIN, CONFIDENCE["uncertain"],
                f"only a weak sign ({absent}) is absent; a port may spell it otherwise: ask "
                "the gap-verifier")
    if carried >= 2 * missing and not strong_missing:
        return (Verdict.LANDED, CONFIDENCE["landed_weak"],
                f"{carried}:{missing} weight carried; not found: {absent}")
    if missing >= 2 * carried and not strong_carried:
        return (Verdict.MISSING, CONFIDENCE["missing_weak"],
                f"{missing}:{carried} weight absent; not found: {absent}")
    done = sum(e.carried for e in counted)
    return (Verdict.PARTIAL, CONFIDENCE["partial"],
            f"{done} of {len(counted)} signals carried; not carried: {absent}")


def _side(evidence: list[Evidence]) -> str | None:
    carried, missing = strengths(evidence)
    if carried and carried >= 2 * missing:
        return "carried"
    if missing >= 2 and missing >= 2 * carried:
        return "absent"
    return None


def _by_origin(evidence: list[Evidence]) -> tuple[Verdict, float, str] | None:
    """``partial`` when the port clearly carries the code but not the tests (or the tests but
    not the code)."""
    source = _side([e for e in evidence if e.origin == "source"])
    tests = _side([e for e in evidence if e.origin == "tests"])
    if {source, tests} == {"carried", "absent"}:
        what = "the code but not the tests" if source == "carried" else \
            "the tests but not the code"
        absent = ", ".join(e.signal[:60] for e in evidence if not e.carried)
        return (Verdict.PARTIAL, CONFIDENCE["partial_split"],
                f"the port carries {what}; not carried: {absent}")
    return None


def _strongest(evidence: list[Evidence]) -> str:
    strong = [e for e in evidence if not e.carried and e.strength == "strong"]
    if strong:
        return f"{strong[0].signal[:60]}: {strong[0].note}"
    return "none found in the port's code"
