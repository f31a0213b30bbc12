"""Fixtures of the agents tests: an upstream repository with a pin and a downstream port."""

from __future__ import annotations

from typing import Any

import pytest

from portwright.agents.tools import Workspace
from tests.agents.helpers import SubprocessSandbox


@pytest.fixture
def pair(make_repo: Any) -> dict[str, Any]:
    """An upstream repo (pin = its first commit) and a downstream worktree."""
    upstream = make_repo("upstream")
    pin = upstream.commit("upstream v1", {
        "src/attn.py": "def rope_scaling(x):\n    return x * 2\n\n\ndef other():\n    pass\n",
        "tests/test_attn.py": "from src.attn import rope_scaling\n\n\ndef test_rope():\n"
                              "    assert rope_scaling(2) == 4\n",
    })
    upstream.commit("after the pin", {"src/late.py": "LATE = 1\n"})
    downstream = make_repo("downstream")
    downstream.commit("port start", {
        "lib/attn.cpp": "int other() { return 0; }\n",
        "AGENTS.md": "# Rules\n\nKeep the port faithful.\n",
        "notes.txt": "alpha\nbeta\ngamma\n",
    })
    return {"upstream": upstream, "downstream": downstream, "pin": pin,
            "workspace": Workspace(worktree=downstream.path, upstream=upstream.path, pin=pin,
                                   sandbox=SubprocessSandbox(), command_timeout=20)}
