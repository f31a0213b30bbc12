"""The project every bad-input case starts from: a real upstream and a real downstream
port (both git repositories) whose config, rules, pin, matrix, ledger, inventory and spec
are all valid, so that each case's one mutation is the only thing wrong."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import GIT_ENV, GitRepo

UPSTREAM_FILES = {
    "attn/fp8.py": (
        '"""FP8 attention."""\n'
        "\n"
        "\n"
        "def fp8_attention(q, k, v):\n"
        "    scale = q.shape[-1] ** -0.5\n"
        "    return softmax(q @ k.T * scale) @ v\n"
        "\n"
        "\n"
        "def prefill(q, k, v):\n"
        "    return fp8_attention(q, k, v)\n"
    ),
    "kv/cache.py": 'KV_DTYPE = "fp8_e4m3"\n\n\ndef alloc(n):\n    return [0] * n\n',
    "requirements.txt": "numpy==1.26.4\ntorch==2.4.0\n",
}

CONFIG = '[upstream]\nsource = "../upstream"\nname = "upstream"\n'

AGENTS = """# Rules

Port carefully.

```toml portwright
[[gate]]
name = "anchors"
check = "anchors"
phases = ["spec", "pin"]

[[gate]]
name = "spec-complete"
check = "spec-complete"
phases = ["spec"]

[[gate]]
name = "unit"
run = "test -f src/attn.py"
phases = ["focused", "full"]
timeout = 60
```
"""

MATRIX = """# Models

| id | title | status | spec | upstream | notes |
| --- | --- | --- | --- | --- | --- |
| attn-fp8 | FP8 attention | partial | [spec](../../specs/attn-fp8.md) | fp8_attention | decode |
| kv-cache | KV cache | missing | - | alloc |  |
"""

SPEC = """---
row: attn-fp8
pin: {pin}
slice: decode path only
---
# FP8 attention

## Surface

| item | kind | status | reason | anchor |
| --- | --- | --- | --- | --- |
| decode | mode | ported | | `attn/fp8.py:4-6 "def fp8_attention(q, k, v):"` |
| prefill | mode | deferred | needs paged prefill | `attn/fp8.py:9-10` |

## Slice

Decode only.

## Anchors

- `attn/fp8.py:5 "scale = q.shape[-1] ** -0.5"`

## Adaptations

- none beyond naming.
"""

LEDGER = """# Parity ledger

| change | upstream | kind | cost | notes |
| --- | --- | --- | --- | --- |
| src/attn.py | `attn/fp8.py:4-6 "def fp8_attention"` | port | | |
"""

INVENTORY = """# From-scratch inventory

| item | path | searched | notes |
| --- | --- | --- | --- |
| ring buffer | src/ring.py | kv/cache.py | upstream uses a list |
"""

DOWNSTREAM_FILES = {
    "portwright.toml": CONFIG,
    "AGENTS.md": AGENTS,
    "docs/parity/models.md": MATRIX,
    "parity-ledger.md": LEDGER,
    "porting-inventory.md": INVENTORY,
    "src/attn.py": "def fp8_attention(q, k, v):\n    return q\n",
    "src/ring.py": "class Ring:\n    pass\n",
    ".gitignore": "__pycache__/\n",
}


@dataclass
class World:
    """One case's copy of the project: ``down`` (the port) and ``up`` (its upstream)."""

    root: Path
    down: GitRepo
    up: GitRepo
    pin: str
    """The pinned upstream commit."""
    head: str
    """Upstream HEAD (two commits after the pin)."""

    @property
    def repo(self) -> Path:
        return self.down.path

    # -- mutations -------------------------------------------------------------------

    def write(self, rel: str, data: str | bytes, *, repo: Path | None = None) -> Path:
        path = (repo or self.repo) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink() or path.is_file():
            path.unlink()
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data, encoding="utf-8")
        return path

    def read(self, rel: str) -> str:
        return (self.repo / rel).read_text(encoding="utf-8")

    def replace(self, rel: str, old: str, new: str) -> None:
        text = self.read(rel)
        assert old in text, f"{old!r} not in {rel}"
        self.write(rel, text.replace(old, new, 1))

    def config(self, extra: str) -> None:
        """Append TOML to portwright.toml."""
        self.write("portwright.toml", self.read("portwright.toml") + extra)

    def gates(self, block: str) -> None:
        """Replace the gates block of AGENTS.md by ``block``."""
        self.write("AGENTS.md", f"# Rules\n\nPort carefully.\n\n```toml portwright\n{block}```\n")

    def gate(self, body: str) -> None:
        """The gates block holds this one gate (plus the anchors check)."""
        self.gates(f"[[gate]]\nname = \"anchors\"\ncheck = \"anchors\"\nphases = [\"pin\"]\n\n"
                   f"[[gate]]\n{body}\n")

    def pin_text(self, line: str) -> None:
        self.write("upstream-sync.md", f"# Upstream sync\n\n{line}\n")

    def symlink(self, rel: str, target: str) -> None:
        path = self.repo / rel
        if path.exists() or path.is_symlink():
            path.unlink()
        path.symlink_to(target)

    def remove(self, rel: str) -> None:
        path = self.repo / rel
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()

    def git(self, *args: str, repo: Path | None = None) -> str:
        done = subprocess.run(["git", *args], cwd=repo or self.repo, check=True,
                              capture_output=True, text=True, env={**os.environ, **GIT_ENV})
        return done.stdout.strip()

    def up_commit(self, message: str, files: dict[str, str]) -> str:
        return self.up.commit(message, files)

    def up_object(self, kind: str) -> str:
        """The sha of upstream's root tree (``tree``) or of a blob (``blob``)."""
        if kind == "tree":
            return self.git("rev-parse", f"{self.pin}^{{tree}}", repo=self.up.path)
        return self.git("rev-parse", f"{self.pin}:kv/cache.py", repo=self.up.path)


def build(root: Path) -> World:
    """A fresh world under ``root``."""
    up = GitRepo(root / "upstream")
    pin = up.commit("upstream initial", UPSTREAM_FILES)
    up.commit("add layer_norm", {"norm.py": "def layer_norm(x, eps=1e-5):\n"
                                            "    if eps <= 0:\n"
                                            "        raise ValueError('eps')\n"
                                            "    return x\n"})
    head = up.commit("docs: readme", {"README.md": "# upstream\n"})
    down = GitRepo(root / "downstream")
    files = dict(DOWNSTREAM_FILES)
    files["upstream-sync.md"] = f"# Upstream sync\n\nPinned commit: `{pin}`\n"
    files["specs/attn-fp8.md"] = SPEC.format(pin=pin)
    down.commit("port skeleton", files)
    return World(root=root, down=down, up=up, pin=pin, head=head)


def copy(template: World, root: Path) -> World:
    """A copy of ``template`` under ``root`` (git repositories copied whole)."""
    for name in ("upstream", "downstream"):
        shutil.copytree(template.root / name, root / name, symlinks=True)
    return World(root=root, down=_reopen(root / "downstream"), up=_reopen(root / "upstream"),
                 pin=template.pin, head=template.head)


def _reopen(path: Path) -> GitRepo:
    repo = GitRepo.__new__(GitRepo)
    repo.path = path
    return repo
