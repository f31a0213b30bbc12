"""Reading parity files: text with exact bytes kept, globs over the downstream repo."""

from __future__ import annotations

from pathlib import Path

from portwright import safefs
from portwright.errors import ParityFileError, UnsafePath
from portwright.globs import match


def read_text(path: Path) -> str:
    """The file's text with line endings as written (no newline translation)."""
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            return handle.read()
    except UnicodeDecodeError as exc:
        raise ParityFileError("not UTF-8 text", file=path, fix="save the file as UTF-8") from exc


def write_text(repo: Path, path: Path, text: str) -> None:
    """Write ``text`` byte for byte (no newline translation) as the regular file ``path``
    of ``repo``, with no link followed on the way or at the end (:mod:`portwright.safefs`:
    a sandboxed command may have turned the record, or a folder above it, into a link to a
    file the host would then overwrite). A record that is not a regular file reached so is
    refused, naming it."""
    name = rel(repo, path)
    try:
        safefs.write_file(repo, name, text.encode("utf-8"))
    except UnsafePath as exc:
        raise ParityFileError(f"refusing to write a record: {exc.reason}", file=path,
                              fix=f"restore it as a regular file (`git checkout -- {name}`) "
                                  "and look at what made it a link") from exc


def rel(repo: Path, path: Path) -> str:
    """``path`` relative to ``repo``, posix."""
    try:
        return path.relative_to(repo).as_posix()
    except ValueError:
        return path.as_posix()


def glob_files(repo: Path, patterns: list[str]) -> list[Path]:
    """Files under ``repo`` matching any of ``patterns`` (``**`` allowed), sorted."""
    found: set[Path] = set()
    for pattern in patterns:
        if not any(ch in pattern for ch in "*?["):
            candidate = repo / pattern
            if candidate.is_file():
                found.add(candidate)
            elif candidate.is_dir():
                found.update(p for p in candidate.rglob("*.md") if p.is_file())
            continue
        for path in repo.glob(pattern):
            if path.is_file() and match(rel(repo, path), pattern):
                found.add(path)
    return sorted(found)
