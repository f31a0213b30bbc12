"""The environment image: keyed by what it is built from (read from the commit), built once
with network, shared by concurrent builders, and the image Docker sandboxes start from."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from portwright.config import SandboxConfig
from portwright.errors import ConfigError
from portwright.runs.keys import evidence_key_dir
from portwright.sandboxes.envimage import (
    LABEL_KEY,
    LABEL_REPO,
    EnvSource,
    ensure_env_image,
    env_status,
    read_spec,
)
from portwright.sandboxes.images import BASE_TAG
from tests.conftest import GitRepo, docker_engine_running

SETUP = ["cat requirements.txt > /opt/requirements.seen"]


def _repo(tmp_path: Path) -> GitRepo:
    # a name of its own: images are tagged by the repository's name
    repo = GitRepo(tmp_path / f"envtest-{os.getpid()}-{time.time_ns()}")
    repo.commit("init", {"requirements.txt": "six==1.17.0\n", "src/app.py": "x = 1\n",
                         "dev.txt": "pytest\n"})
    return repo


def test_key_follows_setup_and_lockfiles_only(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    config = SandboxConfig(setup=SETUP)
    source = EnvSource(repo.path)
    first = read_spec(config, source)
    assert list(first.lockfiles) == ["requirements.txt"]
    repo.commit("code", {"src/app.py": "x = 2\n"})
    assert read_spec(config, source).key == first.key  # code is not an input
    repo.write("requirements.txt", "six==1.16.0\n")  # not committed: not read
    assert read_spec(config, source).key == first.key
    repo.commit("deps")
    assert read_spec(config, source).key != first.key
    named = read_spec(SandboxConfig(setup=[*SETUP, "pip install -r dev.txt"]), source)
    assert list(named.lockfiles) == ["dev.txt", "requirements.txt"]  # named by a command
    assert read_spec(SandboxConfig(setup=["true"]), source).key != first.key
    earlier = read_spec(config, EnvSource(repo.path, "HEAD~1"))
    assert earlier.key == first.key


def test_explicit_lockfile_glob_must_match(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    repo.commit("config", {"portwright.toml": '[upstream]\nsource = "../up"\n\n[sandbox]\n'
                                              'setup = ["true"]\nlockfiles = ["uv.lock"]\n'})
    config = SandboxConfig(setup=["true"], lockfiles=["uv.lock"])
    with pytest.raises(ConfigError) as info:
        read_spec(config, EnvSource(repo.path))
    assert info.value.key == "sandbox.lockfiles"
    assert info.value.line == 6
    assert "uv.lock" in info.value.message
    assert info.value.fix


def test_dockerfile_must_be_committed(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    repo.write("ci/Dockerfile", f"FROM {BASE_TAG}\n")
    with pytest.raises(ConfigError) as info:
        read_spec(SandboxConfig(dockerfile="ci/Dockerfile"), EnvSource(repo.path))
    assert info.value.key == "sandbox.dockerfile"
    assert "not committed" in info.value.message


@pytest.fixture
def engine() -> Iterator[object]:
    import docker

    client = docker.from_env(timeout=120)
    if not any(BASE_TAG in image.tags for image in client.images.list()):
        client.close()
        pytest.skip(f"{BASE_TAG} is not built (portwright sandbox base-image)")
    yield client
    client.close()


def _remove_images(client: object, name: str) -> None:
    import docker

    assert isinstance(client, docker.DockerClient)
    for image in client.images.list(filters={"label": f"{LABEL_REPO}={name}"}):
        client.images.remove(image.id, force=True)


@pytest.mark.docker
@pytest.mark.skipif(not docker_engine_running(), reason="no Docker engine answers")
def test_built_once_rebuilt_on_lockfile_change(tmp_path: Path, engine: object) -> None:
    import docker

    assert isinstance(engine, docker.DockerClient)
    repo = _repo(tmp_path)
    config = SandboxConfig(setup=SETUP)
    source = EnvSource(repo.path, state_dir=tmp_path / "state")
    name = read_spec(config, source).name
    try:
        assert env_status(config, source, engine).state == "missing"
        first = ensure_env_image(config, source, engine)
        assert first.built
        assert first.log_path is not None
        assert "cat requirements.txt" in first.log_path.read_text()
        assert env_status(config, source, engine).state == "built"
        again = ensure_env_image(config, source, engine)
        assert (again.tag, again.built) == (first.tag, False)
        repo.commit("deps", {"requirements.txt": "six==1.16.0\n"})
        status = env_status(config, source, engine)
        assert (status.state, status.older) == ("stale", (first.tag,))
        second = ensure_env_image(config, source, engine)
        assert second.built
        assert second.tag != first.tag
        out = engine.containers.run(second.tag, ["cat", "/opt/requirements.seen"],
                                    remove=True, network_mode="none")
        assert out == b"six==1.16.0\n"
    finally:
        _remove_images(engine, name)


_BUILDER = """
import json, sys
from pathlib import Path
from portwright.config import SandboxConfig
from portwright.sandboxes.envimage import EnvSource, ensure_env_image
config = SandboxConfig(setup=json.loads(sys.argv[3]))
done = ensure_env_image(config, EnvSource(Path(sys.argv[1]), state_dir=Path(sys.argv[2])))
print(json.dumps({"tag": done.tag, "built": done.built, "key": done.key}))
"""


@pytest.mark.docker
@pytest.mark.skipif(not docker_engine_running(), reason="no Docker engine answers")
@pytest.mark.parametrize("state", ["one state folder", "a state folder each"])
def test_two_builders_at_once_make_one_image(tmp_path: Path, engine: object,
                                             state: str) -> None:
    """Two processes need the same new image at the same moment: one builds it, the other
    waits and uses it; no untagged image is left (each build differs: a time stamp). Two
    clones running their demos side by side each have their own state folder: the lock is
    not in it."""
    import docker

    assert isinstance(engine, docker.DockerClient)
    repo = _repo(tmp_path)
    setup = ["date +%s%N > /opt/stamp && sleep 2"]
    name = read_spec(SandboxConfig(setup=setup), EnvSource(repo.path)).name
    (tmp_path / "runtime").mkdir(mode=0o700)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
           "XDG_RUNTIME_DIR": str(tmp_path / "runtime")}
    folders = [tmp_path / "state"] * 2 if state == "one state folder" else [
        tmp_path / "state-a", tmp_path / "state-b"]
    try:
        procs = [subprocess.Popen([sys.executable, "-c", _BUILDER, str(repo.path), str(folder),
                                   json.dumps(setup)], env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)
                 for folder in folders]
        results = []
        for proc in procs:
            out, err = proc.communicate(timeout=600)
            assert proc.returncode == 0, err.decode()
            results.append(json.loads(out))
        assert results[0]["tag"] == results[1]["tag"]
        assert sorted(r["built"] for r in results) == [False, True]
        key = results[0]["key"]
        images = engine.images.list(filters={"label": f"{LABEL_KEY}={key}"})
        assert len(images) == 1
        assert engine.images.list(filters={"dangling": True, "label": f"{LABEL_KEY}={key}"}) \
            == []
    finally:
        _remove_images(engine, name)


@pytest.mark.docker
@pytest.mark.skipif(not docker_engine_running(), reason="no Docker engine answers")
def test_failing_setup_names_the_key_and_the_log(tmp_path: Path, engine: object) -> None:
    import docker

    assert isinstance(engine, docker.DockerClient)
    repo = _repo(tmp_path)
    repo.commit("config", {"portwright.toml": '[upstream]\nsource = "../up"\n\n[sandbox]\n'
                                              'setup = ["true", "echo broken-dep >&2; exit 3"]\n'})
    config = SandboxConfig(setup=["true", "echo broken-dep >&2; exit 3"])
    source = EnvSource(repo.path, state_dir=tmp_path / "state")
    name = read_spec(config, source).name
    try:
        with pytest.raises(ConfigError) as info:
            ensure_env_image(config, source, engine)
        assert info.value.key == "sandbox.setup"
        assert info.value.line == 5
        assert "exit 3" in info.value.message
        assert info.value.fix is not None
        log = Path(info.value.fix.split("build log ")[1].split(";")[0])
        assert log.is_file()
        assert "broken-dep" in log.read_text()
        assert engine.images.list(filters={"label": f"{LABEL_REPO}={name}"}) == []
    finally:
        _remove_images(engine, name)


@pytest.mark.docker
@pytest.mark.skipif(not docker_engine_running(), reason="no Docker engine answers")
def test_sandbox_starts_from_the_env_image_without_network(tmp_path: Path,
                                                          engine: object) -> None:
    """Setup ran at build time with network; the sandbox has none and runs no setup."""
    import docker

    from portwright.sandboxes.docker import DockerSandbox

    assert isinstance(engine, docker.DockerClient)
    repo = _repo(tmp_path)
    probe = ("python3 -c \"import socket; socket.create_connection(('pypi.org', 443), 10); "
             "print('reached')\" > /opt/net 2>&1 || echo offline > /opt/net")
    config = SandboxConfig(setup=[*SETUP, probe], memory="256m", timeout=60)
    source = EnvSource(repo.path, state_dir=tmp_path / "state")
    name = read_spec(config, source).name
    try:
        with DockerSandbox(repo.path, config=config, run_id="t-env", log_dir=tmp_path / "logs",
                           key_dir=evidence_key_dir(), source=source) as sb:
            assert sb.setup_results == []
            assert sb.image is not None
            assert sb.image.startswith(f"portwright/env-{name}:")
            seen = sb.exec(["cat", "/opt/requirements.seen"])
            assert seen.stdout_head == "six==1.17.0\n"
            built_with = sb.exec(["cat", "/opt/net"]).stdout_head
            now = sb.exec(["python3", "-c", "import socket; socket.create_connection("
                           "('pypi.org', 443), 5)"])
        assert "offline" not in built_with  # the build had a network (it resolved pypi.org)
        assert not now.ok  # the sandbox has none
    finally:
        _remove_images(engine, name)
