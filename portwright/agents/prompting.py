"""Rendering role prompts and assembling their context within a token ceiling.

Templates live in :mod:`portwright.prompts` (``<role>.j2``), are loaded with
:mod:`importlib.resources` and rendered by Jinja2 with :class:`~jinja2.StrictUndefined`.
Messages are built static-first — the ``system`` block (role instructions, rules, spec)
before the ``task`` block (what changes per turn) — so a provider's prefix cache serves
the part every call of a run repeats. Context is made of cited ranges (:class:`Excerpt`),
never whole files, and cut to the role's token ceiling.
"""

from __future__ import annotations

import collections
import functools
import importlib.resources
import logging
import re
import threading
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
from pydantic import BaseModel, ConfigDict, Field

from portwright.agents.llm import Message, estimate_tokens
from portwright.errors import RunFailure, ToolError
from portwright.vcs import plumbing

logger = logging.getLogger(__name__)

BLOCKS = ("system", "task")


class ContextTooLarge(RunFailure):
    """A role's fixed context (instructions, rules, spec) alone exceeds its token ceiling."""


class PromptError(RunFailure):
    """A prompt template is missing, lacks a block, or needs a key it was not given."""


class Excerpt(BaseModel):
    """A cited range of a file, with line numbers: what context is built from."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    ref: str
    """``upstream src/a.py:10-20@1a2b3c4d5e6f`` or ``downstream lib/a.cpp:3-9``."""
    text: str
    """The lines, numbered."""
    why: str = ""
    """Why it is in the context (the evidence that cited it)."""
    tokens: int = Field(default=0, ge=0)
    """Estimated tokens (filled by :func:`cite`)."""


def cite(repo: Path, rev: str, path: str, start: int, end: int, *,
         side: str = "upstream", why: str = "") -> Excerpt:
    """The lines ``start``-``end`` of ``path`` at ``rev``, numbered."""
    return _excerpt(_file_text(repo, rev, path), rev, path, start, end, side=side, why=why)


_FULL_SHA = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")


def _file_text(repo: Path, rev: str, path: str) -> str:
    """Text of ``path`` at ``rev``; read once per process when ``rev`` is a full sha (the
    content is then fixed by the sha itself, whatever repository holds it)."""
    return _file_texts(repo, rev, [path])[path]


_AT_SHA: collections.OrderedDict[tuple[str, str, str], str] = collections.OrderedDict()
"""Texts of files at full shas, the most recently read last (at most :data:`_AT_SHA_SIZE`)."""
_AT_SHA_SIZE = 32
_AT_SHA_LOCK = threading.Lock()


def prefetch_texts(repo: Path, rev: str, paths: Sequence[str]) -> None:
    """Read ``paths`` at ``rev`` (a full sha) in one git call, for the :func:`cite_around`
    calls that follow; those that do not exist are left to them to report."""
    if _FULL_SHA.fullmatch(rev) is None:
        return
    with _AT_SHA_LOCK:
        wanted = [p for p in dict.fromkeys(paths) if (str(repo), rev, p) not in _AT_SHA]
    if not wanted or len(wanted) > _AT_SHA_SIZE:
        return  # more than are kept: each call reads its own
    read = plumbing.show_many(repo, rev, wanted)
    with _AT_SHA_LOCK:
        for path in wanted:
            data = read[path]
            if data is not None:
                _AT_SHA[(str(repo), rev, path)] = data.decode("utf-8", "surrogateescape")
        while len(_AT_SHA) > _AT_SHA_SIZE:
            _AT_SHA.popitem(last=False)


def _file_texts(repo: Path, rev: str, paths: Sequence[str]) -> dict[str, str]:
    """Text of each of ``paths`` at ``rev``, those not yet read in one git call; a missing
    one is a :class:`ToolError`."""
    where = str(repo)
    fixed = _FULL_SHA.fullmatch(rev) is not None
    texts: dict[str, str] = {}
    if fixed:
        with _AT_SHA_LOCK:
            for path in paths:
                if (key := (where, rev, path)) in _AT_SHA:
                    _AT_SHA.move_to_end(key)
                    texts[path] = _AT_SHA[key]
    wanted = [p for p in dict.fromkeys(paths) if p not in texts]
    read = plumbing.show_many(repo, rev, wanted) if wanted else {}
    for path in wanted:
        data = read[path]
        if data is None:
            raise ToolError(f"{path} does not exist at {rev[:12]}")
        texts[path] = data.decode("utf-8", "surrogateescape")
    if fixed and wanted:
        with _AT_SHA_LOCK:
            for path in wanted:
                _AT_SHA[(where, rev, path)] = texts[path]
            while len(_AT_SHA) > _AT_SHA_SIZE:
                _AT_SHA.popitem(last=False)
    return texts


def _excerpt(text: str, rev: str, path: str, start: int, end: int, *, side: str,
             why: str) -> Excerpt:
    lines = text.splitlines()
    last = min(end, len(lines))
    body = "\n".join(f"{n:>6}\t{lines[n - 1]}" for n in range(max(start, 1), last + 1))
    at = f"@{rev[:12]}" if side == "upstream" else ""
    ref = f"{side} {path}:{start}-{last}{at}"
    return Excerpt(ref=ref, text=body, why=why, tokens=estimate_tokens(body))


def cite_around(repo: Path, rev: str, hits: Sequence[tuple[str, int]], *,
                before: int = 3, after: int = 12, side: str = "upstream", why: str = ""
                ) -> list[Excerpt]:
    """Excerpts around each ``(path, line)`` hit, overlapping ranges of a file merged; each
    file read once."""
    ranges: dict[str, list[list[int]]] = {}
    order = {path: i for i, (path, _) in reversed(list(enumerate(hits)))}
    for path, line in sorted(hits, key=lambda hit: (order[hit[0]], hit[1])):
        start, end = max(1, line - before), line + after
        spans = ranges.setdefault(path, [])
        if spans and start <= spans[-1][1] + 1:
            spans[-1][1] = max(spans[-1][1], end)
        else:
            spans.append([start, end])
    out: list[Excerpt] = []
    texts = _file_texts(repo, rev, list(ranges))
    for path, spans in ranges.items():
        text = texts[path]
        out += [_excerpt(text, rev, path, start, end, side=side, why=why)
                for start, end in spans]
    return out


def within_ceiling(excerpts: list[Excerpt], tokens: int) -> tuple[list[Excerpt], list[str]]:
    """The excerpts that fit in ``tokens`` (in order), and the refs of those left out."""
    kept: list[Excerpt] = []
    left: list[str] = []
    used = 0
    for excerpt in excerpts:
        cost = excerpt.tokens or estimate_tokens(excerpt.text)
        if used + cost <= tokens:
            kept.append(excerpt)
            used += cost
        else:
            left.append(excerpt.ref)
    return kept, left


@cache
def _source(name: str) -> str:
    resource = importlib.resources.files("portwright.prompts").joinpath(name)
    if not resource.is_file():
        raise PromptError(f"no prompt template {name} in portwright/prompts")
    return resource.read_text(encoding="utf-8")


def template_names() -> list[str]:
    """Every ``*.j2`` shipped in :mod:`portwright.prompts`."""
    folder = importlib.resources.files("portwright.prompts")
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".j2"))


@functools.cache
def _environment() -> jinja2.Environment:
    """One environment per process: it caches the compiled templates (shipped package
    data, which does not change while the process runs), and keeps their bytecode between
    processes as Python keeps its modules': compiling the roles' templates took ~50 ms of
    every run. The cache is jinja2's own (a folder of this user's, mode 0700, refused when
    anyone else owns it; an entry is used only for the source it was compiled from)."""
    return jinja2.Environment(
        loader=jinja2.FunctionLoader(_source),
        bytecode_cache=_bytecode_cache(),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
    )


def _bytecode_cache() -> jinja2.BytecodeCache | None:
    try:
        return jinja2.FileSystemBytecodeCache()
    except (OSError, RuntimeError) as exc:  # no safe folder for it: compile every time
        logger.debug("prompt templates are compiled in every process: %s", exc)
        return None


def render_blocks(template_name: str, values: dict[str, Any]) -> dict[str, str]:
    """The ``system`` and ``task`` blocks of a template rendered with ``values``."""
    env = _environment()
    try:
        template = env.get_template(template_name)
        context = template.new_context(values)
        out = {}
        for block in BLOCKS:
            if block not in template.blocks:
                raise PromptError(f"prompt template {template_name} has no {{% block {block} %}}")
            out[block] = "".join(template.blocks[block](context)).strip() + "\n"
    except jinja2.UndefinedError as exc:
        raise PromptError(f"prompt template {template_name}: {exc.message}") from exc
    except jinja2.TemplateSyntaxError as exc:
        raise PromptError(f"prompt template {template_name}:{exc.lineno}: {exc.message}"
                          ) from exc
    return out


def build_messages(template_name: str, values: dict[str, Any], *, ceiling: int,
                   excerpts: list[Excerpt] | None = None) -> list[Message]:
    """System then user message, static first; excerpts cut to what the ceiling leaves.

    ``values`` must not hold ``excerpts`` / ``omitted``: they are filled here.
    """
    fixed = render_blocks(template_name, {**values, "excerpts": [], "omitted": []})
    fixed_tokens = sum(estimate_tokens(text) for text in fixed.values())
    if fixed_tokens > ceiling:
        raise ContextTooLarge(
            f"{template_name}: the fixed context needs ~{fixed_tokens} tokens, over the "
            f"ceiling of {ceiling} ([model] context_tokens); shorten the spec or the rules")
    kept, omitted = within_ceiling(list(excerpts or []), ceiling - fixed_tokens)
    if omitted:
        logger.info("%s: %d excerpts left out for the context ceiling", template_name,
                    len(omitted))
    blocks = render_blocks(template_name, {**values, "excerpts": kept, "omitted": omitted})
    return [Message(role="system", content=blocks["system"]),
            Message(role="user", content=blocks["task"])]
