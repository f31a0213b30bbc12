"""Build the repositories of the bundled example tasks, as ``--repos`` expects them.

    python benchmarks/port-tasks/examples/build_repos.py DEST
    portwright eval validate benchmarks/port-tasks/examples --repos DEST

Each example of ``examples/`` the tasks use is built (the same shas every time) into
``DEST/<example>/``, so that a task's ``repo = "<example>/<name>"`` is
``DEST/<example>/<name>``; then the ``reference/<row>`` branches are added to each
downstream (its ``main`` is left as the demo has it):

- ``tinystats/tinystats`` → ``tinystats/pystats`` (JavaScript → Python):
  ``reference/moving-average``, ``reference/percentile``;
- ``rmsnorm/upstream`` → ``rmsnorm/rmsnorm-cpp`` (Python → C++):
  ``reference/rmsnorm-fused-residual``.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[3]


def _example(name: str) -> ModuleType:
    """``examples/<name>/build.py`` as a module of its own (every example's is build.py)."""
    spec = importlib.util.spec_from_file_location(f"{name}_example_build",
                                                  ROOT / "examples" / name / "build.py")
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load examples/{name}/build.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def build_repos(dest: Path) -> dict[str, Path]:
    """Build every example into ``dest`` (which must not hold them yet); ``owner/name`` →
    the repository."""
    tinystats_build, rmsnorm_build = _example("tinystats"), _example("rmsnorm")
    tinystats = tinystats_build.build(dest / "tinystats")
    tinystats_build.add_reference_branches(tinystats)
    rmsnorm = rmsnorm_build.build(dest / "rmsnorm")
    rmsnorm_build.add_reference_branch(rmsnorm)
    return {f"{path.parent.name}/{path.name}": path
            for path in (tinystats.upstream, tinystats.downstream, rmsnorm.upstream,
                         rmsnorm.downstream)}


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: build_repos.py DEST")
    for name, path in build_repos(Path(sys.argv[1]).resolve()).items():
        print(f"{name:24} {path}")
