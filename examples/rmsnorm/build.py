"""Build the bundled C++ example: ``upstream`` (rmsnorm, a pure-Python reference RMSNorm)
and ``rmsnorm-cpp`` (its C++17 port) as two real git repositories side by side.

Each repository's history is kept as ``git format-patch`` files under ``upstream/`` and
``downstream/``, applied in name order with ``git am`` and fixed dates, so every build has
the same shas. ``@PIN@`` in the downstream patches becomes the sha of the upstream commit
the port matches: the third (docs on dtypes and accumulation), the last one before the
fused residual-add mode. After the pin, upstream adds that mode (``rms_norm(x, weight, eps,
residual)``: missing downstream, the ``rmsnorm-fused-residual`` row) and a README change
(docs only).

``port-fused-residual/`` holds that row's port as two more downstream commits, the way a
port cycle makes them: the upstream tests ported to C++ (red: they compile and fail until
the overload exists), then the implementation (green). :func:`apply_patch` applies one;
``--port`` puts both on the branch :data:`PORT_BRANCH`; :func:`port_files` gives their
files as a scripted porter writes them.

:func:`add_reference_branch` (``--reference``) puts the same port as one commit, tests
and implementation together as a porter without the cycle makes it, on
:data:`REFERENCE_BRANCH` from ``main``: the reference of the port task in
``benchmarks/port-tasks/examples``. Neither branch moves ``main``.

To change the example: build it, commit in the built repository, export its history again
(``git format-patch --root --zero-commit --no-signature -o examples/rmsnorm/downstream
main``, with ``@PIN@`` put back for the pin; ``main..port/rmsnorm-fused-residual`` for the
port).

    python examples/rmsnorm/build.py DEST [--port] [--reference]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
PIN_PATCH = "0003-Docs-dtypes-accumulation-and-the-order-of-the-checks.patch"
FUSED_PATCH = "0004-Add-the-fused-residual-add-mode-rms_norm-x-weight-ep.patch"
README_PATCH = "0005-README-the-fused-residual-add-mode.patch"
PORT_PATCHES = sorted((HERE / "port-fused-residual").glob("*.patch"))
"""The port of the fused residual-add row: tests (red), then the implementation (green)."""
PORT_BRANCH = "port/rmsnorm-fused-residual"
REFERENCE_BRANCH = "reference/rmsnorm-fused-residual"
REFERENCE_MESSAGE = """Port the fused residual-add mode: rms_norm(x, weight, eps, residual)

RmsNorm.FusedResidual and RmsNorm.FusedResidualShapeMismatch ported from
upstream's tests, and the overload that returns (out, x + residual).
"""
UPSTREAM, DOWNSTREAM = "upstream", "rmsnorm-cpp"
IDENTITIES = {
    UPSTREAM: ("rmsnorm maintainers", "maintainers@rmsnorm.invalid"),
    DOWNSTREAM: ("rmsnorm-cpp maintainers", "maintainers@rmsnorm-cpp.invalid"),
}


@dataclass(frozen=True)
class Example:
    """Where the example was built, its pin and the upstream commits after it."""

    upstream: Path
    downstream: Path
    pin: str
    """Upstream commit the port claims parity with (docs on dtypes and accumulation)."""
    fused: str
    """Upstream commit adding the fused residual-add mode: missing downstream."""
    readme: str
    """Upstream commit documenting that mode in the README: docs only."""


def _git(repo: Path, *args: str, who: str, stdin: str | None = None,
         dated: str | None = None) -> str:
    name, email = IDENTITIES[who]
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_COMMITTER_NAME": name,
           "GIT_COMMITTER_EMAIL": email, "GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email}
    if dated is not None:  # a commit made now with a fixed date: the same sha every build
        env.update(GIT_AUTHOR_DATE=dated, GIT_COMMITTER_DATE=dated)
    done = subprocess.run(["git", *args], cwd=repo, env=env, check=True, input=stdin,
                          capture_output=True, text=True)
    return done.stdout.strip()


def apply_patch(repo: Path, patch: Path, substitutions: dict[str, str] | None = None, *,
                who: str = DOWNSTREAM) -> str:
    """Apply one ``git format-patch`` file to ``repo`` as a commit (committed by ``who``'s
    maintainers, with the patch's author and date); its sha."""
    text = patch.read_text(encoding="utf-8")
    for key, value in (substitutions or {}).items():
        text = text.replace(key, value)
    _git(repo, "am", "-q", "--committer-date-is-author-date", who=who, stdin=text)
    return _git(repo, "rev-parse", "HEAD", who=who)


def _replay(patches: Path, repo: Path, who: str,
            substitutions: dict[str, str]) -> dict[str, str]:
    """A new repository at ``repo`` with every patch of ``patches`` applied as a commit."""
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main", who=who)
    return {patch.name: apply_patch(repo, patch, substitutions, who=who)
            for patch in sorted(patches.glob("*.patch"))}


def build(dest: Path) -> Example:
    """Create ``dest/upstream`` and ``dest/rmsnorm-cpp``; ``dest`` must not hold them yet."""
    upstream, downstream = dest / UPSTREAM, dest / DOWNSTREAM
    for path in (upstream, downstream):
        if path.exists():
            raise FileExistsError(f"{path} exists; choose an empty destination")
    shas = _replay(HERE / "upstream", upstream, UPSTREAM, {})
    _replay(HERE / "downstream", downstream, DOWNSTREAM, {"@PIN@": shas[PIN_PATCH]})
    return Example(upstream=upstream, downstream=downstream, pin=shas[PIN_PATCH],
                   fused=shas[FUSED_PATCH], readme=shas[README_PATCH])


def add_port_branch(example: Example) -> list[str]:
    """Commit the port of the fused residual-add row on :data:`PORT_BRANCH` (``main`` stays
    checked out); the shas of the tests commit and of the implementation commit."""
    repo = example.downstream
    _git(repo, "checkout", "-q", "-b", PORT_BRANCH, who=DOWNSTREAM)
    try:
        return [apply_patch(repo, patch) for patch in PORT_PATCHES]
    finally:
        _git(repo, "checkout", "-q", "main", who=DOWNSTREAM)


def add_reference_branch(example: Example) -> str:
    """Commit the port of the fused residual-add row as one commit on
    :data:`REFERENCE_BRANCH` (``main`` stays checked out); its sha."""
    repo = example.downstream
    _git(repo, "checkout", "-q", "-b", REFERENCE_BRANCH, "main", who=DOWNSTREAM)
    try:
        last = [apply_patch(repo, patch) for patch in PORT_PATCHES][-1]
        date = _git(repo, "log", "-1", "--format=%aI", last, who=DOWNSTREAM)
        _git(repo, "reset", "-q", "--soft", "main", who=DOWNSTREAM)
        _git(repo, "commit", "-q", "-F", "-", who=DOWNSTREAM, stdin=REFERENCE_MESSAGE,
             dated=date)
        return _git(repo, "rev-parse", "HEAD", who=DOWNSTREAM)
    finally:
        _git(repo, "checkout", "-q", "main", who=DOWNSTREAM)


def port_files(example: Example) -> tuple[dict[str, str], dict[str, str]]:
    """The port of the fused residual-add row as whole files (path → text): those its tests
    commit changes, then those its implementation commit changes. Read from a scratch clone;
    ``example`` is left as it is."""
    with tempfile.TemporaryDirectory(prefix="rmsnorm-port-") as scratch:
        clone = Path(scratch) / DOWNSTREAM
        _git(Path(scratch), "clone", "-q", str(example.downstream), str(clone), who=DOWNSTREAM)
        files: list[dict[str, str]] = []
        for patch in PORT_PATCHES:
            sha = apply_patch(clone, patch)
            paths = _git(clone, "diff-tree", "--no-commit-id", "--name-only", "-r", sha,
                         who=DOWNSTREAM).splitlines()
            files.append({path: (clone / path).read_text(encoding="utf-8") for path in paths})
    return files[0], files[1]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Build the rmsnorm → rmsnorm-cpp example.")
    parser.add_argument("dest", type=Path, help="folder to build the two repositories in")
    parser.add_argument("--port", action="store_true",
                        help=f"also commit the fused residual-add port on {PORT_BRANCH}")
    parser.add_argument("--reference", action="store_true",
                        help=f"also commit it as one commit on {REFERENCE_BRANCH}")
    args = parser.parse_args()
    example = build(args.dest.resolve())
    print(f"upstream   {example.upstream}")
    print(f"downstream {example.downstream}")
    print(f"pin        {example.pin}")
    print(f"missing    {example.fused} (fused residual-add mode)")
    if args.port:
        tests, implementation = add_port_branch(example)
        print(f"port       {PORT_BRANCH}: tests {tests[:12]}, implementation "
              f"{implementation[:12]}")
    if args.reference:
        print(f"reference  {REFERENCE_BRANCH}: {add_reference_branch(example)}")
