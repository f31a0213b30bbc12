"""``portwright eval``: port tasks mined from real ports, run in the cycle and in a plain
agent loop, and scored by hidden tests the agents never see. See ``docs/eval.md``."""

DEFAULT_AGE = "30d"
"""``eval prune --older-than`` when not given (here, where the CLI reads it without loading
the store)."""
