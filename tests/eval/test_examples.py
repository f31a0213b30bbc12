"""The bundled example tasks: their repositories built with reference branches (the demo's
``main`` untouched), and ``portwright eval validate`` on them in real Docker."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from portwright.errors import SandboxError
from portwright.eval import hidden
from portwright.eval.hidden import BuildCache
from portwright.eval.tasks import load_suite
from portwright.eval.validate import cache_path, validate
from portwright.eval.workspace import prepare
from portwright.sandboxes.envimage import EnvSource
from portwright.sandboxes.output import iter_log
from tests.conftest import docker_engine_running
from tests.eval.conftest import ROOT, portwright

SUITE = ROOT / "benchmarks" / "port-tasks" / "examples"


def _module(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


build_repos = _module(SUITE / "build_repos.py", "eval_examples_build_repos").build_repos


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.fixture(scope="module")
def repos(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("example-repos")
    build_repos(dest)
    return dest


def test_reference_branches_leave_main_as_the_demo_has_it(repos: Path, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    tinystats = _module(ROOT / "examples" / "tinystats" / "build.py", "tinystats_plain_build")
    rmsnorm = _module(ROOT / "examples" / "rmsnorm" / "build.py", "rmsnorm_plain_build")
    tinystats.build(plain / "tinystats")
    rmsnorm.build(plain / "rmsnorm")
    for name in ("tinystats/pystats", "tinystats/tinystats", "rmsnorm/rmsnorm-cpp",
                 "rmsnorm/upstream"):
        built = repos / name
        assert git(built, "rev-parse", "HEAD", "main") == git(plain / name, "rev-parse",
                                                               "HEAD", "main"), name
        assert git(built, "symbolic-ref", "HEAD") == "refs/heads/main"
        assert git(built, "status", "--porcelain") == ""
    pystats = repos / "tinystats" / "pystats"
    assert git(pystats, "rev-parse", "reference/moving-average^") == git(pystats, "rev-parse",
                                                                         "main")
    changed = git(pystats, "diff", "--name-only", "main", "reference/moving-average").split()
    assert changed == ["pystats/__init__.py", "pystats/stats.py", "tests/test_moving_average.py"]
    assert "percentile" in git(pystats, "log", "-1", "--format=%s", "reference/percentile")
    cpp = repos / "rmsnorm" / "rmsnorm-cpp"
    assert git(cpp, "rev-parse", "reference/rmsnorm-fused-residual^") == git(cpp, "rev-parse",
                                                                             "main")
    assert git(cpp, "diff", "--name-only", "main", "reference/rmsnorm-fused-residual").split() \
        == ["include/rmsnorm.hpp", "src/rmsnorm.cpp", "tests/test_rmsnorm.cpp"]
    again = tmp_path / "again"
    build_repos(again)  # reproducible: the task files can name what a build makes
    assert git(again / "tinystats" / "pystats", "rev-parse", "reference/moving-average") == \
        git(pystats, "rev-parse", "reference/moving-average")


def _built(log: Path) -> set[str]:
    """The sources a command's logged output says it compiled."""
    out = b"".join(iter_log(log, "stdout")).decode()
    return set(re.findall(r"Building CXX object CMakeFiles/[^/]+\.dir/(\S+)\.o", out))


@pytest.mark.docker
@pytest.mark.slow
def test_a_port_that_does_not_build_is_invalid(repos: Path, tmp_path: Path) -> None:
    """The port's build goes on from the parent's build tree: a source the port breaks is
    compiled again and fails, the parent's objects notwithstanding."""
    if not docker_engine_running():
        pytest.skip("needs a running Docker engine (make engine)")
    mine = tmp_path / "repos"
    shutil.copytree(repos / "rmsnorm", mine / "rmsnorm", symlinks=True)
    cpp = mine / "rmsnorm" / "rmsnorm-cpp"
    git(cpp, "checkout", "-q", "-b", "broken-port", "reference/rmsnorm-fused-residual")
    source = cpp / "src" / "rmsnorm.cpp"
    source.write_text(source.read_text() + "\nthis does not compile;\n")
    git(cpp, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-am", "broken")
    git(cpp, "checkout", "-q", "main")
    task_file = tmp_path / "broken.toml"
    task_file.write_text((SUITE / "rmsnorm" / "rmsnorm-fused-residual.toml").read_text()
                         .replace('port = "reference/rmsnorm-fused-residual"',
                                  'port = "broken-port"'))
    (task,) = load_suite(task_file).tasks
    record = validate(task, mine, tmp_path / "out")
    assert record.valid is False
    assert record.parent == {"RmsNorm.FusedResidual": False,
                             "RmsNorm.FusedResidualShapeMismatch": False}
    assert record.port == {"RmsNorm.FusedResidual": False,
                           "RmsNorm.FusedResidualShapeMismatch": False}
    assert record.reason == ("fails at port: RmsNorm.FusedResidual, "
                             "RmsNorm.FusedResidualShapeMismatch")
    assert record.regress_baseline == []  # nothing runs at the port


def test_the_bundled_suite_loads() -> None:
    suite = load_suite(SUITE)
    assert [t.id for t in suite.tasks] == ["rmsnorm/rmsnorm-fused-residual",
                                           "tinystats/moving-average", "tinystats/percentile"]
    by_id = {t.id: t for t in suite.tasks}
    assert by_id["tinystats/percentile"].environment.report == "pytest"  # from suite.toml
    assert by_id["rmsnorm/rmsnorm-fused-residual"].environment.report == "gtest"


BROKEN = """id = "tinystats/already-passes"
title = "A task whose hidden test passes before any port"

[upstream]
commits = ["main~2"]

[downstream]
parent = "reference/moving-average^"
port = "reference/moving-average"

[hidden]
paths = ["tests/test_moving_average.py"]
tests = ["tests/test_stats.py::test_clamp_keeps_bounds_inclusive",
         "tests/test_moving_average.py::test_moving_average_trailing_window"]
"""


@pytest.mark.docker
@pytest.mark.slow
def test_eval_validate_on_the_bundled_tasks_in_docker(repos: Path, tmp_path: Path) -> None:
    if not docker_engine_running():
        pytest.skip("needs a running Docker engine (make engine)")
    out = tmp_path / "out"
    done = portwright("eval", "validate", str(SUITE), "--repos", str(repos), "--out", str(out),
                      "--jobs", "2", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["valid"] is True
    records = {r["task"]: r for r in report["records"]}
    assert set(records) == {"rmsnorm/rmsnorm-fused-residual", "tinystats/moving-average",
                            "tinystats/percentile"}
    assert records["tinystats/percentile"]["parent"] == {
        "tests/test_stats.py::test_percentile_interpolates_between_ranks": False}
    assert "tests/test_stats.py::test_mean_of_integers" in \
        records["tinystats/percentile"]["regress_baseline"]
    assert records["rmsnorm/rmsnorm-fused-residual"]["port"] == {
        "RmsNorm.FusedResidual": True, "RmsNorm.FusedResidualShapeMismatch": True}
    assert not list((out / "validation").glob("*.trees"))  # the port is not left behind
    # one tree: the port's build redoes only what the port changed over the parent's (the
    # task's command builds the test program alone, not tools/rmsnorm_cli.cpp)
    logs = out / "validation" / "rmsnorm--rmsnorm-fused-residual.logs"
    at_parent, at_port = (set().union(*map(_built, sorted((logs / phase).glob("*.log"))))
                          for phase in ("parent", "port"))
    assert at_parent == {"tests/check.cpp", "src/rmsnorm.cpp", "tests/test_rmsnorm.cpp"}
    assert at_port == {"src/rmsnorm.cpp", "tests/test_rmsnorm.cpp"}  # include/rmsnorm.hpp

    again = portwright("eval", "validate", str(SUITE), "--repos", str(repos), "--out",
                       str(out), "--json")
    assert again.returncode == 0
    assert json.loads(again.stdout)["records"] == report["records"]  # reused, not redone

    broken = tmp_path / "broken"
    shutil.copytree(SUITE / "tinystats", broken)
    (broken / "already-passes.toml").write_text(BROKEN)
    done = portwright("eval", "validate", str(broken), "--repos", str(repos), "--out",
                      str(out))
    assert done.returncode == 1, done.stdout + done.stderr
    flat = " ".join((done.stdout + done.stderr).split())
    assert ("invalid tinystats/already-passes: passes at parent already: "
            "tests/test_stats.py::test_clamp_keeps_bounds_inclusive") in done.stderr
    assert "1 of 3 task(s) invalid: dropped from runs" in flat
    record = json.loads((out / "validation" / "tinystats--already-passes.json").read_text())
    assert record["valid"] is False
    assert record["reason"] == ("passes at parent already: "
                                "tests/test_stats.py::test_clamp_keeps_bounds_inclusive")
    assert record["parent"]["tests/test_moving_average.py::test_moving_average_trailing_window"] \
        is False


CCACHE_SETUP = ('setup = ["apt-get update -qq && apt-get install -y -qq '
                '--no-install-recommends ccache"]\n')


def _ccache_results(log: str) -> dict[str, str]:
    """Source file name → ``hit`` or ``miss``, from a ccache log."""
    results: dict[str, str] = {}
    source: dict[str, str] = {}  # by the compiling process: compiles run side by side
    for line in log.splitlines():
        if m := re.search(r"^\[\S+ (\d+) *\] Source file: (\S+)", line):
            source[m.group(1)] = Path(m.group(2)).name
        elif m := re.search(r"^\[\S+ (\d+) *\] Result: "
                            r"(cache_miss|direct_cache_hit|preprocessed_cache_hit)$", line):
            results[source[m.group(1)]] = "miss" if m.group(2) == "cache_miss" else "hit"
    return results


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.parametrize("configure", ["cmake -S . -B build",
                                       "cmake -S . -B build -DCMAKE_BUILD_TYPE=Debug"],
                         ids=["release", "debug"])
def test_the_compiler_cache_holds_the_parent_only_and_scoring_cannot_write_it(
        repos: Path, tmp_path: Path, configure: str) -> None:
    """With ``ccache`` in the task's image: validation fills the task's cache from the
    parent's build; the port's sources and a scored tree's are compiled, not taken from
    it, and code under test can neither add to it nor plant a file in it. A build with
    debug information (``-g``) in a tree elsewhere hits the parent's entries as well."""
    if not docker_engine_running():
        pytest.skip("needs a running Docker engine (make engine)")
    task_file = tmp_path / "cached.toml"
    text = (SUITE / "rmsnorm" / "rmsnorm-fused-residual.toml").read_text()
    assert 'test = "cmake -S . -B build && ' in text
    task_file.write_text(text.replace('test = "cmake -S . -B build && ',
                                      f'test = "{configure} && ') + CCACHE_SETUP)
    (task,) = load_suite(task_file).tasks
    out = tmp_path / "out"
    try:
        record = validate(task, repos, out)
    except SandboxError as exc:  # the image's setup needs a Debian mirror
        pytest.skip(f"cannot build an image with ccache here: {exc}")
    assert record.valid, record.reason
    cache = cache_path(out, task)
    filled = sorted(p.relative_to(cache) for p in cache.rglob("*") if p.is_file())
    assert filled

    # the port, built against the cache as validation's second step builds it
    port = tmp_path / "port"
    git(repos / "rmsnorm" / "rmsnorm-cpp", "worktree", "add", "-q", "--detach", str(port),
        "reference/rmsnorm-fused-residual")
    ws = prepare(task, repos, out / "work" / task.slug)
    logged = {"CCACHE_LOGFILE": "/tmp/ccache.log"}
    with hidden.test_sandbox(task, port, source=EnvSource(ws.downstream, ws.harness),
                             log_dir=tmp_path / "logs", run_id="cache-test",
                             cache=BuildCache(cache, writable=False)) as sandbox:
        built = sandbox.exec(["sh", "-c", f"{configure} >/dev/null && "
                              "cmake --build build -j 2 >/dev/null && ./build/test_rmsnorm"],
                             env=logged)
        assert built.ok, built.stdout_tail + built.stderr_tail
        found = sandbox.exec(["grep", "-E", "Source file|Result: ", "/tmp/ccache.log"])
        planted = sandbox.exec(["sh", "-c", 'echo x > "$CCACHE_DIR/planted"'])
    assert "RmsNorm.FusedResidual" in built.stdout_head + built.stdout_tail
    results = _ccache_results(found.stdout_head + found.stdout_tail)
    assert results["check.cpp"] == "hit"  # the parent's, unchanged by the port
    assert results["rmsnorm.cpp"] == "miss"  # the port's own: never in the cache
    assert not planted.ok
    assert sorted(p.relative_to(cache) for p in cache.rglob("*") if p.is_file()) == filled
