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

    python examples/tinystats/build.py DEST
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


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: build.py DEST")
    example = build(Path(sys.argv[1]).resolve())
    print(f"upstream   {example.upstream}")
    print(f"downstream {example.downstream}")
    print(f"pin        {example.pin}")
