"""Every case of the bad-input table, by area."""

from __future__ import annotations

from tests.bad_input import (
    cases_config,
    cases_env,
    cases_eval,
    cases_model,
    cases_parity,
    cases_pin,
    cases_repo,
    cases_revisions,
    cases_rules,
    cases_sandbox,
    cases_schedule,
    cases_state,
)
from tests.bad_input.harness import Case

CASES: list[Case] = [
    *cases_config.CASES,
    *cases_env.CASES,
    *cases_rules.CASES,
    *cases_pin.CASES,
    *cases_revisions.CASES,
    *cases_parity.CASES,
    *cases_repo.CASES,
    *cases_repo.RUNS,
    *cases_sandbox.CASES,
    *cases_eval.CASES,
    *cases_model.CASES,
    *cases_schedule.CASES,
    *cases_state.CASES,
]

_ids = [c.id for c in CASES]
assert len(_ids) == len(set(_ids)), sorted({i for i in _ids if _ids.count(i) > 1})
