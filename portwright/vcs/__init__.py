"""git: repositories, revisions, worktrees and commits with trailers (gitpython)."""
