"""Build the bundled example: ``tinystats`` (JavaScript upstream) and ``pystats``
(its Python port) as two real git repositories.

Each repository's history is kept as ``git format-patch`` files under ``upstream/``
and ``downstream/``, applied in name order with ``git am`` and fixed dates, so every
build has the same shas. ``@PIN@`` in the downstream patches becomes the sha of the
upstream commit the port matches (the third: docs about rounding). After the pin,
upstream adds ``movingAverage`` (never ported), ``percentile`` (already ported
downstream under its snake_case name) and a README change (docs only). The recorded
model transcripts (``demo-*.cassette.jsonl``, see ``record_cassettes.py``) are copied
to the downstream's git-ignored ``.portwright/demo/``.

To change the example: build it, commit in the built repository, export its history
again (``git format-patch --root --zero-commit --no-signature -o examples/tinystats/
downstream HEAD``, with ``@PIN@`` put back for the pin) and re-record the cassettes.

:func:`add_reference_branches` adds, without touching ``main``, one branch per row the
port tasks of ``benchmarks/port-tasks/examples`` use, ``reference/<row>``: its tip is the
real port of the row (source and tests), its parent where the task starts.
``moving-average``: the patch ``reference/moving-average.patch`` on ``main``.
``percentile``: the downstream's own port of it (made ahead of the pin, before portwright
was adopted), on the commit before it.

    python examples/tinystats/build.py DEST [--reference]
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
PIN_PATCH = "0003-Docs-explain-how-results-are-rounded.patch"
REFERENCE = HERE / "reference"
"""``<row>.patch``: the real port of a row the downstream lacks, applied on ``main``."""
PERCENTILE_SUBJECT = "Port percentile (linear interpolation) ahead of the pin"
IDENTITIES = {
    "tinystats": ("tinystats maintainers", "maintainers@tinystats.invalid"),
    "pystats": ("pystats maintainers", "maintainers@pystats.invalid"),
}


@dataclass(frozen=True)
class Example:
    """Where the example was built, and its pin."""

    upstream: Path
    downstream: Path
    pin: str


def _git(repo: Path, *args: str, who: str, stdin: str | None = None) -> str:
    name, email = IDENTITIES[who]
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_COMMITTER_NAME": name,
           "GIT_COMMITTER_EMAIL": email, "GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email}
    done = subprocess.run(["git", *args], cwd=repo, env=env, check=True, input=stdin,
                          capture_output=True, text=True)
    return done.stdout.strip()


def _replay(patches: Path, repo: Path, substitutions: dict[str, str]) -> dict[str, str]:
    """A new repository at ``repo`` with every patch of ``patches`` applied as a commit."""
    repo.mkdir(parents=True)
    who = repo.name
    _git(repo, "init", "-q", "-b", "main", who=who)
    shas: dict[str, str] = {}
    for patch in sorted(patches.glob("*.patch")):
        text = patch.read_text(encoding="utf-8")
        for key, value in substitutions.items():
            text = text.replace(key, value)
        _git(repo, "am", "-q", "--committer-date-is-author-date", who=who, stdin=text)
        shas[patch.name] = _git(repo, "rev-parse", "HEAD", who=who)
    return shas


def build(dest: Path) -> Example:
    """Create ``dest/tinystats`` and ``dest/pystats``; ``dest`` must not hold them yet."""
    upstream, downstream = dest / "tinystats", dest / "pystats"
    for path in (upstream, downstream):
        if path.exists():
            raise FileExistsError(f"{path} exists; choose an empty destination")
    pin = _replay(HERE / "upstream", upstream, {})[PIN_PATCH]
    _replay(HERE / "downstream", downstream, {"@PIN@": pin})
    cassettes = downstream / ".portwright" / "demo"  # git-ignored: not part of the port
    cassettes.mkdir(parents=True)
    for cassette in sorted(HERE.glob("demo-*.cassette.jsonl")):
        shutil.copy(cassette, cassettes / cassette.name)
    return Example(upstream=upstream, downstream=downstream, pin=pin)


def add_reference_branches(example: Example) -> dict[str, str]:
    """Add ``reference/<row>`` for ``moving-average`` and ``percentile`` to the downstream
    (``main`` stays checked out, as it was); row → the port commit's sha."""
    repo = example.downstream
    found: dict[str, str] = {}
    for patch in sorted(REFERENCE.glob("*.patch")):
        branch = f"reference/{patch.stem}"
        _git(repo, "checkout", "-q", "-b", branch, "main", who="pystats")
        try:
            _git(repo, "am", "-q", "--committer-date-is-author-date", who="pystats",
                 stdin=patch.read_text(encoding="utf-8"))
            found[patch.stem] = _git(repo, "rev-parse", "HEAD", who="pystats")
        finally:
            _git(repo, "checkout", "-q", "main", who="pystats")
    percentile = _git(repo, "log", "--format=%H", "--fixed-strings",
                      f"--grep={PERCENTILE_SUBJECT}", "main", who="pystats").split()
    assert len(percentile) == 1, "the downstream's port of percentile is not in its history"
    _git(repo, "branch", "reference/percentile", percentile[0], who="pystats")
    found["percentile"] = percentile[0]
    return found


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3) or sys.argv[2:] not in ([], ["--reference"]):
        sys.exit("usage: build.py DEST [--reference]")
    example = build(Path(sys.argv[1]).resolve())
    print(f"upstream   {example.upstream}")
    print(f"downstream {example.downstream}")
    print(f"pin        {example.pin}")
    if sys.argv[2:]:
        for row, sha in add_reference_branches(example).items():
            print(f"reference  {row}: {sha}")
