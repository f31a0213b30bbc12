"""``portwright eval mine``: candidate port tasks from a real upstream / port pair.

A downstream commit is a candidate when it changes test files (a task needs hidden tests)
and its message or its added test lines point at the upstream:

- ``sha``: a hex word of 7 to 40 digits that resolves to exactly one upstream commit
  (also inside ``github.com/<upstream>/commit/<sha>`` links); hex words that resolve
  nowhere are ignored;
- ``issue``: ``owner/repo#N`` or ``<name>#N`` of the upstream, ``upstream#N``, or a
  ``github.com/<upstream>/(issues|pull)/N`` link (any owner of the upstream's name:
  repositories move between owners); tied to the upstream commits whose message names
  ``#N``;
- ``version``: a version the upstream has a tag for (``sync with markdown-it 12.1.0``,
  ``port v0.30``), written beside the upstream's name or a word like *port* / *sync*; tied
  to the commits between the previous tag and that tag that touch files the downstream
  commit's changes map to (``path_map``, else the same file stem);
- ``subject``: the first line of an upstream commit, word for word (a port that keeps
  the upstream's words: ``Fix parenthesis after commas (#32)``);
- ``test``: a test file of the upstream (its stem) or a test title of the upstream
  (``it('…')``, ``describe('…')``, ``def test_…``) appearing in the message, the changed
  test paths or the added test lines.

With ``gap=True`` the gap scan (:func:`portwright.evidence.gap.scan_range`) also judges the
upstream commits of each version range, and the commits whose carried evidence was added
by the candidate are tied to it.

Git is read in a handful of passes, whatever the length of the histories: one ``git log``
of each side, one ``git grep`` for the upstream's test titles, one ``git show`` of the
candidate commits' added test lines, one ``rev-list`` per version range.
"""

from __future__ import annotations

import logging
import re
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from portwright.pathkinds import classify, default_path_kinds
from portwright.vcs.plumbing import check_repo, git, git_lines, run

logger = logging.getLogger(__name__)

EvidenceKind = Literal["sha", "issue", "version", "test", "subject", "gap"]

_RS, _US = "\x1e", "\x1f"
_HEX = re.compile(r"(?<![0-9A-Za-z/])([0-9a-f]{7,40})(?![0-9A-Za-z])")
_ISSUE = re.compile(r"(?<![\w/.-])(?:([\w.-]+)/)?([\w.-]+)#(\d+)\b")
_ISSUE_URL = re.compile(r"github\.com/([\w.-]+)/([\w.-]+)/(?:issues|pull)/(\d+)")
_COMMIT_URL = re.compile(r"github\.com/([\w.-]+)/([\w.-]+)/commit/([0-9a-f]{7,40})")
_VERSION = re.compile(r"(?<![\w.])v?(\d+\.\d+(?:\.\d+)?)(?![\w.]*\d)")
_FIXES = re.compile(r"#(\d+)\b")
_TITLE = re.compile(r"""(?:\bit|\bdescribe|\btest)\s*\(\s*(['"`])(.{8,120}?)\1|"""
                    r"""\bdef\s+(test_\w{4,})""")
_PORT_WORDS = ("port", "sync", "upstream", "update", "upgrade", "comply", "follow")
_GENERIC_STEMS = frozenset({"test", "tests", "index", "main", "utils", "util", "common",
                            "helpers", "fixtures", "init", "readme", "spec", "conftest"})


class Clue(BaseModel):
    """One reason a downstream commit looks like a port."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: EvidenceKind
    """What sort of reference it is."""
    text: str
    """What the commit says (or the test name it shares with the upstream)."""
    upstream: list[str] = []
    """Upstream commits this clue ties to the candidate (full shas)."""


class Candidate(BaseModel):
    """A downstream commit that may be a real port of upstream commits: a task to confirm."""

    model_config = ConfigDict(extra="forbid")

    port: str
    """The downstream commit (full sha)."""
    parent: str
    """Its first parent: where the task would start."""
    subject: str
    """First line of its message."""
    date: str
    """Commit date, ``YYYY-MM-DD``."""
    tests: list[str]
    """Test files it changes: the hidden paths to confirm."""
    clues: list[Clue]
    """Why it is a candidate."""
    upstream: list[str]
    """The upstream commits the clues tie to it, oldest first."""

    @property
    def kinds(self) -> list[str]:
        """The distinct kinds of its clues."""
        return sorted({clue.kind for clue in self.clues})


@dataclass
class _Commit:
    sha: str
    parents: list[str]
    date: str
    subject: str
    body: str
    files: list[str] = field(default_factory=list)

    @property
    def message(self) -> str:
        return f"{self.subject}\n{self.body}"


def _log(repo: Path, *args: str) -> list[_Commit]:
    """Every commit of ``git log args`` with its message and changed paths, in one pass."""
    commits: list[_Commit] = []
    fmt = f"{_RS}%H{_US}%P{_US}%cs{_US}%s{_US}%b{_US}"
    for raw in git(repo, "log", "--name-only", "-z", f"--format={fmt}", *args,
                   ).decode("utf-8", "replace").split(_RS):
        if not raw.strip():
            continue
        sha, parents, date, subject, body, files = raw.split(_US, 5)
        paths = [p.strip("\n") for p in files.split("\0") if p.strip("\n")]
        commits.append(_Commit(sha, parents.split(), date, subject, body, paths))
    return commits


def _words(subject: str) -> str:
    """A subject without its pull-request number, emoji and punctuation, in lower case."""
    text = re.sub(r"\(#\d+\)|\b(closes?|fix(es|ed)?)\s+#\d+", " ", subject.lower())
    return " ".join(re.findall(r"[a-z0-9]+", text))


def _subject_clues(commit: _Commit, up: Upstream) -> list[Clue]:
    shas = up.subjects.get(_words(commit.subject), [])  # only a subject used once upstream:
    return [Clue(kind="subject", text=commit.subject, upstream=shas)] if len(shas) == 1 else []


def _stem(path: str) -> str:
    name = path.rsplit("/", 1)[-1].split(".", 1)[0].lower()
    return re.sub(r"[^a-z0-9]", "", name.removeprefix("test_").removesuffix("_test"))


def slug(repo: Path) -> str:
    """``owner/name`` of the repository: its GitHub ``origin``, else its last two folders
    (the ``<repos>/<owner>/<name>`` layout of the eval suites)."""
    found = _slug_of(repo)
    where = repo.absolute()  # not resolved: the <owner>/<name> folders may be links
    return "/".join(found) if found else f"{where.parent.name}/{where.name}"


def _slug_of(repo: Path) -> tuple[str, str] | None:
    """``(owner, name)`` of the repository's ``origin`` on GitHub, if it has one."""
    url = run(repo, "config", "--get", "remote.origin.url").stdout.decode().strip()
    found = re.search(r"github\.com[:/]([\w.-]+)/([\w.-]+?)(?:\.git)?/?$", url)
    return (found[1].lower(), found[2].lower()) if found else None


class Upstream:
    """What the miner knows about the upstream: its commits, tags, issues and test names."""

    def __init__(self, repo: Path, slug: tuple[str, str] | None = None,
                 path_kinds: Mapping[str, list[str]] | None = None) -> None:
        self.repo = repo
        self.slug = slug or _slug_of(repo) or (repo.parent.name.lower(), repo.name.lower())
        self.path_kinds = dict(path_kinds or default_path_kinds())
        self.commits = {c.sha: c for c in _log(repo, "--all")}
        self.shas = sorted(self.commits)
        self.issues: dict[str, list[str]] = defaultdict(list)
        for commit in self.commits.values():
            for number in set(_FIXES.findall(commit.message)):
                self.issues[number].append(commit.sha)
        self.tags = self._tags()
        self.test_stems = {s for c in self.commits.values() for p in c.files
                           if self.is_test(p) and len(s := _stem(p)) >= 5
                           and s not in _GENERIC_STEMS}
        self.titles = self._titles()
        self.subjects: dict[str, list[str]] = defaultdict(list)
        for commit in self.commits.values():
            if len(words := _words(commit.subject)) >= 16:
                self.subjects[words].append(commit.sha)
        self._ranges: dict[str, list[str]] = {}

    def is_test(self, path: str) -> bool:
        return classify(path, self.path_kinds) == "tests"

    def _tags(self) -> dict[str, tuple[str, str]]:
        """version → (tag, commit), for tags that are versions."""
        out = git(self.repo, "for-each-ref", "refs/tags",
                  "--format=%(refname:short) %(objectname) %(*objectname)").decode()
        tags: dict[str, tuple[str, str]] = {}
        for line in out.splitlines():
            name, obj, *peeled = line.split()
            found = re.fullmatch(r"[\w.-]*?v?(\d+\.\d+(?:\.\d+)?)", name)
            if found:
                tags.setdefault(found[1], (name, peeled[0] if peeled else obj))
        return tags

    def _titles(self) -> set[str]:
        """Test titles declared in the upstream's test files at HEAD (one ``git grep``)."""
        done = run(self.repo, "grep", "-h", "-I", "-E", "-e", r"(it|describe|test)\s*\(",
                   "-e", r"def\s+test_", "HEAD", "--")
        titles: set[str] = set()
        for line in done.stdout.decode("utf-8", "replace").splitlines():
            for match in _TITLE.finditer(line):
                title = (match[2] or match[3] or "").strip()
                if len(title) >= 12 and (" " in title or title.startswith("test_")):
                    titles.add(title)
        return titles

    def resolve(self, prefix: str) -> str | None:
        """The one upstream commit whose sha starts with ``prefix``, else None."""
        at = bisect_left(self.shas, prefix)
        hits = self.shas[at:at + 2]
        found = [sha for sha in hits if sha.startswith(prefix)]
        return found[0] if len(found) == 1 else None

    def names(self) -> set[str]:
        """How a commit message may name the upstream (``owner/name``, ``name``)."""
        owner, name = self.slug
        return {n for n in (f"{owner}/{name}", name, name.removesuffix(".js"), "upstream") if n}

    def range_commits(self, version: str) -> list[str]:
        """Commits between the tag before ``version`` and its tag, oldest first."""
        if version not in self._ranges:
            order = sorted(self.tags, key=lambda v: tuple(int(p) for p in v.split(".")))
            at = order.index(version)
            head = self.tags[version][1]
            args = [head] if at == 0 else [head, f"^{self.tags[order[at - 1]][1]}"]
            out = git(self.repo, "rev-list", "--reverse", "--no-merges", *args).decode()
            self._ranges[version] = out.split()
        return self._ranges[version]


def _sha_clues(commit: _Commit, up: Upstream) -> list[Clue]:
    clues: dict[str, Clue] = {}
    name = up.slug[1]
    for match in _COMMIT_URL.finditer(commit.message):
        if match[2].lower() == name:  # any owner: repositories move (jgm/x → org/x)
            full = up.resolve(match[3])
            if full:
                clues[full] = Clue(kind="sha", text=match[0], upstream=[full])
    for match in _HEX.finditer(commit.message):
        full = up.resolve(match[1])
        if full and full not in clues:
            clues[full] = Clue(kind="sha", text=match[1], upstream=[full])
    return list(clues.values())


def _issue_clues(commit: _Commit, up: Upstream) -> list[Clue]:
    names = up.names()
    clues: list[Clue] = []
    seen: set[str] = set()
    for match in [*_ISSUE.finditer(commit.message), *_ISSUE_URL.finditer(commit.message)]:
        owner, repo, number = (g.lower() if g else "" for g in match.groups())
        said = f"{owner}/{repo}" if owner else repo
        if said not in names and repo != up.slug[1]:  # any owner of the upstream's name
            continue
        if number not in seen:
            seen.add(number)
            clues.append(Clue(kind="issue", text=match[0], upstream=up.issues.get(number, [])))
    return clues


def _maps_to(down_path: str, up_path: str, path_map: Mapping[str, str]) -> bool:
    for up_prefix, down_prefix in path_map.items():
        if down_path.startswith(down_prefix) and up_path.startswith(up_prefix):
            rest_down = down_path.removeprefix(down_prefix)
            rest_up = up_path.removeprefix(up_prefix)
            if _stem(rest_down) == _stem(rest_up):
                return True
    return _stem(down_path) == _stem(up_path) and len(_stem(up_path)) >= 3


def _version_clues(commit: _Commit, up: Upstream, path_map: Mapping[str, str],
                   is_test: Callable[[str], bool]) -> list[Clue]:
    text = commit.message.lower()
    if not any(name in text for name in up.names()) and \
            not any(word in text for word in _PORT_WORDS):
        return []
    clues: list[Clue] = []
    changed = [p for p in commit.files if not is_test(p)]
    for version in dict.fromkeys(_VERSION.findall(commit.message)):
        if version not in up.tags:
            continue
        tied = [sha for sha in up.range_commits(version)
                if any(_maps_to(d, u, path_map) for d in changed
                       for u in up.commits[sha].files if not up.is_test(u))]
        clues.append(Clue(kind="version", text=f"{up.tags[version][0]} ({version})",
                          upstream=tied))
    return clues


def _added_test_lines(repo: Path, shas: list[str], is_test: Callable[[str], bool]
                      ) -> dict[str, list[str]]:
    """The lines each commit adds to its test files: one ``git show`` for every commit."""
    added: dict[str, list[str]] = defaultdict(list)
    if not shas:
        return added
    sha, keep = "", False
    for raw in git_lines(repo, "show", "-U0", "--no-color", "--format=%x1e%H", *shas):
        line = raw.decode("utf-8", "replace").rstrip("\n")
        if line.startswith(_RS):
            sha, keep = line[1:], False
        elif line.startswith("+++ "):
            keep = is_test(line[6:]) if line.startswith("+++ b/") else False
        elif keep and line.startswith("+"):
            added[sha].append(line[1:])
    return added


def _test_clues(commit: _Commit, added: Iterable[str], up: Upstream,
                tests: list[str]) -> list[Clue]:
    clues: list[Clue] = []
    haystack = "\n".join([commit.message, *added])
    for title in sorted(up.titles):
        if title in haystack:
            clues.append(Clue(kind="test", text=title))
            if len(clues) >= 5:
                break
    for stem in sorted({_stem(p) for p in tests} & up.test_stems):
        clues.append(Clue(kind="test", text=f"test file {stem}"))
    return clues


def _gap_clues(upstream: Path, downstream: Path, candidates: list[Candidate],
               path_map: Mapping[str, str], up: Upstream) -> None:
    """Tie the upstream commits of each version range whose carried evidence the candidate
    added, by the gap scan."""
    from portwright.config import PortwrightConfig, UpstreamConfig
    from portwright.evidence.gap import scan_range

    config = PortwrightConfig(upstream=UpstreamConfig(source=str(upstream),
                                                      path_map=dict(path_map)))
    for cand in candidates:
        for clue in [c for c in cand.clues if c.kind == "version"]:
            version = clue.text.rsplit("(", 1)[-1].rstrip(")")
            shas = up.range_commits(version)
            if not shas:
                continue
            base = up.commits[shas[0]].parents[0] if up.commits[shas[0]].parents else shas[0]
            report = scan_range(upstream, downstream, base, up.tags[version][1], config)
            tied = [gap.sha for gap in report.commits
                    if any(ev.carried and ev.commit == cand.port for ev in gap.evidence)]
            if tied:
                cand.clues.append(Clue(kind="gap", text=f"gap scan of {clue.text}",
                                       upstream=tied))
                cand.upstream = _oldest_first(up, [*cand.upstream, *tied])


def _oldest_first(up: Upstream, shas: Iterable[str]) -> list[str]:
    order = {sha: at for at, sha in enumerate(reversed(list(up.commits)))}
    return sorted(dict.fromkeys(shas), key=lambda sha: order.get(sha, -1))


def mine(upstream_repo: Path, downstream_repo: Path, *, path_map: Mapping[str, str] | None = None,
         upstream_slug: tuple[str, str] | None = None, limit: int | None = None,
         rev: str = "HEAD", gap: bool = False) -> list[Candidate]:
    """Candidate port tasks: downstream commits of ``rev`` that change tests and point at
    the upstream (see the module docstring), newest first."""
    given = upstream_repo.absolute()
    upstream_repo = check_repo(upstream_repo, "upstream repository")
    downstream_repo = check_repo(downstream_repo, "downstream repository")
    path_map = dict(path_map or {})
    owner, _, name = slug(given).lower().partition("/")
    up = Upstream(upstream_repo, upstream_slug or (owner, name))
    kinds = default_path_kinds()

    def is_test(path: str) -> bool:
        return classify(path, kinds) == "tests"

    testing = [c for c in _log(downstream_repo, "--no-merges", rev)
               if c.parents and any(is_test(p) for p in c.files)]
    added = _added_test_lines(downstream_repo, [c.sha for c in testing], is_test)
    found: list[Candidate] = []
    for commit in testing:
        tests = [p for p in commit.files if is_test(p)]
        clues = [*_sha_clues(commit, up), *_issue_clues(commit, up), *_subject_clues(commit, up),
                 *_version_clues(commit, up, path_map, is_test),
                 *_test_clues(commit, added.get(commit.sha, []), up, tests)]
        if not clues:
            continue
        found.append(Candidate(
            port=commit.sha, parent=commit.parents[0], subject=commit.subject,
            date=commit.date, tests=tests, clues=clues,
            upstream=_oldest_first(up, [s for clue in clues for s in clue.upstream])))
        if limit is not None and len(found) >= limit:
            break
    if gap:
        _gap_clues(upstream_repo, downstream_repo, found, path_map, up)
    logger.info("%d candidates among %d downstream commits that change tests",
                len(found), len(testing))
    return found


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _array(items: Iterable[str]) -> str:
    return "[" + ", ".join(_quote(item) for item in items) + "]"


def task_id(downstream_name: str, cand: Candidate) -> str:
    """``<downstream name>/<short sha>-<subject words>``: unique, readable, stable."""
    words = re.sub(r"[^a-z0-9]+", "-", cand.subject.lower()).strip("-").split("-")
    return f"{downstream_name}/{cand.port[:8]}-{'-'.join(words[:6])}".rstrip("-")


def task_toml(cand: Candidate, *, upstream: str, downstream: str, languages: str = "") -> str:
    """A candidate task file (the format of ``docs/eval.md``) with a ``# confirm:`` block
    that lists the evidence; ``upstream`` and ``downstream`` are ``owner/name``."""
    lines = ["# confirm: a candidate mined by `portwright eval mine`; read the diffs, then",
             "# confirm: fill [hidden] tests and [environment] and run `portwright eval validate`."]
    for clue in cand.clues:
        tied = f" -> {', '.join(s[:12] for s in clue.upstream)}" if clue.upstream else ""
        lines.append(f"# confirm: {clue.kind}: {clue.text!r}{tied}")
    if not cand.upstream:
        lines.append("# confirm: no upstream commit tied: find the change and list it below")
    name = downstream.rsplit("/", 1)[-1]
    lines += [
        f"id = {_quote(task_id(name, cand))}",
        f"title = {_quote(cand.subject)}",
        *([f"languages = {_quote(languages)}"] if languages else []),
        "",
        "[upstream]",
        f"repo = {_quote(upstream)}",
        f"url = {_quote('https://github.com/' + upstream)}",
        f"commits = {_array(cand.upstream)}",
        "",
        "[downstream]",
        f"repo = {_quote(downstream)}",
        f"url = {_quote('https://github.com/' + downstream)}",
        f"parent = {_quote(cand.parent)}",
        f"port = {_quote(cand.port)}",
        "",
        "[hidden]",
        f"paths = {_array(cand.tests)}",
        f"tests = {_array(p for p in cand.tests if p.endswith('.py'))}",
        "",
    ]
    return "\n".join(lines)


def write_candidates(cands: Iterable[Candidate], out: Path, *, upstream: str, downstream: str,
                     languages: str = "") -> list[Path]:
    """One candidate task file per candidate under ``out/<downstream name>/``."""
    written: list[Path] = []
    for cand in cands:
        path = out / f"{task_id(downstream.rsplit('/', 1)[-1], cand)}.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(task_toml(cand, upstream=upstream, downstream=downstream,
                                  languages=languages), encoding="utf-8")
        written.append(path)
    return written
