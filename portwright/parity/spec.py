"""Row specs: the committed spike spec of one matrix row.

A spec is a markdown file under ``[artifacts] specs`` with YAML front matter::

    ---
    row: attn-fp8                 # the matrix row it specifies
    pin: 0123456789abcdef...      # the upstream revision it was written against
    slice: decode path, bf16 activations; prefill deferred
    answers:                      # the questions the rules require (spec.questions)
      linear_output_dtype: bf16
      kv_cache_dtype: fp8_e4m3
      intermediate_dtype: fp32
      gemm_layout: merged
    dependencies:                 # what the ported path runs on: library → version or sha
      torch: 2.4.0
      flash-attn: 7f3c2a1
    ---
    # FP8 attention

    ## Surface

    | item              | kind    | status         | reason               | anchor |
    | ----------------- | ------- | -------------- | -------------------- | ------ |
    | decode            | mode    | ported         |                      | `attn/fp8.py:10-40` |
    | prefill           | mode    | deferred       | needs paged prefill  | `attn/fp8.py:60-90` |
    | rocm path         | backend | not_applicable | no ROCm in the port  | |

    ## Slice
    ...
    ## Anchors
    - `attn/fp8.py:10-40 "def fp8_attention("`
    ## Dependency anchors
    - `requirements.txt:3 "torch==2.4.0"`
    ## Adaptations
    - the KV cache uses the port's arena allocator, because ...

Surface ``status`` is ``ported``, ``deferred`` (``reason`` required) or ``not_applicable``
(``not-applicable`` and ``n/a`` are accepted spellings). Anchors may be written anywhere in
the body; they all must resolve (the ``anchors`` gate), at their own ``@sha`` or else at the
spec's ``pin``. The required sections are ``[spec] sections`` of the rules; the required
answers are ``[spec] questions``.
"""

from __future__ import annotations

import copy
import functools
import logging
from enum import StrEnum
from io import StringIO
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from portwright.config import PortwrightConfig
from portwright.errors import ParityFileError
from portwright.evidence.anchors import Anchor, find_anchors
from portwright.parity._files import glob_files, read_text, rel
from portwright.parity.markdown import (
    escape_cell,
    find_tables,
    plain_cell,
    sections,
    split_front_matter,
)

logger = logging.getLogger(__name__)

__all__ = [
    "Spec",
    "SpecSection",
    "SurfaceItem",
    "SurfaceStatus",
    "load_spec",
    "load_specs",
    "parse_spec",
    "render_spec",
    "set_front_matter_scalar",
    "spec_problems",
]


class SurfaceStatus(StrEnum):
    """How one surface item was treated."""

    PORTED = "ported"
    DEFERRED = "deferred"
    NOT_APPLICABLE = "not_applicable"


_STATUS_SPELLINGS = {
    "ported": SurfaceStatus.PORTED, "deferred": SurfaceStatus.DEFERRED,
    "not_applicable": SurfaceStatus.NOT_APPLICABLE, "not-applicable": SurfaceStatus.NOT_APPLICABLE,
    "not applicable": SurfaceStatus.NOT_APPLICABLE, "n/a": SurfaceStatus.NOT_APPLICABLE,
}


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SurfaceItem(_Model):
    """One row of the surface table."""

    item: str
    """The mode, default, dtype, error path, edge case or upstream test."""
    kind: str
    """What sort of item it is."""
    status: SurfaceStatus | None
    """ported / deferred / not_applicable; None when unclassified or misspelled."""
    status_text: str
    """The status cell as written."""
    reason: str
    """Why it is deferred or not applicable."""
    anchor: str
    """The anchor cell as written."""
    line: int
    """1-based line in the spec."""


class SpecSection(_Model):
    """A heading of the spec and whether it says anything."""

    title: str
    """Heading text."""
    line: int
    """1-based line of the heading."""
    empty: bool
    """No text under the heading (before the next heading of its level)."""
    end: int
    """Last line of the section's body."""


class Spec(_Model):
    """A parsed spec."""

    file: str
    """Path, posix, relative to the repo."""
    row: str | None
    """Matrix row id (front matter ``row``)."""
    pin: str | None
    """Upstream revision (front matter ``pin``)."""
    slice: str | None
    """The chosen slice (front matter ``slice``)."""
    answers: dict[str, str] = Field(default_factory=dict)
    """Answers to the rules' questions."""
    dependencies: dict[str, str] = Field(default_factory=dict)
    """Library → version or sha the ported path runs on."""
    surface: list[SurfaceItem] = Field(default_factory=list)
    """The surface table's rows."""
    sections: list[SpecSection] = Field(default_factory=list)
    """Headings in order."""
    anchors: list[tuple[Anchor, int]] = Field(default_factory=list)
    """Every anchor of the body with its line."""
    front_line: int = 0
    """Line of the front matter's first key (0: no front matter)."""


@functools.lru_cache(maxsize=64)
def _load_yaml(raw: str) -> Any:
    """The front matter's data: a run reads one spec in several checks, and the pure YAML
    parser costs some milliseconds each time (callers get a copy)."""
    return YAML(typ="safe", pure=True).load(raw)


def _front(raw: str | None, path: Path) -> dict[str, Any]:
    if raw is None:
        return {}
    try:
        data = copy.deepcopy(_load_yaml(raw))
    except (YAMLError, ValueError, RecursionError) as exc:
        # ValueError: a value YAML cannot build (2001-02-30); RecursionError: nesting
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or exc
        raise ParityFileError(f"front matter is not valid YAML: {problem}",
                              file=path, line=(mark.line + 2) if mark is not None else 2,
                              fix="fix the YAML between the --- lines") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ParityFileError("front matter must be a mapping (key: value lines)", file=path,
                              line=2, fix="write row:, pin:, slice:, answers: keys")
    return data


def _str_map(value: Any, key: str, path: Path) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ParityFileError(f"front matter `{key}` must be a mapping", file=path, line=2,
                              key=key, fix=f"write `{key}:` followed by indented `name: value`")
    return {str(k): "" if v is None else str(v) for k, v in value.items()}


def parse_spec(text: str, path: Path, relpath: str) -> Spec:
    """Parse a spec's text."""
    raw, front_line, body, body_line = split_front_matter(text)
    data = _front(raw, path)
    surface: list[SurfaceItem] = []
    heads = sections(body, body_line)
    surface_sections = [s for s in heads if s.title.lower() == "surface"]
    if surface_sections:
        section = surface_sections[0]
        for table in find_tables(section.body):
            c_item = table.column("item")
            c_status = table.column("status")
            if c_item is None or c_status is None:
                continue
            c_kind, c_reason, c_anchor = (table.column("kind"), table.column("reason"),
                                          table.column("anchor", "anchors"))
            for row in table.rows:
                status_text = plain_cell(row.cells[c_status])
                surface.append(SurfaceItem(
                    item=plain_cell(row.cells[c_item]),
                    kind=plain_cell(row.cells[c_kind]) if c_kind is not None else "",
                    status=_STATUS_SPELLINGS.get(status_text.lower()),
                    status_text=status_text,
                    reason=row.cells[c_reason].strip() if c_reason is not None else "",
                    anchor=row.cells[c_anchor].strip() if c_anchor is not None else "",
                    line=row.line + section.body_line - 1,
                ))
    anchors = [(a, line + body_line - 1) for a, line in find_anchors(body)]
    return Spec(
        file=relpath,
        row=None if data.get("row") is None else str(data["row"]),
        pin=None if data.get("pin") is None else str(data["pin"]),
        slice=None if data.get("slice") is None else str(data["slice"]).strip(),
        answers=_str_map(data.get("answers"), "answers", path),
        dependencies=_str_map(data.get("dependencies"), "dependencies", path),
        surface=surface,
        sections=[SpecSection(title=s.title, line=s.line, empty=not _has_text(s.body),
                              end=s.body_line + s.body.count("\n")) for s in heads],
        anchors=anchors,
        front_line=front_line,
    )


def set_front_matter_scalar(text: str, key: str, value: str) -> str:
    """``text`` with the top-level front-matter scalar ``key`` set to ``value``; only the old
    value's bytes change (quotes and a trailing comment stay)."""
    import re

    match = re.match(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*$", text, re.DOTALL | re.MULTILINE)
    if match is None:
        raise ParityFileError("the spec has no front matter", fix="start it with --- lines")
    line = re.compile(rf"^{re.escape(key)}:[ \t]*(['\"]?)(?P<value>[^'\"#\r\n]*?)\1[ \t]*"
                      r"(?:#.*)?$", re.MULTILINE)
    found = line.search(text, match.start(1), match.end(1))
    if found is None:
        raise ParityFileError(f"the front matter has no `{key}:`", fix=f"add `{key}: ...`")
    return text[: found.start("value")] + value + text[found.end("value"):]


def _has_text(body: str) -> bool:
    return any(line.strip() and not line.lstrip().startswith("#") for line in body.split("\n"))


def load_spec(repo: Path, path: Path) -> Spec:
    """Read and parse one spec."""
    if not path.is_file():
        raise ParityFileError("the spec does not exist", file=path,
                              fix="write it, or fix the spec link in the matrix row")
    return parse_spec(read_text(path), path, rel(repo, path))


def load_specs(repo: Path, config: PortwrightConfig) -> list[Spec]:
    """Every spec under ``[artifacts] specs``."""
    folder = config.artifacts.specs.rstrip("/")
    return [load_spec(repo, p) for p in glob_files(repo, [f"{folder}/**/*.md"])]


def spec_problems(spec: Spec, *, questions: list[str], required_sections: list[str]) -> list[str]:
    """What keeps ``spec`` from being complete, each naming ``file:line``."""
    out: list[str] = []
    head = f"{spec.file}:{spec.front_line or 1}"
    for key in ("row", "pin", "slice"):
        if not getattr(spec, key):
            out.append(f"{head}: front matter has no `{key}`")
    for question in questions:
        if not spec.answers.get(question, "").strip():
            out.append(f"{head}: the question `{question}` is not answered "
                       f"(add `answers: {question}: ...` to the front matter)")
    titles = {s.title.lower(): s for s in spec.sections}
    for name in required_sections:
        section = titles.get(name.lower())
        if section is None:
            out.append(f"{spec.file}:1: section `## {name}` is missing")
        elif section.empty:
            out.append(f"{spec.file}:{section.line}: section `## {name}` is empty")
    if "surface" in {n.lower() for n in required_sections} and "surface" in titles \
            and not spec.surface:
        out.append(f"{spec.file}:{titles['surface'].line}: the surface table has no items "
                   "(columns: item | kind | status | reason | anchor)")
    out += _dependency_problems(spec)
    for item in spec.surface:
        at = f"{spec.file}:{item.line}"
        if item.status is SurfaceStatus.PORTED and not find_anchors(item.anchor) \
                and item.anchor not in {"-", "—"} and _has_anchor_column(spec):
            out.append(f"{at}: surface item {item.item!r} is ported but cites no upstream "
                       "anchor (path:LINE[-END]) in its anchor cell")
        if item.status is None:
            shown = repr(item.status_text) if item.status_text else "no status"
            out.append(f"{at}: surface item {item.item!r} is not classified ({shown}); use "
                       "ported, deferred (with a reason) or not_applicable")
        elif item.status is not SurfaceStatus.PORTED and item.reason in {"", "-", "—"}:
            out.append(f"{at}: surface item {item.item!r} is {item.status.value} without a "
                       "reason")
    return out


def _has_anchor_column(spec: Spec) -> bool:
    return any(item.anchor for item in spec.surface)


def _dependency_problems(spec: Spec) -> list[str]:
    """Each declared dependency version must be quoted by an anchor under
    ``## Dependency anchors`` (the lock file, requirements or submodule that pins it)."""
    if not spec.dependencies:
        return []
    section = next((s for s in spec.sections if s.title.lower() == "dependency anchors"), None)
    if section is None:
        return [f"{spec.file}:{spec.front_line or 1}: dependencies are declared but there is "
                "no `## Dependency anchors` section citing where upstream pins them"]
    cited = [a for a, line in spec.anchors if section.line < line <= section.end]
    out = []
    for name, version in spec.dependencies.items():
        if not any(a.excerpt and version in a.excerpt for a in cited):
            out.append(f"{spec.file}:{section.line}: dependency {name} {version} is not backed "
                       "by an anchor whose excerpt quotes the version (e.g. "
                       f'`requirements.txt:3 "{name}=={version}"`)')
    return out


def render_spec(
    *,
    row: str,
    pin: str,
    slice: str,
    title: str,
    surface: list[tuple[str, str, str, str, str]],
    answers: dict[str, str] | None = None,
    dependencies: dict[str, str] | None = None,
    anchors: list[str] | None = None,
    dependency_anchors: list[str] | None = None,
    adaptations: list[str] | None = None,
    slice_text: str = "",
) -> str:
    """A new spec's text, in the documented layout (surface rows: item, kind, status,
    reason, anchor)."""
    yaml = YAML(typ="rt")
    yaml.default_flow_style = False
    front: dict[str, Any] = {"row": row, "pin": pin, "slice": slice}
    if answers:
        front["answers"] = dict(answers)
    if dependencies:
        front["dependencies"] = dict(dependencies)
    buffer = StringIO()
    yaml.dump(front, buffer)
    header = ["item", "kind", "status", "reason", "anchor"]
    widths = [max([len(h)] + [len(escape_cell(r[i])) for r in surface])
              for i, h in enumerate(header)]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    parts = ["---", buffer.getvalue().rstrip("\n"), "---", f"# {title}", "", "## Surface", "",
             line(header), line(["-" * w for w in widths])]
    parts += [line([escape_cell(c) for c in r]) for r in surface]
    parts += ["", "## Slice", "", slice_text or slice, "", "## Anchors", ""]
    parts += [f"- `{a}`" for a in anchors or []] or ["- (none)"]
    parts += ["", "## Dependency anchors", ""]
    parts += [f"- `{a}`" for a in dependency_anchors or []] or ["- (none)"]
    parts += ["", "## Adaptations", ""]
    parts += [f"- {a}" for a in adaptations or []] or ["- none"]
    return "\n".join(parts) + "\n"
