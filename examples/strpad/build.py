"""Build the environment-image example: ``strpad`` (JavaScript upstream) and ``pystrpad``
(its Python port, whose tests need ``wcwidth`` from PyPI) as two real git repositories.

The port's ``[sandbox] setup`` installs ``requirements.txt`` into a virtual environment
when portwright builds its environment image (with network); its gate then runs
``/opt/venv/bin/python -m pytest`` in a sandbox without network. Each repository is one
commit of the files under ``upstream/`` and ``downstream/``, with fixed dates, so every
build has the same shas; ``@PIN@`` in the downstream becomes the upstream commit.

    python examples/strpad/build.py DEST
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATE = "2026-01-05T12:00:00+00:00"
IDENTITIES = {
    "strpad": ("strpad maintainers", "maintainers@strpad.invalid"),
    "pystrpad": ("pystrpad maintainers", "maintainers@pystrpad.invalid"),
}


@dataclass(frozen=True)
class Example:
    """Where the example was built, and its pin."""

    upstream: Path
    downstream: Path
    pin: str


def _git(repo: Path, *args: str) -> str:
    name, email = IDENTITIES[repo.name]
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_COMMITTER_NAME": name,
           "GIT_COMMITTER_EMAIL": email, "GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email,
           "GIT_AUTHOR_DATE": DATE, "GIT_COMMITTER_DATE": DATE}
    done = subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True,
                          text=True)
    return done.stdout.strip()


def _commit(tree: Path, repo: Path, message: str, substitutions: dict[str, str]) -> str:
    """A new repository at ``repo`` holding the files of ``tree`` in one commit."""
    # what running the example's code or tests here leaves (bytecode) is not the example's
    shutil.copytree(tree, repo, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for path in sorted(repo.rglob("*")):
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            for key, value in substitutions.items():
                text = text.replace(key, value)
            path.write_text(text, encoding="utf-8")
    if (repo / "gitignore").exists():  # kept without its dot here: it would apply to examples/
        (repo / "gitignore").rename(repo / ".gitignore")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message)
    return _git(repo, "rev-parse", "HEAD")


def build(dest: Path) -> Example:
    """Create ``dest/strpad`` and ``dest/pystrpad``; ``dest`` must not hold them yet."""
    upstream, downstream = dest / "strpad", dest / "pystrpad"
    for path in (upstream, downstream):
        if path.exists():
            raise FileExistsError(f"{path} exists; choose an empty destination")
    dest.mkdir(parents=True, exist_ok=True)
    pin = _commit(HERE / "upstream", upstream, "Add padEnd and displayWidth", {})
    _commit(HERE / "downstream", downstream, "Port padEnd and displayWidth from strpad",
            {"@PIN@": pin})
    return Example(upstream, downstream, pin)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    example = build(Path(sys.argv[1]))
    print(f"upstream:   {example.upstream}\ndownstream: {example.downstream}\n"
          f"pin:        {example.pin}")
