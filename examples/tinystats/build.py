"""Build the bundled example: ``tinystats`` (JavaScript upstream) and ``pystats``
(its Python port) as two real git repositories.

Each folder under ``upstream/`` and ``downstream/`` is one commit, applied in name
order: its files are copied over the tree, ``message.txt`` is the commit message.
``@PIN@`` in downstream files becomes the sha of the upstream commit the port
matches (the third: docs about rounding). After the pin, upstream adds
``movingAverage`` (never ported), ``percentile`` (already ported downstream under
its snake_case name) and a README change (docs only). The recorded model
transcripts (``demo-*.cassette.jsonl``, see ``record_cassettes.py``) are copied to
the downstream's git-ignored ``.portwright/demo/``.

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
PIN_STEP = "03-docs-rounding"
_ENV = {
    "GIT_AUTHOR_NAME": "tinystats maintainers",
    "GIT_AUTHOR_EMAIL": "maintainers@tinystats.invalid",
    "GIT_COMMITTER_NAME": "tinystats maintainers",
    "GIT_COMMITTER_EMAIL": "maintainers@tinystats.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


@dataclass(frozen=True)
class Example:
    """Where the example was built, and its pin."""

    upstream: Path
    downstream: Path
    pin: str


def _git(repo: Path, *args: str, when: int = 0) -> str:
    stamp = f"{1767225600 + when * 86400} +0000"  # fixed dates: the same shas on every build
    env = {**os.environ, **_ENV, "GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
    done = subprocess.run(["git", *args], cwd=repo, env=env, check=True,
                          capture_output=True, text=True)
    return done.stdout.strip()


def _replay(steps: Path, repo: Path, substitutions: dict[str, str], day: int) -> dict[str, str]:
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    shas: dict[str, str] = {}
    for number, step in enumerate(sorted(p for p in steps.iterdir() if p.is_dir())):
        for source in sorted(step.rglob("*")):
            if source.is_dir() or source.name == "message.txt":
                continue
            target = repo / source.relative_to(step)
            target.parent.mkdir(parents=True, exist_ok=True)
            text = source.read_text(encoding="utf-8")
            for key, value in substitutions.items():
                text = text.replace(key, value)
            target.write_text(text, encoding="utf-8")
        _git(repo, "add", "-A")
        message = (step / "message.txt").read_text(encoding="utf-8").strip()
        _git(repo, "commit", "-q", "-m", message, when=day + number)
        shas[step.name] = _git(repo, "rev-parse", "HEAD")
    return shas


def build(dest: Path) -> Example:
    """Create ``dest/tinystats`` and ``dest/pystats``; ``dest`` must not hold them yet."""
    upstream, downstream = dest / "tinystats", dest / "pystats"
    for path in (upstream, downstream):
        if path.exists():
            raise FileExistsError(f"{path} exists; choose an empty destination")
    shas = _replay(HERE / "upstream", upstream, {}, day=0)
    pin = shas[PIN_STEP]
    _replay(HERE / "downstream", downstream, {"@PIN@": pin}, day=2)
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
