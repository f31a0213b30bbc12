"""``portwright serve`` on a port another program holds: exit 2 naming ``--port`` before
anything is announced (no ``serving`` event, no traceback), in text and in ``--json``."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Callable

from tests.conftest import GitRepo


def test_a_port_in_use_is_bad_input_said_before_serving(
        make_repo: Callable[[str], GitRepo]) -> None:
    make_repo("upstream").commit("up", {"a.py": "x = 1\n"})
    down = make_repo("downstream")
    down.commit("cfg", {"portwright.toml": '[upstream]\nsource = "../upstream"\n'})
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = str(held.getsockname()[1])
        for json_mode in (False, True):
            done = subprocess.run(
                [sys.executable, "-m", "portwright", "-C", str(down.path), "serve", "--port",
                 port, *(["--json"] if json_mode else [])],
                capture_output=True, text=True, timeout=60)
            said = " ".join((done.stdout + done.stderr).split())
            assert done.returncode == 2, said
            assert "Traceback" not in said
            assert "serving" not in said
            assert f"port {port} on 127.0.0.1 is in use" in said
            if json_mode:
                error = json.loads(done.stdout)["error"]
                assert error["key"] == "--port"
                assert error["fix"]
            else:
                assert "[--port]" in said
