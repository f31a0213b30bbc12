"""A parity row's evidence: its upstream symbols at the pin and at HEAD, the upstream
commits since the pin that touch them, and their downstream spellings.

Public API:

- ``row_evidence(upstream, downstream, symbols, pin, config, *, index=None) -> RowEvidence``

A symbol qualified by its file (``lib/common.js::DECLARATION``) is looked up by its name;
an anonymous module export, named after its file (``lib/re.js::re``), by its file. A
symbol that names one file is followed across renames (``git log --follow``): the commits
that changed it under an earlier name count, and the earlier names are listed.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

from portwright.config import PortwrightConfig
from portwright.evidence import names
from portwright.evidence.downstream import Downstream
from portwright.evidence.gapmodels import RowEvidence, SymbolEvidence
from portwright.evidence.history import HistoryIndex, downstream_index
from portwright.evidence.lookup import Location, TreeView
from portwright.project import Project
from portwright.vcs.plumbing import check_repo, git, rev_parse_many


def _word_regex(symbol: str) -> str:
    """A POSIX extended regular expression matching ``symbol`` as a whole word."""
    escaped = re.sub(r"([.\[\]()*+?{}|^$\\])", r"\\\1", symbol)
    return f"(^|[^A-Za-z0-9_$]){escaped}([^A-Za-z0-9_$]|$)"


def _looks_like_path(symbol: str) -> bool:
    return "/" in symbol or names.strip_extension(symbol) != symbol


def _qualified(symbol: str) -> tuple[str, str] | None:
    """``(path, name)`` of a symbol qualified by its file (``lib/common.js::DECLARATION``)."""
    path, sep, name = symbol.rpartition("::")
    return (path, name) if sep and path and name else None


def _grep(repo: Path, revs: list[str], symbol: str) -> dict[str, list[Location]]:
    """The first 20 lines naming ``symbol`` (a whole word) in each of ``revs`` (full shas),
    one ``git grep`` for all: it prefixes each line with the revision it is from."""
    unique = list(dict.fromkeys(revs))
    out = git(repo, "grep", "-n", "-I", "-w", "-F", "-e", symbol, *unique, "--",
              ok_codes=(0, 1))
    found: dict[str, list[Location]] = {rev: [] for rev in unique}
    for raw in out.decode("utf-8", "replace").splitlines():
        rev, path, line, _text = raw.split(":", 3)
        if len(found[rev]) < 20:
            found[rev].append(Location(path=path, line=int(line), text=symbol))
    return found


def _path_locations(tree: TreeView, symbol: str) -> list[Location]:
    prefix = symbol.rstrip("/")
    return [Location(path=p, line=1, text=symbol) for p in tree.paths
            if p == prefix or p.startswith(prefix + "/")][:20]


def _file_history(upstream: Path, pin: str, head: str, path: str,
                  is_file: bool) -> tuple[list[str], list[str]]:
    """Commits of ``pin..head`` that changed ``path`` (followed across renames when it is one
    file), and the earlier names it had."""
    if not is_file:
        return git(upstream, "log", "--format=%H", f"{pin}..{head}", "--",
                   path).decode().split(), []
    out = git(upstream, "log", "--follow", "--name-only", "--format=%x01%H", f"{pin}..{head}",
              "--", path).decode("utf-8", "replace")
    shas: list[str] = []
    earlier: list[str] = []
    for block in out.split("\x01")[1:]:
        sha, *paths = [line for line in block.splitlines() if line.strip()]
        shas.append(sha)
        earlier += [p for p in paths if p != path and p not in earlier]
    return shas, earlier


def _path_symbol(symbol: str, upstream: Path, pin_sha: str, head_sha: str,
                 view: Downstream, config: PortwrightConfig) -> SymbolEvidence:
    at_pin, at_head = TreeView(upstream, pin_sha), TreeView(upstream, head_sha)
    mapped = names.map_path(symbol, config.upstream.path_map) or symbol
    stems = view.tree.find_stem(mapped, config.upstream.path_map)
    target = symbol.rstrip("/")
    is_file = at_head.has_path(target) or at_pin.has_path(target)
    changes, earlier = _file_history(upstream, pin_sha, head_sha, target, is_file)
    return SymbolEvidence(
        symbol=symbol, is_path=True, upstream_at_pin=_path_locations(at_pin, symbol),
        upstream_at_head=_path_locations(at_head, symbol), upstream_changes=changes,
        renamed_from=earlier,
        downstream_at_head=_path_locations(view.tree, mapped)
        or [Location(path=p, line=1, text=p) for p in stems[:5]],
        downstream_history=[])


def row_evidence(upstream: Path, downstream: Path, symbols: list[str], pin: str,
                 config: PortwrightConfig, *, index: HistoryIndex | None = None) -> RowEvidence:
    """The upstream and downstream facts about a row's symbols (see the module docstring)."""
    upstream = check_repo(upstream, "upstream checkout")
    downstream = check_repo(downstream, "downstream repository")
    pin_sha, head_sha = rev_parse_many(upstream, [pin, config.upstream.branch])
    if index is None:  # brought up to HEAD just now: the tree read is of the same commit
        index = downstream_index(Project(downstream, config))
        view = Downstream(downstream, index, config, rev=index.head or "HEAD")
    else:
        view = Downstream(downstream, index, config)
    out: list[SymbolEvidence] = []
    for asked in symbols:
        symbol, qualified = asked, _qualified(asked)
        if qualified is not None:
            path, symbol = qualified
            if symbol == posixpath.splitext(posixpath.basename(path))[0]:
                # an anonymous module export, named by its file: the file is its evidence
                found = _path_symbol(path, upstream, pin_sha, head_sha, view, config)
                out.append(found.model_copy(update={"symbol": asked}))
                continue
        if _looks_like_path(symbol):
            out.append(_path_symbol(symbol, upstream, pin_sha, head_sha, view, config))
            continue
        at = _grep(upstream, [pin_sha, head_sha], symbol)
        out.append(SymbolEvidence(
            symbol=asked, is_path=False,
            upstream_at_pin=at[pin_sha],
            upstream_at_head=at[head_sha],
            upstream_changes=git(upstream, "log", "-S", symbol, "--format=%H",
                                 f"{pin_sha}..{head_sha}", "--").decode().split(),
            upstream_touches=git(upstream, "log", f"-G{_word_regex(symbol)}", "--format=%H",
                                 f"{pin_sha}..{head_sha}", "--").decode().split(),
            downstream_at_head=view.code_first(view.tree.find_name(symbol))[0],
            downstream_history=view.name_history(symbol)))
    return RowEvidence(pin=pin_sha, upstream_head=head_sha, downstream_head=view.tree.sha,
                       symbols=out)
