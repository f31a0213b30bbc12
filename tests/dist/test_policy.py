"""A worker treats a workflow's input as untrusted: the unisolated backend, settings that
decide isolation or where secrets go, and another project are refused unless the worker's
own command line grants them (what any client of the Temporal frontend could send)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.exceptions import ApplicationError

from portwright.dist.policy import WorkerPolicy, check_input, set_policy


@pytest.fixture
def worker(tmp_path: Path) -> Iterator[Path]:
    set_policy(WorkerPolicy(roots=(tmp_path,)))
    try:
        yield tmp_path
    finally:
        set_policy(WorkerPolicy())


@pytest.mark.parametrize(("allow_local", "overrides", "says"), [
    (True, {}, "allow_local"),
    (False, {"model.base_url": "http://attacker.invalid/v1"}, "model.base_url"),
    (False, {"model.api_key_env": "AWS_SECRET_ACCESS_KEY"}, "model.api_key_env"),
    (False, {"sandbox.network": "true"}, "sandbox.network"),
    (False, {"upstream.source": "/"}, "upstream.source"),
])
def test_input_that_asks_for_what_only_the_worker_decides_is_refused(
        worker: Path, allow_local: bool, overrides: dict[str, str], says: str) -> None:
    with pytest.raises(ApplicationError) as caught:
        check_input(str(worker), allow_local, overrides)
    assert says in str(caught.value)
    assert caught.value.non_retryable


def test_another_project_is_refused(worker: Path, tmp_path_factory: pytest.TempPathFactory
                                    ) -> None:
    with pytest.raises(ApplicationError, match="this worker serves"):
        check_input(str(tmp_path_factory.mktemp("elsewhere")), False, {})


def test_what_a_command_may_choose_passes(worker: Path) -> None:
    check_input(str(worker), False, {"model.name": "m", "sandbox.backend": "docker",
                                     "approvals.spec": "always"})


def test_a_worker_started_with_allow_local_grants_it(tmp_path: Path) -> None:
    set_policy(WorkerPolicy(roots=(tmp_path,), allow_local=True))
    try:
        check_input(str(tmp_path), True, {})
    finally:
        set_policy(WorkerPolicy())
