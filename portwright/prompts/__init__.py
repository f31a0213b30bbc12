"""Prompt templates, one per role (``<role>.j2``), shipped as package data.

Each template has two blocks: ``system`` (what does not change within a run: the
role's instructions, the rules, the spec) and ``task`` (this turn's context: evidence,
cited ranges). They render with strict undefined: a missing key is an error.
"""
