"""Project: a downstream repository, its configuration, and every fact derived from them.

Where the upstream checkout is (a path, or a URL cloned once), which files are portwright's
own records, where run state lives, which paths are protected: each is worked out here and
nowhere else. Code that needs one of these facts asks the :class:`Project`; it never
re-derives it from the config.

**Run state lives outside the repository.** Sandboxed commands can write the downstream
worktree, so nothing the host later opens, follows or trusts may live there: run folders
(logs, evidence records, manifests, transcripts, reports), caches and the upstream clone
live in the state folder::

    $PORTWRIGHT_STATE_DIR                      (or [state_dir], or
        projects/<name>-<hash>/                 $XDG_STATE_HOME/portwright, or
            runs/<run_id>/                      ~/.local/state/portwright)
            index/
            gap/
            upstream/

``<hash>`` names the repository's git common directory, so every worktree of one
repository (a run's own worktree included) shares one state folder.

**What a run obeys is committed.** :meth:`Project.load` with ``at=REV`` reads
``portwright.toml`` from that commit, and :meth:`Project.rules` reads the ``AGENTS.md``
files from it too: a command that rewrote the working files (or replaced them by links)
changes nothing the run obeys. Read commands (``doctor``, ``rules check``) use the working
files, so a person can check an edit before committing it.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from portwright.config import CONFIG_FILE, PortwrightConfig, load_config, parse_config
from portwright.config_pr import SECRET_NAMES
from portwright.environment import STATE_ENV as STATE_ENV  # re-exported
from portwright.environment import default_state_home, private_folder
from portwright.errors import ConfigError, RepositoryError, UsageError
from portwright.redact import register_environment
from portwright.vcs import plumbing
from portwright.vcs.upstream import clone_or_fetch, is_url

if TYPE_CHECKING:
    from portwright.rules import Rules
    from portwright.runs.store import RunStore
    from portwright.vcs.git import Repo

logger = logging.getLogger(__name__)

_SLUG = re.compile(r"[^A-Za-z0-9_.-]+")
_OWN_SECRET = re.compile(r"^PORTWRIGHT_\w*(?:TOKEN|SECRET|PASSWORD|API_KEY)\w*$")


def secret_names(config: PortwrightConfig, environ: Mapping[str, str]) -> set[str]:
    """The environment variables whose values are secrets: the model's key
    (``[model] api_key_env``), the forge's token (``[pr] token_env`` and the usual names),
    the Temporal API key's variable, and portwright's own tokens (``PORTWRIGHT_WEB_TOKEN``,
    any ``PORTWRIGHT_*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``, ``*API_KEY*``)."""
    names = {config.model.api_key_env, config.pr.token_env, *SECRET_NAMES,
             *(name for name in environ if _OWN_SECRET.match(name))}
    temporal_key = getattr(config.temporal, "api_key_env", None)
    return names | ({temporal_key} if isinstance(temporal_key, str) else set())


def record_globs(config: PortwrightConfig) -> list[str]:
    """Globs of the downstream files that are portwright's own records, not the port:
    matrices, ledger, inventory, specs, the pin store, the rules (``AGENTS.md``), the
    config. They name upstream symbols without porting them, and a change to them is not
    code a change introduces."""
    a = config.artifacts
    return [*a.matrices, a.ledger, a.inventory, a.specs.rstrip("/") + "/", config.pin.file,
            "AGENTS.md", "**/AGENTS.md", CONFIG_FILE]


@dataclass(frozen=True)
class Project:
    """A downstream repository (``root``, the top of a git work tree) and its config."""

    root: Path
    """The downstream worktree, resolved."""
    config: PortwrightConfig
    """Its configuration (``portwright.toml`` with ``PORTWRIGHT_*`` overrides)."""
    revision: str | None = None
    """The commit config and rules were read from; None: the working files."""
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ), repr=False)
    read: PortwrightConfig | None = field(default=None, repr=False, compare=False)
    """The config :meth:`load` read at :attr:`revision` (a copy made with another config
    keeps it: :attr:`as_committed` tells them apart)."""

    def __post_init__(self) -> None:
        # what the config names as secrets is masked in everything written from now on
        register_environment(self.environ, secret_names(self.config, self.environ))

    @classmethod
    def load(cls, root: Path, *, at: str | None = None,
             environ: Mapping[str, str] | None = None) -> Project:
        """The project at ``root``; with ``at``, its config as committed at that revision."""
        root = root.resolve()
        env = dict(os.environ if environ is None else environ)
        if not root.is_dir():
            raise RepositoryError(
                "is not a folder" if root.exists() else "does not exist", file=root,
                key="--repo", fix="pass -C (--repo) the folder of the downstream repository")
        if at is None:
            try:
                return cls(root, load_config(root, environ=env), None, env)
            except ConfigError as exc:
                if (root / CONFIG_FILE).exists() or (root / CONFIG_FILE).is_symlink():
                    raise
                raise _why_no_config(root) or exc from exc
        if plumbing.run(root, "rev-parse", "--is-bare-repository").stdout.strip() == b"true":
            raise _bare(root)
        sha = plumbing.rev_parse(root, at)
        data = plumbing.show(root, sha, CONFIG_FILE)
        if data is None:
            raise ConfigError(f"portwright.toml is not committed at {sha[:12]}",
                              file=root / CONFIG_FILE,
                              fix="commit portwright.toml: runs obey the committed config only")
        links = [m for m, _, p in plumbing.tree_entries(root, sha) if p == CONFIG_FILE]
        if links and links[0] == "120000":
            raise ConfigError("portwright.toml is a symbolic link", file=root / CONFIG_FILE,
                              fix="replace the link by the file itself and commit it")
        config = parse_config(data, root / CONFIG_FILE, environ=env)
        return cls(root, config, sha, env, read=config)

    @property
    def as_committed(self) -> bool:
        """Whether :attr:`config` is the one :meth:`load` read at :attr:`revision` (with
        :attr:`environ`'s overrides), not one a caller put in its place."""
        return self.revision is not None and self.read is not None and self.config is self.read

    def in_worktree(self, folder: Path) -> Project:
        """This project seen from ``folder``, a linked worktree of its repository that
        portwright made (a run's): the same config, read at the same revision, and the same
        git directory and state folder, so nothing is read again. Only for a project
        :attr:`as_committed`: the working files of another folder are other files, and a
        config put in place of the committed one is not what the worktree holds."""
        if not self.as_committed:
            raise ValueError("in_worktree needs a project as loaded at a revision")
        moved = Project(folder.resolve(), self.config, self.revision, self.environ,
                        read=self.config)
        # both follow from the git directory, which the worktree shares
        moved.__dict__["_common_dir"] = self._common_dir
        moved.__dict__["state_dir"] = self.state_dir
        return moved

    # -- state ---------------------------------------------------------------------------

    @cached_property
    def state_dir(self) -> Path:
        """This project's state folder, outside the repository (created on first use)."""
        configured = self.config.state_dir
        if configured is None:
            base = default_state_home(self.environ)
        else:
            base = self._checked_state_base(configured)
        main = self._common_dir
        name = main.parent.name if main.name == ".git" else main.name.removesuffix(".git")
        digest = hashlib.sha256(str(main.resolve()).encode()).hexdigest()[:12]
        folder = base / "projects" / f"{_SLUG.sub('_', name).strip('_') or 'repo'}-{digest}"
        try:
            return private_folder(folder)
        except OSError as exc:
            raise self._state_folder_error(base, exc) from exc

    def _state_folder_error(self, base: Path, exc: OSError) -> ConfigError:
        """What a state folder that cannot be made (a file in its place, no right to write
        there) means, naming where it was set."""
        where = Path(exc.filename) if exc.filename else base
        if isinstance(exc, NotADirectoryError | FileExistsError):
            problem = f"the state folder {base} is not a folder: {where} is a file"
        else:
            problem = f"the state folder {base} cannot be made: {exc.strerror or exc} ({where})"
        if self.config.state_dir is None:  # the default: $XDG_STATE_HOME/portwright, …
            return ConfigError(f"{problem} (the default state folder: {STATE_ENV} and "
                               "state_dir are unset)", key="state_dir",
                               fix=f"move {where} aside, or set {STATE_ENV} (or state_dir in "
                                   "portwright.toml) to a folder of your own")
        source = self.config.origin("state_dir", self.root / CONFIG_FILE)
        return ConfigError(problem, file=source, key="state_dir",
                           fix=f"move {where} aside, or point {STATE_ENV} (state_dir) at a "
                               "folder of your own outside every repository")

    @cached_property
    def _common_dir(self) -> Path:
        return plumbing.common_dir(self.root)

    @cached_property
    def main_root(self) -> Path:
        """The repository's main worktree (``root`` itself unless ``root`` is a linked
        worktree, such as a run's): relative paths of the config are relative to it."""
        common = self._common_dir
        return common.parent.resolve() if common.name == ".git" else self.root

    def worktree_dir(self, run_id: str) -> Path:
        """Where the run ``run_id`` gets its own worktree (not created)."""
        return self.state_dir / "worktrees" / run_id

    def _checked_state_base(self, configured: str) -> Path:
        source = self.config.origin("state_dir", self.root / CONFIG_FILE)
        base = Path(configured).expanduser()
        problem = None
        if not base.is_absolute():
            problem = f"state_dir must be an absolute path, not {configured!r}"
        elif base.resolve() == Path("/"):
            problem = "state_dir must not be the filesystem root"
        elif base.resolve() == self.root or base.resolve().is_relative_to(self.root):
            problem = ("state_dir must lie outside the repository: sandboxed commands can "
                       f"write {self.root}")
        if problem is not None:
            raise ConfigError(problem, file=source, key="state_dir",
                              fix="use a folder of your own outside every repository, e.g. "
                                  "~/.local/state/portwright (or leave it unset)")
        return base.resolve()

    @property
    def runs_dir(self) -> Path:
        return self.state_dir / "runs"

    def run_dir(self, run_id: str) -> Path:
        """The folder of one run (not created)."""
        return self.runs_dir / run_id

    def store(self, run_id: str, *, key: bytes | None = None) -> RunStore:
        """The run store of ``run_id``."""
        from portwright.runs.store import RunStore

        return RunStore(self.runs_dir, run_id, key=key)

    @property
    def index_dir(self) -> Path:
        """Cache of the downstream history index."""
        return self.state_dir / "index"

    @property
    def gap_cache_dir(self) -> Path:
        """Cache of the gap scan's per-commit upstream analysis (keyed by sha)."""
        return self.state_dir / "gap"

    # -- upstream --------------------------------------------------------------------------

    def upstream(self, *, fetch: bool = False) -> Path:
        """The local upstream checkout: ``upstream.source`` as a path (relative to the
        repository), or a clone of the URL under the state folder (cloned on first use;
        fetched when ``fetch``)."""
        source = self.config.upstream.source
        if is_url(source):
            return clone_or_fetch(source, self.state_dir / "upstream", fetch=fetch)
        path = (self.main_root / source).resolve()
        origin = self.config.origin("upstream.source", self.root / CONFIG_FILE)
        problem = None
        if not path.exists():
            problem = f"the upstream checkout {path} does not exist"
        elif not path.is_dir():
            problem = f"the upstream checkout {path} is not a folder"
        elif self._same_repository(path):
            problem = (f"{source!r} is the downstream repository itself (or a folder of it), "
                       "not the upstream")
        if problem is not None:
            raise RepositoryError(
                problem, file=origin, key="upstream.source",
                fix="clone the upstream project there, or point upstream.source at a clone "
                    "of it (a path relative to this repository, or a git URL)")
        return path

    def _same_repository(self, path: Path) -> bool:
        """Whether ``path`` is the downstream repository or a plain folder of it (a
        repository of its own nested inside, such as a submodule, is not)."""
        if path in (self.root, self.main_root):
            return True
        if not (path.is_relative_to(self.root) or path.is_relative_to(self.main_root)):
            return False
        top = plumbing.run(path, "rev-parse", "--show-toplevel").stdout.decode().strip()
        return not top or Path(top).resolve() in (self.root, self.main_root)

    def upstream_repo(self) -> Repo:
        """The upstream checkout opened with gitpython."""
        from portwright.vcs.git import open_repo

        return open_repo(self.upstream(), what="the upstream checkout")

    # -- records and rules ----------------------------------------------------------------

    @property
    def record_globs(self) -> list[str]:
        """Paths that are portwright's own records: :func:`record_globs` of the config."""
        return record_globs(self.config)

    def rules(self) -> Rules:
        """The ``AGENTS.md`` rules, from :attr:`revision` when the project has one."""
        from portwright.rules import load_rules

        return load_rules(self.root, at=self.revision)

    def drift(self) -> list[str]:
        """Files the run obeys whose working copy differs from :attr:`revision` (empty when
        the project reads working files)."""
        if self.revision is None:
            return []
        out = plumbing.git(self.root, "diff", "--name-only", "-z", self.revision, "--",
                           CONFIG_FILE, "AGENTS.md", "**/AGENTS.md")
        return sorted(p for p in out.decode("utf-8", "surrogateescape").split("\0") if p)


def _bare(root: Path) -> RepositoryError:
    return RepositoryError("a bare repository: it has no work tree (no files to check, no "
                           "portwright.toml to read)", file=root,
                           fix="run portwright in a clone with a work tree "
                               f"(`git clone {root} <folder>`)")


def _why_no_config(root: Path) -> UsageError | None:
    """Why ``root`` has no portwright.toml, when git can tell: a bare repository, or a
    folder below the top of the work tree."""
    done = plumbing.run(root, "rev-parse", "--is-bare-repository", "--show-toplevel")
    lines = done.stdout.decode("utf-8", "surrogateescape").split("\n")
    if lines[0] == "true":
        return _bare(root)
    top = Path(lines[1]).resolve() if done.returncode == 0 and len(lines) > 1 and lines[1] \
        else None
    if top is not None and top != root and (top / CONFIG_FILE).is_file():
        return ConfigError(f"no portwright.toml here: {root} is a folder inside the "
                           f"repository {top}", file=root / CONFIG_FILE,
                           fix=f"run portwright from {top} (or pass -C {top})")
    return None
