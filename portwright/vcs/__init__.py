"""git: the one way portwright calls it, worktrees, and commits with trailers.

- :mod:`portwright.vcs.plumbing` runs every host-side git command: a plain ``git``
  subprocess with a hardened environment (hooks off, fsmonitor off, submodules ignored,
  passed as ``GIT_CONFIG_*`` so no configuration file outranks them), returning bytes.
  Nothing outside this package starts git itself.
- :mod:`portwright.vcs.git` is the only module that imports gitpython, and
  :func:`~portwright.vcs.git.open_repo` the only place a ``git.Repo`` is made (with the
  same environment). gitpython stays only where its object model earns its keep: the
  long-lived ``cat-file`` readers behind :func:`~portwright.vcs.git.commit_sha` and
  :func:`~portwright.vcs.git.read_blob` (thousands of anchor lookups, one process).
  It never runs a git command.
- :mod:`portwright.vcs.worktree`: a run's own worktree and branch, commits with trailers.
- :mod:`portwright.vcs.upstream`: the clone of an upstream given as a URL.

``tests/foundation/test_one_git.py`` reads the source and fails on any other way.
"""
