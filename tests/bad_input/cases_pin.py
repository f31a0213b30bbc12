"""Bad input in the pin stores, and upstream checkouts that cannot serve the pin."""

from __future__ import annotations

import shutil
import subprocess

from tests.bad_input.harness import Case, Setup
from tests.bad_input.world import World

PIN_FILE = "upstream-sync.md"


def pin_line(line: str) -> Setup:
    return lambda w: w.pin_text(line)


def store(kind: str, file: str, text: str | bytes, key: str = "upstream.commit") -> Setup:
    def setup(w: World) -> None:
        w.write(file, text.replace("{pin}", w.pin) if isinstance(text, str) else text)
        w.config(f'\n[pin]\nstore = "{kind}"\nfile = "{file}"\nkey = "{key}"\n')
    return setup


def _pin_object(kind: str) -> Setup:
    return lambda w: w.pin_text(f"Pinned commit: `{w.up_object(kind)}`")


def _pin_dir(w: World) -> None:
    w.remove(PIN_FILE)
    (w.repo / PIN_FILE).mkdir()
    (w.repo / PIN_FILE / "x").write_text("x\n")


def _replace_upstream(w: World, *clone_args: str) -> None:
    """Upstream replaced by a clone of itself made with ``clone_args``."""
    original = w.root / "upstream-original"
    w.up.path.rename(original)
    subprocess.run(["git", "clone", "-q", *clone_args, f"file://{original}", str(w.up.path)],
                   check=True, capture_output=True)
    shutil.rmtree(original)


def _shallow_upstream(w: World) -> None:
    _replace_upstream(w, "--depth", "1")


def _empty_upstream(w: World) -> None:
    shutil.rmtree(w.up.path)
    w.up.path.mkdir()
    subprocess.run(["git", "init", "-q", str(w.up.path)], check=True)


def _bare_upstream(w: World) -> None:
    subprocess.run(["git", "clone", "-q", "--bare", str(w.up.path), str(w.root / "up.git")],
                   check=True, capture_output=True)
    w.replace("portwright.toml", '"../upstream"', '"../up.git"')


def _unreachable_url(w: World) -> None:
    w.replace("portwright.toml", '"../upstream"', '"file:///nonexistent/upstream.git"')


GAP = ("gap",)
DOCTOR = ("doctor",)
CASES = [
    Case("pin-file-missing", GAP, lambda w: w.remove(PIN_FILE), says=(PIN_FILE,)),
    Case("pin-file-directory", GAP, _pin_dir, says=(PIN_FILE,)),
    Case("pin-not-utf8", GAP, lambda w: w.write(PIN_FILE, b"Pinned commit: `\xff`\n"),
         says=(PIN_FILE, "utf-8")),
    Case("pin-not-utf8-doctor", DOCTOR, lambda w: w.write(PIN_FILE, b"# \xff\n"),
         says=(PIN_FILE, "utf-8")),
    Case("pin-no-line", GAP, pin_line("We track upstream loosely."), says=(PIN_FILE,)),
    Case("pin-two-pins", GAP, lambda w: w.pin_text(
        f"Pinned commit: `{w.pin}`\n\nPinned commit: `{w.head}`"), says=(f"{PIN_FILE}:5",)),
    Case("pin-upper-case", GAP, lambda w: w.pin_text(f"Pinned commit: `{w.pin.upper()}`"),
         says=(f"{PIN_FILE}:3",)),
    Case("pin-too-short", GAP, pin_line("Pinned commit: `abc12`"), says=(PIN_FILE,)),
    Case("pin-unknown-sha", GAP, pin_line("Pinned commit: `" + "ab" * 20 + "`"),
         says=(PIN_FILE, "abab")),
    Case("pin-unknown-sha-doctor", DOCTOR, pin_line("Pinned commit: `" + "ab" * 20 + "`"),
         says=(PIN_FILE, "abab")),
    Case("pin-tree-sha", GAP, _pin_object("tree"), says=(PIN_FILE, "tree")),
    Case("pin-blob-sha", ("anchors", "check"), _pin_object("blob"), says=(PIN_FILE, "blob")),
    Case("pin-yaml-key-missing", GAP, store("yaml", "port.yaml", "upstream:\n  sha: {pin}\n"),
         says=("port.yaml", "upstream.commit")),
    Case("pin-yaml-invalid", GAP, store("yaml", "port.yaml", "upstream: [\n"),
         says=("port.yaml",)),
    Case("pin-yaml-list", GAP, store("yaml", "port.yaml", "- {pin}\n"), says=("port.yaml",)),
    Case("pin-yaml-key-through-list", GAP, store("yaml", "port.yaml", "- commit: {pin}\n"),
         says=("port.yaml", "upstream.commit", "is a list", "[0].commit")),
    Case("pin-yaml-not-utf8", GAP, store("yaml", "port.yaml", b"upstream:\n  commit: \xff\n"),
         says=("port.yaml", "utf-8")),
    Case("pin-toml-integer", GAP, store("toml", "port.toml", "[upstream]\ncommit = 1234567\n"),
         says=("port.toml:2", "upstream.commit")),
    Case("pin-toml-hex-integer", GAP, store("toml", "port.toml",
                                           "[upstream]\ncommit = 0x1234abcd\n"),
         says=("port.toml:2", "upstream.commit")),
    Case("pin-toml-table", GAP, store("toml", "port.toml",
                                     '[upstream.commit]\nsha = "{pin}"\n'),
         says=("port.toml", "upstream.commit")),
    Case("pin-toml-invalid", GAP, store("toml", "port.toml", "[upstream\n"),
         says=("port.toml:1",)),
    Case("pin-toml-not-utf8", GAP, store("toml", "port.toml", b'[upstream]\ncommit = "\xff"\n'),
         says=("port.toml", "utf-8")),
    Case("pin-toml-missing-file", GAP, lambda w: w.config(
        '\n[pin]\nstore = "toml"\nfile = "port.toml"\nkey = "upstream.commit"\n'),
        says=("port.toml",)),
    # upstream checkouts
    Case("up-shallow-without-pin", GAP, _shallow_upstream, says=("shallow", "unshallow")),
    Case("up-empty-repository", GAP, _empty_upstream, says=("upstream", "no commits")),
    Case("up-unreachable-url", GAP, _unreachable_url, says=("upstream.source",)),
    Case("up-bare-ok", GAP, _bare_upstream, expect=0, says=("add layer_norm",)),
]
