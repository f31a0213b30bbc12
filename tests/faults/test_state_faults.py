"""Checkpoint stores that answer and refuse: a real Postgres server that asks for a
password (``[runs] checkpoint_url`` with the wrong one, or naming a database it lacks) is
exit 2 naming the setting and the file, in text and with ``--json``, and leaves no run
behind. The faults the bad-input table can set up alone (nothing listening, a scheme that
is not Postgres's, a damaged SQLite file) are in :mod:`tests.bad_input.cases_state`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bad_input.harness import Case, check
from tests.bad_input.world import World, build
from tests.workflows.test_postgres import postgres_server

pytestmark = pytest.mark.postgres

PASSWORD = "pg-secret-71c2e9"


def _url(world: World, url: str) -> None:
    world.config(f'\n[runs]\ncheckpoint_url = "{url}"\n')
    world.git("commit", "-qam", "checkpoints in Postgres")


def test_a_postgres_that_refuses_names_the_setting(tmp_path: Path) -> None:
    with postgres_server(PASSWORD) as good:
        wrong = good.replace(PASSWORD, "not-the-password")
        missing = good.removesuffix("/postgres") + "/nosuchdb"
        cases = [
            (Case("state-postgres-wrong-password", ("run", "kv-cache"),
                  says=("portwright.toml", "runs.checkpoint_url",
                        "password authentication failed")), wrong),
            (Case("state-postgres-no-database", ("runs",),
                  says=("portwright.toml", "runs.checkpoint_url", "nosuchdb")), missing),
            # the same server with the right password: the refusals were the setting's
            (Case("state-postgres-ok", ("runs",), expect=0, json=False), good),
        ]
        for case, url in cases:
            world = build(tmp_path / case.id)
            _url(world, url)
            problems = check(case, world, tmp_path / f"{case.id}-home")
            assert not problems, case.id + ": " + "\n".join(
                f"{p.category}: {p.detail}" for p in problems)
