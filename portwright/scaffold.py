"""``portwright init``: scaffold a downstream repo without overwriting anything."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal

import jinja2

from portwright.config import CONFIG_FILE
from portwright.errors import RepositoryError, RulesError
from portwright.rules.loader import RULES_NAME, parse_rules_file
from portwright.vcs import plumbing
from portwright.vcs.upstream import is_url

logger = logging.getLogger(__name__)

Action = Literal["created", "appended", "kept"]


@dataclass(frozen=True)
class Scaffolded:
    """One file ``init`` looked at, and what it did with it."""

    path: str
    action: Action
    why: str


def _template(name: str) -> str:
    return (resources.files("portwright") / "templates" / name).read_text(encoding="utf-8")


def _render(template: str, **values: str) -> str:
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                             autoescape=False)
    return env.from_string(_template(template)).render(**values)


def scaffold(
    repo: Path,
    *,
    upstream: str,
    pin: str | None = None,
    name: str | None = None,
    test_command: str = "python3 -m pytest -q",
) -> list[Scaffolded]:
    """Write ``portwright.toml``, an AGENTS.md gates section and empty parity files.

    Files that exist are kept as they are; an AGENTS.md without a gates block gets
    the section appended (nothing in it is changed).
    """
    plumbing.check_repo(repo, "the downstream repository")
    resolved_pin = pin or "0000000"
    if not is_url(upstream):
        upstream_repo = plumbing.check_repo((repo / upstream).resolve(), "the upstream checkout")
        resolved_pin = plumbing.rev_parse(upstream_repo, pin or "HEAD")
    elif pin is None:
        raise RepositoryError(
            "an upstream given as a URL needs an explicit pin",
            key="--pin", fix="pass --pin SHA (the upstream revision the port matches today)",
        )
    display = name or Path(upstream.rstrip("/")).name.removesuffix(".git") or "upstream"
    done: list[Scaffolded] = []
    files = {
        CONFIG_FILE: _render("portwright.toml", upstream=upstream, name=display),
        "upstream-sync.md": _render("upstream-sync.md", pin=resolved_pin),
        "parity-ledger.md": _template("parity-ledger.md"),
        "porting-inventory.md": _template("porting-inventory.md"),
        "docs/parity/matrix.md": _template("matrix.md"),
        "specs/.gitkeep": "",
    }
    for rel, text in files.items():
        done.append(_write_new(repo / rel, rel, text))
    done.append(_agents_md(repo, test_command))
    done.append(_gitignore(repo))
    return done


def _write_new(path: Path, rel: str, text: str) -> Scaffolded:
    if path.exists():
        return Scaffolded(rel, "kept", "exists; left as it is")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return Scaffolded(rel, "created", "")


def _agents_md(repo: Path, test_command: str) -> Scaffolded:
    path = repo / RULES_NAME
    section = _render("AGENTS.section.md", test_command=test_command)
    if not path.exists():
        path.write_text(_template("AGENTS.md") + section, encoding="utf-8")
        return Scaffolded(RULES_NAME, "created", "rules prose and a gates block")
    text = path.read_text(encoding="utf-8")
    try:
        has_block = parse_rules_file(path, RULES_NAME).block_line is not None
    except RulesError as exc:
        return Scaffolded(RULES_NAME, "kept", f"not changed: {exc.message}")
    if has_block:
        return Scaffolded(RULES_NAME, "kept", "already has a gates block")
    with path.open("a", encoding="utf-8") as handle:
        handle.write(("" if text.endswith("\n") else "\n") + section)
    return Scaffolded(RULES_NAME, "appended", "gates section added at the end")


def _gitignore(repo: Path) -> Scaffolded:
    path = repo / ".gitignore"
    entry = ".portwright/"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    if entry in text.splitlines():
        return Scaffolded(".gitignore", "kept", f"already ignores {entry}")
    with path.open("a", encoding="utf-8") as handle:
        handle.write(("" if not text or text.endswith("\n") else "\n") + entry + "\n")
    return Scaffolded(".gitignore", "appended" if text else "created", f"ignores {entry}")
