"""The downstream side of a gap scan: is each upstream signal carried by the port?

Matches count only in code of the right kind: a name or a literal in the downstream's own
source and test files (the languages its source is written in — an upstream test file
copied in unported does not count), a test title among the downstream's tests, a new file's
stem among its source files, a fixture in its tests (or the file ``path_map`` names).
portwright's own records (matrices, ledger, specs, pin, AGENTS.md) are never searched.

Public API:

- ``Downstream(repo: Path, index: HistoryIndex, config: PortwrightConfig, *, rev="HEAD")``
- ``.judge(signal: Signal) -> Evidence``
- ``.spellings(name) -> list[str]``, ``.name_history(name) -> list[CountChange]``,
  ``.code_first(hits) -> tuple[list[Location], bool]``, ``.tree`` (a ``TreeView`` of ``rev``)
"""

from __future__ import annotations

import posixpath
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from portwright import globs
from portwright.config import PortwrightConfig
from portwright.evidence import names, tokens
from portwright.evidence.gapmodels import Evidence, Strength
from portwright.evidence.history import CountChange, HistoryIndex, pickaxe
from portwright.evidence.lexer import family, is_javascript, lex, string_value
from portwright.evidence.lookup import Location, TreeView
from portwright.evidence.signals import Signal
from portwright.pathkinds import CARRIED, classify
from portwright.project import record_globs
from portwright.vcs.plumbing import git

_STOP_WORDS = frozenset({"test", "tests", "should", "it", "a", "an", "the", "is", "be", "to",
                         "of", "in", "on", "with", "and", "or", "not", "no", "for", "when",
                         "if", "does", "do", "can", "api"})
Where = Literal["head", "history", "absent"]


def _evidence(signal: Signal, where: Where, *, carried: bool, strength: Strength,
              note: str, matched: str | None = None, path: str | None = None,
              line: int | None = None, commit: str | None = None) -> Evidence:
    return Evidence(signal=signal.text, kind=signal.kind, upstream_anchor=signal.anchor,
                    where=where, matched=matched, path=path, line=line, commit=commit,
                    note=note, carried=carried, strength=strength, origin=signal.origin)


def _stem_word(word: str) -> str:
    return word[:-1] if len(word) > 4 and word.endswith("s") else word


def _title_words(title: str) -> set[str]:
    return {_stem_word(w) for w in names.split_words(title) if w not in _STOP_WORDS}


class Downstream:
    """Downstream HEAD and history, searched by signal."""

    def __init__(self, repo: Path, index: HistoryIndex, config: PortwrightConfig, *,
                 rev: str = "HEAD") -> None:
        self.repo = repo
        self.index = index
        self.records = record_globs(config)
        self.tree = TreeView(repo, rev, exclude=self.is_record)
        self.path_map = dict(config.upstream.path_map)
        self.path_kinds = dict(config.upstream.path_kinds)
        self._kinds = {p: classify(p, self.path_kinds) for p in self.tree.paths}
        own = Counter(posixpath.splitext(p)[1].lower() for p, k in self._kinds.items()
                      if k == "source" and family(p) is not None)
        total = sum(own.values())
        self.languages = {ext for ext, n in own.items() if total and n / total >= 0.1}
        self._canon: dict[str, list[str]] | None = None
        self._tests: list[tuple[set[str], Location]] | None = None
        self._values: list[tuple[str, str, int, str]] | None = None

    # -- what counts -----------------------------------------------------------------

    def is_record(self, path: str) -> bool:
        """True for portwright's own records: they name upstream symbols without porting."""
        return globs.match_any(path, self.records)

    def is_code(self, path: str) -> bool:
        """A source or tests file in one of the downstream's own languages."""
        if self._kinds.get(path, classify(path, self.path_kinds)) not in CARRIED:
            return False
        extension = posixpath.splitext(path)[1].lower()
        return family(path) is not None and (not self.languages or extension in self.languages)

    def is_tests(self, path: str) -> bool:
        return self._kinds.get(path, classify(path, self.path_kinds)) == "tests"

    def in_code(self, hit: Location) -> bool:
        """A hit in the port's code, outside comments and strings."""
        return self.is_code(hit.path) and hit.text in tokens.code_identifiers(
            self.tree.line_text(hit.path, hit.line))

    def code_first(self, hits: list[Location]) -> tuple[list[Location], bool]:
        """``hits`` with those in the port's code first, and whether any is there."""
        ranked = sorted(hits, key=lambda h: not self.in_code(h))
        return ranked, bool(ranked) and self.in_code(ranked[0])

    # -- history ---------------------------------------------------------------------

    def spellings(self, name: str) -> list[str]:
        """Every token of downstream history with the canonical key of ``name``."""
        if self._canon is None:
            table: dict[str, list[str]] = {}
            for token in self.index.tokens():
                table.setdefault(names.canonical(token), []).append(token)
            self._canon = table
        return self._canon.get(names.canonical(name), [])

    def pathspecs(self) -> list[str]:
        """Git pathspecs of the whole tree but the records."""
        return [".", *(f":(exclude,glob){g}**" if g.endswith("/") else f":(exclude,glob){g}"
                       for g in self.records)]

    def name_history(self, name: str) -> list[CountChange]:
        """Downstream commits that changed the count of the name, any spelling, outside the
        parity records."""
        return self.index.token_changes(self.spellings(name), exclude=self.is_record)

    # -- judging ---------------------------------------------------------------------

    def judge(self, signal: Signal) -> Evidence:
        """What the downstream says about ``signal``."""
        if signal.kind == "fixture":
            return self._fixture(signal)
        if signal.kind == "file":
            return self._file(signal)
        if signal.kind == "test":
            return self._test(signal)
        if signal.kind == "removal":
            return self._removal(signal)
        if signal.kind == "literal":
            return self._literal(signal)
        return self._name(signal)

    def _name(self, signal: Signal) -> Evidence:
        hits, in_code = self.code_first(self.tree.find_name(signal.text))
        history = self.name_history(signal.text)
        if hits and in_code:
            hit = hits[0]
            how = "same spelling" if hit.text == signal.text else "normalised spelling"
            added = next((c.sha for c in reversed(history) if c.delta > 0), None)
            return _evidence(signal, "head", carried=True, strength="medium", note=how,
                             matched=hit.text, path=hit.path, line=hit.line, commit=added)
        weight: Strength = "medium" if signal.strength == "strong" else "weak"
        if hits:
            return _evidence(signal, "head", carried=False, strength=weight, matched=hits[0].text,
                             path=hits[0].path, line=hits[0].line,
                             note="only outside the port's code (docs, build, copied "
                                  "upstream files): not a port")
        if history:
            return _evidence(signal, "history", carried=False, strength="strong",
                             matched=signal.text, commit=history[0].sha,
                             note=f"in history ({len(history)} commits) but gone at HEAD; "
                                  f"last changed by {history[0].sha[:12]} (reverted?)")
        return _evidence(signal, "absent", carried=False, strength=weight,
                         note="no spelling with this canonical key in the port's code")

    def _strings(self) -> list[tuple[str, str, int, str]]:
        """Every string, template and regex literal of the port's code: ``(value, path, line,
        text as written)``."""
        if self._values is None:
            found: list[tuple[str, str, int, str]] = []
            for path, lines in self.tree.text_files():
                lexer_family = family(path)
                if lexer_family is None or not self.is_code(path):
                    continue
                text = "\n".join(lines)
                for token in lex(text, lexer_family, regex_literals=is_javascript(path)):
                    if token.kind in ("string", "template", "regex"):
                        found.append((string_value(token), path, token.line, token.text))
            self._values = found
        return self._values

    def _find_text(self, text: str) -> list[Location]:
        """Literals of the port's code that hold ``text`` (compared by value: quoting and
        escaping differ between languages), else lines that hold it as written."""
        short = len(text) < 16  # a short pattern is found inside longer ones by chance
        hits = [Location(path=path, line=line, text=written)
                for value, path, line, written in self._strings()
                if text == value or (not short and text in value)][:20]
        if hits:
            return hits
        return [h for h in self.tree.find_literal(text) if self.is_code(h.path)]

    def _literal(self, signal: Signal) -> Evidence:
        hits = self._find_text(signal.text)
        if hits:
            return _evidence(signal, "head", carried=True, strength="medium", note="verbatim",
                             matched=signal.text, path=hits[0].path, line=hits[0].line)
        if signal.old:
            old = self._find_text(signal.old)
            if old:
                return _evidence(signal, "head", carried=False, strength="strong",
                                 matched=signal.old, path=old[0].path, line=old[0].line,
                                 note="the port still has the text this literal replaced")
        if " " in signal.text:
            shas = pickaxe(self.repo, signal.text, self.tree.sha, self.pathspecs())
            if shas:
                return _evidence(signal, "history", carried=False, strength="strong",
                                 matched=signal.text, commit=shas[0],
                                 note=f"in history, gone at HEAD; last changed by "
                                      f"{shas[0][:12]}")
        return _evidence(signal, "absent", carried=False, strength=signal.strength,
                         note="not found verbatim in the port's code")

    def _test_index(self) -> list[tuple[set[str], Location]]:
        if self._tests is None:
            found: list[tuple[set[str], Location]] = []
            for path, lines in self.tree.text_files():
                if not (self.is_tests(path) and self.is_code(path)):
                    continue
                for number, line in enumerate(lines, start=1):
                    for title in tokens.test_blocks(line):
                        found.append((_title_words(title), Location(path=path, line=number,
                                                                    text=title)))
            self._tests = found
        return self._tests

    def _test(self, signal: Signal) -> Evidence:
        """A test case: a downstream test whose words cover the title's (``should not hang
        with sequences of astrals`` ↔ ``test_shoud_not_hang_with_sequence_of_astrals``)."""
        want = _title_words(signal.text)
        best: tuple[float, Location] | None = None
        for words, location in self._test_index():
            if not want or not words:
                continue
            score = len(want & words) / len(want)
            if best is None or score > best[0]:
                best = (score, location)
        if best is not None and best[0] >= 0.7:
            return _evidence(signal, "head", carried=True, strength="medium",
                             note=f"test with {best[0]:.0%} of the title's words",
                             matched=best[1].text, path=best[1].path, line=best[1].line)
        return _evidence(signal, "absent", carried=False, strength="medium",
                         note="no test of the port has these words")

    def _file(self, signal: Signal) -> Evidence:
        hits = [p for p in self.tree.find_stem(signal.text, self.path_map)
                if self._kinds.get(p) == "source" and self.is_code(p)]
        if hits:
            return _evidence(signal, "head", carried=True, strength="medium", matched=hits[0],
                             path=hits[0], line=1, note="source file with the same stem")
        return _evidence(signal, "absent", carried=False, strength="weak",
                         note="no source file with this stem")

    def _removal(self, signal: Signal) -> Evidence:
        hits, in_code = self.code_first(self.tree.find_name(signal.text))
        if hits and in_code:
            return _evidence(signal, "head", carried=False, strength=signal.strength,
                             matched=hits[0].text, path=hits[0].path, line=hits[0].line,
                             note="upstream removed it; the port still has it")
        history = self.name_history(signal.text)
        return _evidence(signal, "history", carried=True, strength=signal.strength,
                         matched=signal.text, commit=history[0].sha if history else None,
                         note="removed by the port too")

    # -- fixtures --------------------------------------------------------------------

    def _counterpart(self, signal: Signal) -> str | None:
        if signal.target and self.tree.has_path(signal.target):
            return signal.target
        base = posixpath.basename(signal.text)
        tests = [p for p in self.tree.paths if self.is_tests(p)]
        same = [p for p in tests if posixpath.basename(p) == base]
        if same:
            return same[0]
        stem = names.canonical_path(signal.text)
        return next((p for p in tests if names.canonical_path(p) == stem and
                     family(p) is None), None)

    def _fixture(self, signal: Signal) -> Evidence:
        if signal.blob:
            paths = [p for p in self.tree.find_blob(signal.blob) if not self.is_record(p)]
            if paths:
                shas = git(self.repo, "log", f"--find-object={signal.blob}", "--format=%H",
                           self.tree.sha, "--", *self.pathspecs()).decode().split()
                return _evidence(signal, "head", carried=True, strength="strong",
                                 matched=paths[0], path=paths[0], line=1,
                                 commit=shas[-1] if shas else None,
                                 note="identical content (same blob)")
        counterpart = self._counterpart(signal)
        if counterpart is not None and signal.old_blob and \
                signal.old_blob in self.tree.blobs_of(counterpart):
            return _evidence(signal, "head", carried=False, strength="strong",
                             matched=counterpart, path=counterpart,
                             note="the port has the previous version of this fixture")
        return self._fixture_lines(signal, counterpart)

    def _fixture_lines(self, signal: Signal, counterpart: str | None) -> Evidence:
        files = [counterpart] if counterpart else [p for p in self.tree.paths
                                                   if self.is_tests(p)]
        present = self.tree.line_set(files)
        added = [line for line in signal.lines if line in present]
        kept = [line for line in signal.gone if line in present]
        total = len(signal.lines) + (len(signal.gone) if counterpart else 0)
        done = len(added) + (len(signal.gone) - len(kept) if counterpart else 0)
        where: Where = "head" if added else "absent"
        share = done / total if total else 0.0
        detail = (f"{len(added)} of {len(signal.lines)} added lines"
                  + (f", {len(signal.gone) - len(kept)} of {len(signal.gone)} removed lines "
                     f"gone" if counterpart and signal.gone else "")
                  + (f" in {counterpart}" if counterpart else " in the port's tests"))
        if total and share >= 0.8:
            return _evidence(signal, where, carried=True, strength="strong",
                             matched=counterpart, path=counterpart, note=detail)
        strength: Strength = "strong" if counterpart and share <= 0.2 else "medium"
        return _evidence(signal, where, carried=False, strength=strength, matched=counterpart,
                         path=counterpart, note=detail if total else
                         "no file with identical content" + (f"; counterpart {counterpart}"
                                                            if counterpart else ""))


def strengths(evidence: Iterable[Evidence]) -> tuple[int, int]:
    """Weighted counts of carried and not-carried evidence (strong 3, medium 2, weak 1)."""
    weight = {"strong": 3, "medium": 2, "weak": 1}
    carried = sum(weight[e.strength] for e in evidence if e.carried and not e.superseded_by)
    missing = sum(weight[e.strength] for e in evidence
                  if not e.carried and not e.superseded_by)
    return carried, missing
