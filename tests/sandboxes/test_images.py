"""Images: the apt mirror lookup, Dockerfile builds (cached, logged), missing images, CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from portwright.config import SandboxConfig
from portwright.errors import ConfigError, ImageMissing, SandboxError
from portwright.runs.keys import evidence_key_dir
from portwright.sandboxes.envimage import EnvSource
from portwright.sandboxes.images import BASE_TAG, debian_mirror, ensure_image, prune_images
from tests.conftest import GitRepo, docker_engine_running


def test_mirror_from_deb822_sources(tmp_path: Path) -> None:
    lists = tmp_path / "sources.list.d"
    lists.mkdir()
    (lists / "debian.sources").write_text(
        "Types: deb\nURIs: http://security.example.org/debian-security\n"
        "Suites: bookworm-security\nComponents: main\n\n"
        "Types: deb\n# a comment\nURIs: http://mirror.example.org/debian/\n"
        "Suites: bookworm bookworm-updates\nComponents: main\n")
    (lists / "other.list.disabled-by-someone").write_text(
        "deb http://wrong.example.org/debian bookworm main\n")
    (lists / "nodesource.sources").write_text(
        "Types: deb\nURIs: https://deb.nodesource.com/node_20.x\nSuites: nodistro\n")
    assert debian_mirror("bookworm", sources=(tmp_path / "sources.list", lists)) == \
        "http://mirror.example.org/debian"


def test_mirror_from_one_line_sources(tmp_path: Path) -> None:
    main = tmp_path / "sources.list"
    main.write_text("# deb http://commented.example.org/debian bookworm main\n"
                    "deb [arch=amd64 signed-by=/k.gpg] http://ftp.example.org/debian bookworm "
                    "main contrib\n")
    assert debian_mirror("bookworm", sources=(main, tmp_path / "none.d")) == \
        "http://ftp.example.org/debian"


def test_no_mirror_is_a_clear_error(tmp_path: Path) -> None:
    main = tmp_path / "sources.list"
    main.write_text("deb https://packages.example.com/apt cloud-sdk main\n")
    with pytest.raises(SandboxError, match="no Debian mirror") as info:
        debian_mirror("bookworm", sources=(main,))
    assert info.value.fix is not None


def test_this_machine_has_a_mirror() -> None:
    if not any(p.exists() for p in (Path("/etc/apt/sources.list"),
                                    Path("/etc/apt/sources.list.d"))):
        pytest.skip("not a Debian machine")
    assert debian_mirror().startswith(("http://", "https://", "file:/"))


@pytest.mark.docker
@pytest.mark.skipif(not docker_engine_running(), reason="no Docker engine answers")
def test_missing_image_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ImageMissing, match="docker build"):
        ensure_image(SandboxConfig(image="portwright/absent:never"), tmp_path)


@pytest.mark.docker
@pytest.mark.skipif(not docker_engine_running(), reason="no Docker engine answers")
def test_missing_dockerfile_is_a_config_error(tmp_path: Path) -> None:
    GitRepo(tmp_path / "repo").commit("init", {"README": "x\n"})
    with pytest.raises(ConfigError, match=r"sandbox\.dockerfile"):
        ensure_image(SandboxConfig(dockerfile="ci/Dockerfile"), tmp_path / "repo")


@pytest.mark.docker
@pytest.mark.skipif(not docker_engine_running(), reason="no Docker engine answers")
def test_dockerfile_is_built_once_and_logged(tmp_path: Path) -> None:
    import docker

    client = docker.from_env()
    if not any(BASE_TAG in image.tags for image in client.images.list()):
        client.close()
        pytest.skip(f"{BASE_TAG} is not built (portwright sandbox base-image)")
    repo = GitRepo(tmp_path / f"repo-{os.getpid()}-{time.time_ns()}")
    repo.commit("df", {"ci/Dockerfile": f"FROM {BASE_TAG}\nCOPY data.txt /etc/data\n"
                                        f"RUN echo built-{time.time_ns()} > /etc/t\n",
                       "ci/data.txt": "from the committed tree\n"})
    config = SandboxConfig(dockerfile="ci/Dockerfile")
    source = EnvSource(repo.path, state_dir=tmp_path / "state")
    try:
        tag = ensure_image(config, repo.path, client=client, source=source)
        assert tag.startswith("portwright/env-repo-")
        logs = list((tmp_path / "state" / "images").glob("*.build.log"))
        assert len(logs) == 1
        assert "RUN echo built-" in logs[0].read_text()
        assert client.containers.run(tag, ["cat", "/etc/data"], remove=True) == \
            b"from the committed tree\n"
        repo.write("ci/data.txt", "written, not committed\n")  # the build reads the commit
        start = time.monotonic()
        assert ensure_image(config, repo.path, client=client, source=source) == tag
        assert time.monotonic() - start < 2.0  # cached: no build
        repo.commit("broken", {"ci/Dockerfile": f"FROM {BASE_TAG}\nRUN false\n"})
        with pytest.raises(ConfigError, match="failed") as info:
            ensure_image(config, repo.path, client=client, source=source)
        assert info.value.key == "sandbox.dockerfile"
        assert "build log" in str(info.value)
        repo.commit("fixed", {"ci/Dockerfile": f"FROM {BASE_TAG}\nRUN echo {time.time_ns()}\n"})
        newer = ensure_image(config, repo.path, client=client, source=source)
        assert newer != tag
        # only this test's repository: another test's images are not this one's to remove
        removed = prune_images(client=client, repositories={tag.rpartition(":")[0]})
        assert tag in removed
        assert newer not in removed
    finally:
        for image in client.images.list(filters={"label": "portwright.image=env"}):
            if any(t.startswith("portwright/env-repo-") for t in image.tags):
                client.images.remove(image.id, force=True)
        client.close()


def _cli(*args: str, repo: Path) -> tuple[int, str]:
    from portwright.cli import app

    result = CliRunner().invoke(app, ["-C", str(repo), *args])
    return result.exit_code, result.output


@pytest.mark.docker
@pytest.mark.skipif(not docker_engine_running(), reason="no Docker engine answers")
def test_cli_base_image_returns_at_once_when_present(tmp_path: Path) -> None:
    import docker

    client = docker.from_env()
    present = any(BASE_TAG in image.tags for image in client.images.list())
    client.close()
    if not present:
        pytest.skip(f"{BASE_TAG} is not built")
    start = time.monotonic()
    code, out = _cli("sandbox", "base-image", repo=tmp_path)
    assert code == 0, out
    assert "nothing to do" in out
    assert time.monotonic() - start < 5


@pytest.mark.docker
@pytest.mark.skipif(not docker_engine_running(), reason="no Docker engine answers")
def test_cli_info_and_exec(tmp_path: Path) -> None:
    code, out = _cli("sandbox", "info", "--json", repo=tmp_path)
    assert code == 0, out
    info = json.loads(out)
    assert info["backend"] == "docker"
    assert info["docker"] == "ok"
    code, out = _cli("sandbox", "exec", "--json", "--", "sh", "-c", "echo in-box; exit 4",
                     repo=tmp_path)
    assert code == 4
    result = json.loads(out[: out.rindex("}") + 1])
    assert result["stdout_head"] == "in-box\n"
    assert result["exit_code"] == 4
    assert not Path(result["log_path"]).is_relative_to(tmp_path)  # run state stays outside


def test_cli_exec_local_backend(tmp_path: Path) -> None:
    code, out = _cli("sandbox", "exec", "--backend", "local", "--json", "--", "pwd",
                     repo=tmp_path)
    assert code == 0, out
    assert json.loads(out[: out.rindex("}") + 1])["stdout_head"].strip() == str(tmp_path)


@pytest.mark.docker
@pytest.mark.skipif(not docker_engine_running(), reason="no Docker engine answers")
def test_sandbox_runs_in_the_dockerfile_image(tmp_path: Path) -> None:
    import docker

    from portwright.sandboxes.docker import DockerSandbox

    client = docker.from_env()
    present = any(BASE_TAG in image.tags for image in client.images.list())
    if not present:
        client.close()
        pytest.skip(f"{BASE_TAG} is not built")
    marker = f"marker-{time.time_ns()}"
    wt = GitRepo(tmp_path / f"wt-{os.getpid()}")
    wt.commit("df", {"Dockerfile": f"FROM {BASE_TAG}\nRUN echo {marker} > /etc/marker\n"})
    config = SandboxConfig(dockerfile="Dockerfile", memory="256m")
    tag = ""
    try:
        with DockerSandbox(wt.path, config=config, run_id="t-df", key_dir=evidence_key_dir(),
                           log_dir=tmp_path / "logs",
                           source=EnvSource(wt.path, state_dir=tmp_path / "state")) as sb:
            tag = sb.image or ""
            res = sb.exec(["cat", "/etc/marker"])
        assert res.stdout_head == f"{marker}\n"
        assert sorted(p.name for p in wt.path.iterdir()) == [".git", "Dockerfile"]  # untouched
        assert list((tmp_path / "state" / "images").glob("*.build.log"))
    finally:
        if tag:
            client.images.remove(tag, force=True)
        client.close()


def test_cli_info_without_any_backend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from portwright.sandboxes import selection

    monkeypatch.setattr(selection, "docker_status", lambda timeout=3.0: "no engine: test")
    monkeypatch.setattr(selection, "bwrap_status", lambda: "bwrap not installed")
    code, out = _cli("sandbox", "info", "--json", repo=tmp_path)
    assert code == 0, out
    info = json.loads(out)
    assert info["backend"] is None
    assert info["reason"] == "auto: no engine: test; bwrap not installed"


@pytest.mark.docker
@pytest.mark.skipif(not docker_engine_running(), reason="no Docker engine answers")
def test_cli_prune_json(tmp_path: Path) -> None:
    code, out = _cli("sandbox", "prune", "--json", repo=tmp_path)
    assert code == 0, out
    payload = json.loads(out)
    assert isinstance(payload["removed"], list)
    assert payload["removed_images"] == []


_ONCE = """
import io, json, sys, tarfile, time
from portwright.sandboxes.engine import docker_client
from portwright.sandboxes.images import build_once

tag, label = sys.argv[1], sys.argv[2]
client = docker_client()
said = []

def build():
    files = {"Dockerfile": f"FROM scratch\\nCOPY stamp /stamp\\nLABEL {label}=1\\n".encode(),
             "stamp": str(time.time_ns()).encode()}  # every build differs
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    time.sleep(2)  # wide enough for the other builder to arrive while this one builds
    for _ in client.api.build(fileobj=io.BytesIO(context.getvalue()), custom_context=True,
                              tag=tag, rm=True, decode=True):
        pass

image_id, built = build_once(client, tag, build, progress=said.append)
print(json.dumps({"id": image_id, "built": built, "said": said}))
"""


@pytest.mark.docker
@pytest.mark.skipif(not docker_engine_running(), reason="no Docker engine answers")
def test_two_builders_of_one_tag_build_it_once(tmp_path: Path) -> None:
    """What guards the base image (`make demo` from two clones at once): two processes that
    need the same missing image build it once; the second waits, then finds it."""
    import docker

    tag = f"portwright/test-build-once-{os.getpid()}:{time.time_ns()}"
    label = f"portwright.test-build-once-{os.getpid()}-{time.time_ns()}"
    (tmp_path / "runtime").mkdir(mode=0o700)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
           "XDG_RUNTIME_DIR": str(tmp_path / "runtime")}
    client = docker.from_env()
    try:
        procs = [subprocess.Popen([sys.executable, "-c", _ONCE, tag, label], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                 for _ in range(2)]
        results = []
        for proc in procs:
            out, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, err.decode()
            results.append(json.loads(out))
        assert sorted(r["built"] for r in results) == [False, True]
        assert results[0]["id"] == results[1]["id"]
        waited = next(r for r in results if not r["built"])
        assert any("waiting" in line for line in waited["said"]), waited["said"]
        assert "nothing to do" in waited["said"][-1]
        assert [image.id for image in client.images.list(filters={"label": label})] == \
            [results[0]["id"]]
        assert (tmp_path / "runtime" / "portwright" / "locks").is_dir()
    finally:
        for image in client.images.list(filters={"label": label}):
            client.images.remove(image.id, force=True)
        client.close()


def test_lock_folder_is_the_users_not_the_state_folders(tmp_path: Path) -> None:
    from portwright.sandboxes.buildlock import lock_dir, lock_path

    (tmp_path / "run").mkdir()
    assert lock_dir({"XDG_RUNTIME_DIR": str(tmp_path / "run")}) == \
        tmp_path / "run" / "portwright" / "locks"
    assert lock_dir({"XDG_RUNTIME_DIR": str(tmp_path / "gone"),
                     "XDG_CACHE_HOME": str(tmp_path / "cache")}) == \
        tmp_path / "cache" / "portwright" / "locks"
    assert lock_dir({"XDG_CACHE_HOME": "relative"}) == \
        Path.home() / ".cache" / "portwright" / "locks"
    assert lock_path("portwright/base:bookworm", {"XDG_CACHE_HOME": str(tmp_path)}).name == \
        "portwright_base_bookworm.lock"
