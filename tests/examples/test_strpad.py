"""The environment-image example: a Python port whose tests need ``wcwidth`` from PyPI.

Its ``[sandbox] setup`` is built into an environment image with network (pip reaches PyPI
while the image builds); the gate then passes in a sandbox without network. A changed
lockfile builds a new image once, and the next sandbox reuses it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import docker_engine_running

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("strpad_build",
                                               ROOT / "examples" / "strpad" / "build.py")
assert _spec is not None
assert _spec.loader is not None
strpad_build = importlib.util.module_from_spec(_spec)
sys.modules["strpad_build"] = strpad_build  # its dataclass looks its module up
_spec.loader.exec_module(strpad_build)


def test_build_is_reproducible(tmp_path: Path) -> None:
    first, second = strpad_build.build(tmp_path / "a"), strpad_build.build(tmp_path / "b")
    assert first.pin == second.pin
    head = ["git", "rev-parse", "HEAD"]
    assert subprocess.run(head, cwd=first.downstream, capture_output=True).stdout == \
        subprocess.run(head, cwd=second.downstream, capture_output=True).stdout
    assert first.pin in (first.downstream / "upstream-sync.md").read_text()


def _portwright(repo: Path, state: Path, *args: str) -> tuple[int, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PORTWRIGHT_STATE_DIR": str(state)}
    done = subprocess.run([sys.executable, "-m", "portwright", "-C", str(repo), *args],
                          env=env, capture_output=True, text=True, timeout=900)
    return done.returncode, done.stdout + done.stderr


def _commit(repo: Path, message: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    subprocess.run(["git", "commit", "-qam", message], cwd=repo, env=env, check=True)


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.skipif(not docker_engine_running(), reason="no Docker engine answers")
def test_gates_pass_offline_and_a_lockfile_change_rebuilds_once(tmp_path: Path) -> None:
    import docker

    from portwright.sandboxes.envimage import LABEL_REPO

    example = strpad_build.build(tmp_path / "example")
    repo, state = example.downstream, tmp_path / "state"
    client = docker.from_env()

    def logs() -> list[Path]:
        return sorted(state.glob("projects/*/images/*.build.log"))

    def images() -> list[str]:
        return sorted(t for i in client.images.list(filters={"label": f"{LABEL_REPO}=pystrpad"})
                      for t in i.tags)

    before = images()  # another copy of the example may have built its image already
    try:
        code, out = _portwright(repo, state, "doctor", "--json")
        doctor = json.loads(out[: out.rindex("}") + 1])
        assert doctor["env_image"]["state"] in ("missing", "stale", "built"), doctor
        assert doctor["env_image"]["build"] == "portwright sandbox build"

        code, out = _portwright(repo, state, "gates", "run", "--phase", "full")
        assert code == 0, out  # pip reached PyPI while the image built; the gate ran offline
        first = logs()
        assert len(first) == (0 if doctor["env_image"]["state"] == "built" else 1)
        code, out = _portwright(repo, state, "doctor", "--json")
        assert json.loads(out[: out.rindex("}") + 1])["env_image"]["state"] == "built"

        code, out = _portwright(repo, state, "sandbox", "exec", "--", "/opt/venv/bin/python",
                                "-c", "import socket; socket.create_connection(('pypi.org', "
                                "443), 5)")
        assert code != 0, out  # no network in the sandbox

        requirements = repo / "requirements.txt"
        requirements.write_text("wcwidth==0.2.12\n")
        _commit(repo, "wcwidth 0.2.12")
        code, out = _portwright(repo, state, "doctor", "--json")
        assert json.loads(out[: out.rindex("}") + 1])["env_image"]["state"] == "stale"
        code, out = _portwright(repo, state, "gates", "run", "--phase", "full")
        assert code == 0, out
        assert len(logs()) == len(first) + 1  # rebuilt once
        code, out = _portwright(repo, state, "sandbox", "exec", "--", "/opt/venv/bin/python",
                                "-c", "import importlib.metadata as m; "
                                "print(m.version('wcwidth'))")
        assert code == 0, out
        assert "0.2.12" in out
        code, out = _portwright(repo, state, "gates", "run", "--phase", "full")
        assert code == 0, out
        assert len(logs()) == len(first) + 1  # reused
    finally:
        for tag in set(images()) - set(before):
            client.images.remove(tag, force=True)
        client.close()


@pytest.mark.docker
@pytest.mark.skipif(not docker_engine_running(), reason="no Docker engine answers")
def test_without_setup_the_failed_gate_points_at_setup(tmp_path: Path) -> None:
    example = strpad_build.build(tmp_path / "example")
    repo = example.downstream
    config = repo / "portwright.toml"
    text = config.read_text()
    config.write_text(text[: text.index("setup = [")] + text[text.index('lockfiles = '):])
    _commit(repo, "no setup")
    code, out = _portwright(repo, tmp_path / "state", "gates", "run", "--phase", "full",
                            "--json")
    assert code == 1, out
    assert "[sandbox] setup" in out
    assert "hint:" in out
