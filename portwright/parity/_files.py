"""Reading parity files: text with exact bytes kept, globs over the downstream repo."""

from __future__ import annotations

from pathlib import Path

from portwright.errors import ParityFileError
from portwright.globs import match


def read_text(path: Path) -> str:
    """The file's text with line endings as written (no newline translation)."""
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            return handle.read()
    except UnicodeDecodeError as exc:
        raise ParityFileError("not UTF-8 text", file=path, fix="save the file as UTF-8") from exc


def write_text(path: Path, text: str) -> None:
    """Write ``text`` byte for byte (no newline translation)."""
    path.write_bytes(text.encode("utf-8"))


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
