"""Markdown a page shows (specs, approval requests) as safe HTML.

markdown-it-py with raw HTML disabled (tags in the text are shown, not obeyed) and its
link check (no ``javascript:`` URLs). An inline code span that is an anchor
(``path:START-END[@SHA]``) becomes a link to the upstream view of the cited lines at the
anchor's revision (the spec's pin when it names none).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import quote

from markdown_it import MarkdownIt
from markdown_it.token import Token
from markupsafe import Markup, escape

from portwright.errors import PortwrightError
from portwright.evidence.anchors import parse_anchor
from portwright.parity.markdown import split_front_matter

Linker = Callable[[str, str, int, int], str]
"""(path, revision, start, end) → the URL showing those lines."""


def upstream_link(run_id: str) -> Linker:
    """Links into the upstream view of ``run_id``'s page."""

    def link(path: str, rev: str, start: int, end: int) -> str:
        return (f"/runs/{quote(run_id)}/upstream/{quote(path)}?at={quote(rev)}"
                f"#L{start}")

    return link


def _parser(default_rev: str, link: Linker | None) -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")

    def code_inline(renderer: Any, tokens: Sequence[Token], idx: int, options: Any,
                    env: Any) -> str:
        content = tokens[idx].content
        code = f"<code>{escape(content)}</code>"
        try:
            anchor = parse_anchor(content)
        except PortwrightError:
            return code
        rev = anchor.sha or default_rev
        if link is None or not rev:
            return f'<span class="anchor" title="upstream at {escape(rev[:12])}">{code}</span>'
        href = escape(link(anchor.path, rev, anchor.start, anchor.end))
        return f'<a class="anchor" href="{href}" title="upstream at {escape(rev[:12])}">{code}</a>'

    md.add_render_rule("code_inline", code_inline)
    return md


def render(text: str, *, default_rev: str = "", link: Linker | None = None) -> Markup:
    """``text`` (markdown) as HTML; anchors link to upstream lines when ``link`` is given."""
    return Markup(_parser(default_rev, link).render(text))


def render_spec(text: str, *, pin: str = "", link: Linker | None = None
                ) -> tuple[str, Markup]:
    """A spec's front matter (as written) and its body as HTML; anchors without a revision
    resolve at the spec's ``pin`` (else at ``pin``)."""
    raw, _, body, _ = split_front_matter(text)
    for line in (raw or "").splitlines():
        key, sep, value = line.partition(":")
        if sep and key == "pin" and value.strip():
            pin = value.strip().strip("'\"")
    return raw or "", render(body, default_rev=pin, link=link)
