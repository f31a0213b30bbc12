"""upstream.source: a local checkout, or a URL cloned once into the state folder; and the
state folder itself, which lies outside every repository."""

from __future__ import annotations

from pathlib import Path

import pytest

from portwright.config import PortwrightConfig
from portwright.errors import ConfigError, RepositoryError
from portwright.evidence.gap import upstream_repo
from portwright.project import Project
from portwright.vcs.upstream import is_url
from tests.conftest import GitRepo


def config(source: str, **more: object) -> PortwrightConfig:
    return PortwrightConfig.model_validate({"upstream": {"source": source}, **more})


@pytest.mark.parametrize(("source", "url"), [
    ("../upstream", False), ("/abs/upstream", False), ("https://example.invalid/u.git", True),
    ("file:///srv/upstream", True), ("git@example.invalid:org/u.git", True),
])
def test_is_url(source: str, url: bool) -> None:
    assert is_url(source) is url


def test_local_path_is_resolved_against_the_downstream(make_repo: type[GitRepo]) -> None:
    upstream = make_repo("upstream")
    upstream.commit("one", {"a.py": "A = 1\n"})
    down = make_repo("down")
    assert Project(down.path, config("../upstream")).upstream() == upstream.path.resolve()


def test_url_is_cloned_once_into_the_state_folder(make_repo: type[GitRepo]) -> None:
    upstream = make_repo("upstream")
    first = upstream.commit("one", {"a.py": "A = 1\n"})
    down = make_repo("down")
    project = Project(down.path, config(f"file://{upstream.path}"))
    clone = upstream_repo(project)
    assert clone == project.state_dir / "upstream"
    assert not clone.is_relative_to(down.path)
    assert (clone / "a.py").read_text() == "A = 1\n"
    second = upstream.commit("two", {"a.py": "A = 2\n"})
    assert project.upstream() == clone  # no network on the second call
    from portwright.vcs.plumbing import git

    assert git(clone, "rev-parse", "HEAD").decode().strip() == first
    project.upstream(fetch=True)
    assert second in git(clone, "rev-parse", "--all").decode()


def test_missing_checkout_names_the_key_and_fix(make_repo: type[GitRepo]) -> None:
    down = make_repo("down")
    with pytest.raises(RepositoryError) as info:
        Project(down.path, config("../nowhere")).upstream()
    assert info.value.key == "upstream.source"
    assert "clone the upstream" in (info.value.fix or "")
    with pytest.raises(ConfigError) as wrapped:
        upstream_repo(Project(down.path, config("../nowhere")))
    assert wrapped.value.key == "upstream.source"


def test_unreachable_url_is_a_clear_error(make_repo: type[GitRepo], tmp_path: Path) -> None:
    down = make_repo("down")
    project = Project(down.path, config(f"file://{tmp_path}/missing.git"))
    with pytest.raises(RepositoryError) as info:
        project.upstream()
    assert "could not clone" in info.value.message
    assert not (project.state_dir / "upstream").exists()


def test_state_folder_is_outside_the_repository_and_shared_by_worktrees(
        make_repo: type[GitRepo], tmp_path: Path) -> None:
    down = make_repo("down")
    down.commit("one", {"a.py": "A = 1\n"})
    down.git("worktree", "add", "-q", str(tmp_path / "wt"), "-b", "run")
    main = Project(down.path, config("../upstream"))
    other = Project(tmp_path / "wt", config("../upstream"))
    assert main.state_dir == other.state_dir
    assert not main.state_dir.is_relative_to(down.path)
    assert main.run_dir("r1").parent == main.runs_dir


@pytest.mark.parametrize("state_dir", ["{repo}/.portwright", "{repo}"])
def test_state_dir_that_could_be_written_by_a_sandbox_is_refused(
        make_repo: type[GitRepo], state_dir: str) -> None:
    down = make_repo("down")
    project = Project(down.path, config("../u", state_dir=state_dir.format(repo=down.path)),
                      environ={})
    with pytest.raises(ConfigError) as info:
        _ = project.state_dir
    assert info.value.key == "state_dir"
    assert "outside" in (info.value.fix or "")


@pytest.mark.parametrize("state_dir", ["relative/state", "../..", "/"])
def test_state_dir_that_cannot_work_is_refused_by_the_config(
        make_repo: type[GitRepo], state_dir: str) -> None:
    down = make_repo("down")
    down.write("portwright.toml", f'state_dir = "{state_dir}"\n[upstream]\nsource = "../u"\n')
    with pytest.raises(ConfigError) as info:
        Project.load(down.path, environ={})
    assert info.value.key == "state_dir"
    assert info.value.line == 1
    assert "absolute" in info.value.message or "root" in info.value.message
