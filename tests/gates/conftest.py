from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.conftest import GitRepo
from tests.parity.world import World, make_world


@pytest.fixture
def world(make_repo: Callable[[str], GitRepo]) -> World:
    return make_world(make_repo)
