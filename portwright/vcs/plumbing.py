"""Plain ``git`` subprocess calls returning bytes, with the hardened environment: the one
way portwright runs a git command (engines that read a whole history, gates that read
diffs, agent tools, worktrees and commits). gitpython (``portwright.vcs.git``) only reads
objects through its long-lived ``cat-file`` processes."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import tempfile
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

from portwright.errors import RepositoryError, RevisionError

logger = logging.getLogger(__name__)

HARDENED_CONFIG: dict[str, str] = {
    "core.hooksPath": "/dev/null",
    "core.fsmonitor": "false",
    "core.untrackedCache": "false",
    "submodule.recurse": "false",
    "diff.ignoreSubmodules": "all",
    "status.submoduleSummary": "false",
    "protocol.ext.allow": "never",
}
"""Configuration every host-side git command runs with. A worktree that sandboxed code
touched may hold a submodule whose ``.git`` pointer leads to a gitdir that code wrote, with
hooks and a ``core.fsmonitor`` command of its own: git on the host must never run them, nor
descend into submodules at all."""


def hardened_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a host-side git command: ``base`` (default: this process's) with
    :data:`HARDENED_CONFIG` passed as ``GIT_CONFIG_*`` variables (they outrank every
    configuration file), no pager, and the C locale."""
    env = dict(os.environ if base is None else base)
    count = int(env.get("GIT_CONFIG_COUNT", "0") or 0)
    for offset, (key, value) in enumerate(HARDENED_CONFIG.items()):
        env[f"GIT_CONFIG_KEY_{count + offset}"] = key
        env[f"GIT_CONFIG_VALUE_{count + offset}"] = value
    env["GIT_CONFIG_COUNT"] = str(count + len(HARDENED_CONFIG))
    env.update({"GIT_PAGER": "cat", "LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0"})
    return env


_COMMON_DIRS: dict[Path, Path] = {}
_COMMON_DIRS_LOCK = threading.Lock()


def common_dir(repo: Path) -> Path:
    """The absolute git directory that ``repo`` shares with its other worktrees (``.git``
    of the main worktree), asked of git once per folder and process: every project loaded
    from a run's worktree, and every run of a project, needs it for its state folder."""
    key = repo.resolve()
    with _COMMON_DIRS_LOCK:
        known = _COMMON_DIRS.get(key)
    if known is not None and known.is_dir():
        return known
    done = run(repo, "rev-parse", "--path-format=absolute", "--git-common-dir")
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip()
        if "not a git repository" in said or not repo.is_dir():
            raise RepositoryError(
                "not a git repository (portwright works on the downstream's git "
                "checkout: its config, rules and runs are read from commits)", file=repo,
                fix="run it in the downstream's clone (or `git init` and commit there), or "
                    "point --repo/-C at one")
        raise RepositoryError(f"git cannot read {repo}: {said}", file=repo,
                              fix="check the folder's permissions and its .git")
    found = Path(done.stdout.decode().strip())
    with _COMMON_DIRS_LOCK:
        if len(_COMMON_DIRS) >= 1024:
            _COMMON_DIRS.clear()
        _COMMON_DIRS[key] = found
    return found


def version() -> str:
    """What ``git --version`` says (``git version 2.43.0``)."""
    try:
        done = subprocess.run(["git", "--version"], capture_output=True, env=hardened_env(),
                              check=False)
    except OSError as exc:
        raise RepositoryError("git could not be run", fix="install git and put it on PATH"
                              ) from exc
    return done.stdout.decode("utf-8", "replace").strip()


def run(repo: Path, *args: str, stdin: bytes | None = None,
        env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """``git -C repo args…`` with the :func:`hardened_env`, whatever its exit code."""
    try:
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True,
                              input=stdin, env=hardened_env(env), check=False)
    except OSError as exc:
        raise RepositoryError("git could not be run", file=repo,
                              fix="install git and put it on PATH") from exc


def git(repo: Path, *args: str, ok_codes: tuple[int, ...] = (0,)) -> bytes:
    """Run ``git -C repo args…`` and return its stdout; errors become RepositoryError."""
    done = run(repo, *args)
    if done.returncode not in ok_codes:
        message = done.stderr.decode("utf-8", "replace").strip()
        command = " ".join(args)
        command = command if len(command) <= 200 else command[:200] + "…"
        detail = f": {message}" if message else ""
        raise RepositoryError(f"git {command} failed (exit {done.returncode}){detail}", file=repo,
                              fix="check that the path is a git checkout and the revision exists")
    return done.stdout


def git_lines(repo: Path, *args: str) -> Iterator[bytes]:
    """Stream the stdout lines of a long git command (``log -p`` over a whole history)."""
    env = hardened_env()
    with tempfile.TemporaryFile() as errors, subprocess.Popen(
            ["git", "-C", str(repo), *args], stdout=subprocess.PIPE, stderr=errors,
            env=env) as proc:
        assert proc.stdout is not None
        yield from proc.stdout
        code = proc.wait()
        errors.seek(0)
        err = errors.read()
    if code != 0:
        raise RepositoryError(f"git {args[0]} failed: {err.decode('utf-8', 'replace').strip()}",
                              file=repo, fix="check that the path is a git checkout")


def check_repo(repo: Path, what: str = "repository") -> Path:
    """``repo`` resolved, after checking it is the top of a git work tree (or a bare repo)."""
    if not repo.exists():
        raise RepositoryError(f"{what} does not exist", file=repo,
                              fix="check the path (upstream.source in portwright.toml?)")
    if _looks_like_checkout(repo):  # the common case, without a git process
        return repo.resolve()
    try:
        git(repo, "rev-parse", "--git-dir")
    except RepositoryError as exc:
        raise RepositoryError(f"{what} is not a git repository", file=repo,
                              fix=f"run `git init` in {repo} or point at a git checkout") from exc
    return repo.resolve()


def _looks_like_checkout(repo: Path) -> bool:
    """True when ``repo`` has a ``.git`` folder with a ``HEAD`` or a ``.git`` file pointing
    at one (a linked worktree); anything else is left to git to judge."""
    dot = repo / ".git"
    try:
        if dot.is_dir():
            return (dot / "HEAD").is_file()
        if dot.is_file():
            target = dot.read_text(errors="replace").strip().removeprefix("gitdir:").strip()
            return (repo / target / "HEAD").is_file()
    except OSError:
        return False
    return False


def rev_parse(repo: Path, rev: str) -> str:
    """The full commit sha ``rev`` names in ``repo``, or a :class:`RevisionError` that says
    why not (:func:`revision_error`). A full sha already found to be a commit of ``repo``
    is its own answer, without a git process (:func:`is_commit`)."""
    if known_commit(repo, rev):
        return rev
    if rev.strip() and not rev.startswith("-"):
        done = run(repo, "rev-parse", "--verify", "--quiet", "--end-of-options",
                   f"{rev}^{{commit}}")
        if done.returncode == 0:
            sha = done.stdout.decode().strip()
            _remember_commits(repo, [sha])
            return sha
    raise revision_error(repo, rev)


def rev_parse_many(repo: Path, revs: list[str]) -> list[str]:
    """The full commit shas ``revs`` name, in one git call; when one names no commit, the
    :class:`RevisionError` of :func:`rev_parse` for the first such."""
    if all(known_commit(repo, rev) for rev in revs):
        return list(revs)
    if all(rev.strip() and not rev.startswith("-") for rev in revs):
        # no --end-of-options: without --verify, rev-parse prints it back; no revision
        # here starts with "-"
        done = run(repo, "rev-parse", *(f"{rev}^{{commit}}" for rev in revs))
        shas = done.stdout.decode("utf-8", "replace").split()
        # each revision prints at least one line: as many lines as revisions is one each
        if done.returncode == 0 and len(shas) == len(revs) and all(
                _FULL_HEX.fullmatch(sha) for sha in shas):
            _remember_commits(repo, shas)
            return shas
    return [rev_parse(repo, rev) for rev in revs]


_FULL_HEX = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")

_COMMITS: dict[tuple[str, str], None] = {}
"""``(repository folder, full sha)`` of each commit git named or found there so far, in
this process: an object never changes, and git removes none that a branch or tag reaches
(a commit a run or a user made stays, as long as something points at it)."""
_COMMITS_LOCK = threading.Lock()
_COMMITS_SIZE = 4096


def _where(repo: Path) -> str:
    """``repo`` as the key of what is remembered about it: absolute, links not followed
    (another spelling of the same folder is only a miss)."""
    return str(Path(repo).absolute())


def known_commit(repo: Path, rev: str) -> bool:
    """True when ``rev`` is a full sha already found to be a commit of ``repo``: never a
    ref name, whose answer changes as the ref moves."""
    if not _FULL_HEX.fullmatch(rev):
        return False
    with _COMMITS_LOCK:
        return (_where(repo), rev) in _COMMITS


def _remember_commits(repo: Path, shas: list[str]) -> None:
    where = _where(repo)
    with _COMMITS_LOCK:
        for sha in shas:
            if _FULL_HEX.fullmatch(sha):
                _COMMITS[(where, sha)] = None
        while len(_COMMITS) > _COMMITS_SIZE:
            del _COMMITS[next(iter(_COMMITS))]


def is_commit(repo: Path, sha: str) -> bool:
    """True when ``sha`` names a commit of ``repo`` (``git cat-file -e sha^{commit}``); a
    full sha found to be one before is answered without a git process. What git answers
    here is not remembered: a tag's sha names a commit too, but is not one."""
    if known_commit(repo, sha):
        return True
    return run(repo, "cat-file", "-e", f"{sha}^{{commit}}").returncode == 0


def revision_error(repo: Path, rev: str) -> RevisionError:
    """A :class:`RevisionError` saying why ``rev`` names no commit in ``repo``: an empty
    or option-like revision, not a repository, a repository without commits, a tree or
    blob, an ambiguous prefix, a shallow clone, or simply absent."""
    message, fix = _why_not_a_commit(repo, rev)
    return RevisionError(message, file=repo, fix=fix)


def _why_not_a_commit(repo: Path, rev: str) -> tuple[str, str]:
    fetch = "fetch it (`git fetch`), or pass a sha, branch or tag that exists here"
    if not rev.strip():
        return "an empty revision", "pass a sha, branch or tag"
    if rev.startswith("-"):
        return (f"revision {rev!r} starts with '-': an option, not a revision",
                "pass a sha, branch or tag")
    if run(repo, "rev-parse", "--git-dir").returncode != 0:
        return (f"{repo} is not a git repository, so {rev!r} names nothing",
                "run `git init` there, or point at a git checkout")
    if not run(repo, "for-each-ref", "--count=1").stdout.strip() and \
            run(repo, "rev-parse", "--verify", "--quiet", "HEAD").returncode != 0:
        return (f"the repository has no commits yet, so {rev!r} names nothing",
                "commit something first (`git commit`)")
    probe = run(repo, "rev-parse", "--verify", "--end-of-options", rev)
    error = probe.stderr.decode("utf-8", "replace")
    if "ambiguous" in error:
        candidates = [line.removeprefix("hint:").strip() for line in error.splitlines()
                      if line.startswith("hint:   ")]
        return (f"revision {rev!r} is ambiguous: it starts several objects' shas ("
                f"{'; '.join(candidates[:4])})", "write more hex digits of the sha")
    if probe.returncode == 0:
        kind = run(repo, "cat-file", "-t", probe.stdout.decode().strip()).stdout.decode().strip()
        if kind in ("tree", "blob"):
            return (f"revision {rev!r} names a {kind}, not a commit",
                    "pass a commit sha (as `git log` shows them), not a tree or blob sha")
    if run(repo, "rev-parse", "--is-shallow-repository").stdout.strip() == b"true":
        return (f"revision {rev!r} is not in this shallow clone (its history is cut off)",
                f"run `git fetch --unshallow` in {repo}, then try again")
    return f"revision {rev!r} does not exist in this repository", fetch


def is_ancestor(repo: Path, older: str, newer: str) -> bool:
    """True when ``older`` is an ancestor of (or equal to) ``newer``."""
    return run(repo, "merge-base", "--is-ancestor", older, newer).returncode == 0


def show(repo: Path, rev: str, path: str) -> bytes | None:
    """Bytes of ``path`` at ``rev``; None when absent."""
    try:
        return git(repo, "show", f"{rev}:{path}")
    except RepositoryError:
        return None


def show_many(repo: Path, rev: str, paths: list[str]) -> dict[str, bytes | None]:
    """Bytes of each of ``paths`` at ``rev`` (None when absent), as :func:`show` reads them,
    in one ``git cat-file --batch`` call; a path the batch cannot name (a newline in it)
    or that is not a blob there is read by :func:`show`."""
    batched = [p for p in dict.fromkeys(paths) if "\n" not in p and "\r" not in p]
    out: dict[str, bytes | None] = {}
    if batched:
        done = run(repo, "cat-file", "--batch",
                   stdin=b"".join(f"{rev}:{p}".encode("utf-8", "surrogateescape") + b"\n"
                                  for p in batched))
        if done.returncode == 0:
            out.update(_batch_blobs(done.stdout, batched))
    for path in paths:
        if path not in out:
            out[path] = show(repo, rev, path)
    return out


def _batch_blobs(data: bytes, paths: list[str]) -> dict[str, bytes | None]:
    """The blobs of ``cat-file --batch`` output, by the path each request named: None for a
    missing one; left out when the answer is not a blob (a tree, an ambiguous name)."""
    blobs: dict[str, bytes | None] = {}
    pos = 0
    for path in paths:
        end = data.find(b"\n", pos)
        if end < 0:
            break
        header = data[pos:end].split()
        pos = end + 1
        if header[-1:] == [b"missing"]:
            blobs[path] = None
            continue
        if len(header) != 3 or not header[2].isdigit():
            continue  # "ambiguous" and the like: no content follows
        size = int(header[2])
        if header[1] == b"blob":
            blobs[path] = data[pos:pos + size]
        pos += size + 1
    return blobs


_LISTINGS: dict[tuple[str, str], tuple[tuple[str, str, str], ...]] = {}
"""The :func:`tree_entries` of the last few ``(repository folder, full sha)``: a commit's
tree is fixed by its sha (a project's config, rules and matrix are read from the
same commit, one after the other)."""
_LISTINGS_LOCK = threading.Lock()
_LISTINGS_SIZE = 8


def tree_entries(repo: Path, rev: str) -> list[tuple[str, str, str]]:
    """``(mode, blob sha, path)`` of every file in the tree of ``rev`` (mode ``120000`` is a
    symbolic link, ``100755`` an executable); the listing of a full commit sha is asked of
    git once per repository (the last few are kept), never that of a ref name."""
    key = (_where(repo), rev)
    fixed = _FULL_HEX.fullmatch(rev) is not None
    if fixed:
        with _LISTINGS_LOCK:
            known = _LISTINGS.get(key)
        if known is not None:
            return list(known)
    rows = _list_tree(repo, rev)
    if fixed:
        with _LISTINGS_LOCK:
            _LISTINGS.pop(key, None)
            _LISTINGS[key] = tuple(rows)
            while len(_LISTINGS) > _LISTINGS_SIZE:
                del _LISTINGS[next(iter(_LISTINGS))]
    return rows


def _list_tree(repo: Path, rev: str) -> list[tuple[str, str, str]]:
    out = git(repo, "ls-tree", "-r", "-z", "--full-tree", rev)
    rows: list[tuple[str, str, str]] = []
    for entry in out.split(b"\0"):
        if not entry:
            continue
        meta, _, path = entry.partition(b"\t")
        parts = meta.split()
        if len(parts) == 3 and parts[1] == b"blob":
            rows.append((parts[0].decode(), parts[2].decode(),
                         path.decode("utf-8", "surrogateescape")))
    return rows


def ls_tree(repo: Path, rev: str) -> list[tuple[str, str]]:
    """``(blob sha, path)`` of every file in the tree of ``rev``."""
    return [(sha, path) for _, sha, path in tree_entries(repo, rev)]


def cat_blobs(repo: Path, shas: list[str]) -> dict[str, bytes]:
    """Contents of many blobs in one ``git cat-file --batch`` call."""
    if not shas:
        return {}
    done = run(repo, "cat-file", "--batch", stdin=b"".join(s.encode() + b"\n" for s in shas))
    if done.returncode != 0:
        raise RepositoryError("git cat-file failed", file=repo,
                              fix="check the repository is not corrupt (`git fsck`)")
    out = done.stdout
    blobs: dict[str, bytes] = {}
    pos = 0
    for sha in shas:
        end = out.index(b"\n", pos)
        header = out[pos:end].split()
        pos = end + 1
        if len(header) < 3 or header[1] == b"missing":
            continue
        size = int(header[2])
        blobs[sha] = out[pos:pos + size]
        pos += size + 1
    return blobs


def snapshot(repo: Path) -> tuple[str, str, bool]:
    """``(HEAD sha, tree sha, dirty)`` of the worktree as it is now: the tree holds tracked,
    modified and untracked files (ignored ones excepted), written through a private index so
    the worktree's own index is untouched; ``dirty`` when it differs from HEAD's tree."""
    head, changed = status(repo)
    if head is None:  # no answer, or no commit yet: ask the long way (which says why)
        head, head_tree = git(repo, "rev-parse", "HEAD", "HEAD^{tree}").decode().split()
    else:
        head_tree = tree_of(repo, head)
    if not changed:  # what the private index would hold is HEAD's tree itself
        return head, head_tree, False
    with tempfile.TemporaryDirectory(prefix="portwright-index-") as folder:
        env = {**os.environ, "GIT_INDEX_FILE": str(Path(folder) / "index")}
        for args in (("read-tree", head), ("add", "-A", "--", "."), ("write-tree",)):
            done = run(repo, *args, env=env)
            if done.returncode != 0:
                message = done.stderr.decode("utf-8", "replace").strip()
                raise RepositoryError(f"git {args[0]} failed while reading the worktree: "
                                      f"{message}", file=repo,
                                      fix="check the worktree is a readable git checkout")
    tree = done.stdout.decode().strip()
    return head, tree, tree != head_tree


def status(repo: Path) -> tuple[str | None, bool]:
    """HEAD's sha (None when git does not name one) and whether the worktree differs from
    HEAD in anything :func:`snapshot` would write: a staged, modified, deleted or untracked
    (not ignored) file, or a submodule whose checkout moved (``dirty``: its work tree is not
    looked into, as no host git does). One ``git status``: its headers name HEAD, every
    other record is a change."""
    done = run(repo, "--no-optional-locks", "status", "--porcelain=v2", "-z", "--branch",
               "--no-ahead-behind", "--untracked-files=all", "--ignore-submodules=dirty")
    if done.returncode != 0:
        return None, True
    head: str | None = None
    for record in done.stdout.split(b"\0"):
        if not record:
            continue
        if not record.startswith(b"# "):
            return head, True  # the headers come first: this is a change
        if record.startswith(b"# branch.oid "):
            oid = record.removeprefix(b"# branch.oid ").decode("ascii", "replace")
            head = oid if _FULL_HEX.fullmatch(oid) else None  # "(initial)": no commit yet
    return head, False


_TREES: dict[str, str] = {}
"""Tree sha of each commit sha looked up so far: fixed by the commit's sha itself."""
_TREES_LOCK = threading.Lock()


def tree_of(repo: Path, commit: str) -> str:
    """The tree sha of ``commit`` (a full sha), asked of git once per process."""
    with _TREES_LOCK:
        known = _TREES.get(commit)
    if known is not None:
        return known
    tree = git(repo, "rev-parse", "--verify", "--end-of-options", f"{commit}^{{tree}}"
               ).decode().strip()
    _remember_tree(commit, tree)
    return tree


def _remember_tree(commit: str, tree: str) -> None:
    with _TREES_LOCK:
        if len(_TREES) >= 4096:
            _TREES.clear()
        _TREES[commit] = tree


def head_commit(repo: Path) -> str:
    """The full sha of HEAD, as :func:`rev_parse` ``HEAD`` says it; its tree, read from the
    same commit object in the same git call, is remembered for the next :func:`snapshot`."""
    done = run(repo, "log", "-1", "--no-show-signature", "--format=%H %T", "HEAD", "--")
    shas = done.stdout.decode("utf-8", "replace").split()
    if done.returncode == 0 and len(shas) == 2 and all(_FULL_HEX.fullmatch(s) for s in shas):
        _remember_tree(shas[0], shas[1])
        _remember_commits(repo, shas[:1])
        return shas[0]
    return rev_parse(repo, "HEAD")
