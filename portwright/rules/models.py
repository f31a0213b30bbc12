"""Typed rules: the prose agents are told, and the gates that guard each phase."""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import PurePosixPath

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from portwright.globs import match_any
from portwright.values import Regex, RepoFile, RepoGlob, Seconds


class Phase(StrEnum):
    """The points of the cycle a gate can guard."""

    SPEC = "spec"
    RED = "red"
    FOCUSED = "focused"
    FULL = "full"
    RECONCILE = "reconcile"
    PIN = "pin"


class BuiltinCheck(StrEnum):
    """Checks the framework runs itself (no command)."""

    ANCHORS = "anchors"
    SPEC_COMPLETE = "spec-complete"
    RECONCILED = "reconciled"
    RED_GREEN = "red-green"
    NO_TEST_WEAKENING = "no-test-weakening"
    SEAMS = "seams"
    ADDITIVE = "additive"
    RUNTIME_CONFIG = "runtime-config"
    TAMPER = "tamper"
    PROTECTED_PATHS = "protected-paths"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True,
                              allow_inf_nan=False)


class GateSpec(_Model):
    """One gate: a command run in the sandbox, or a built-in check."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    """Unique name (lower case, digits, ``-``, ``_``, ``.``)."""
    run: str | None = None
    """Shell command run in the sandbox from the directory of the rules file."""
    check: BuiltinCheck | None = None
    """Name of a built-in check, instead of ``run``."""
    phases: list[Phase] = Field(min_length=1)
    """Phases this gate guards."""
    timeout: Seconds = 600.0
    """Seconds before the command is killed (counts as a failure); 1 s to a week."""
    paths: list[RepoGlob] = Field(default_factory=list)
    """Glob filters: the gate runs only when the change touches one of them (empty: always).
    Wildcards: ``*``, ``?`` and ``**`` as a whole path component."""
    junit: RepoFile | None = None
    """Path (relative to the gate's directory) of a JUnit XML report the command writes."""
    options: dict[str, str | int | float | bool | list[str]] = Field(default_factory=dict)
    """Options for a built-in check."""

    @field_validator("run")
    @classmethod
    def _run_says_something(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("an empty command runs nothing and would always pass; write the "
                             "command, or use `check` for a built-in check")
        return value

    @model_validator(mode="after")
    def _one_of_run_or_check(self) -> GateSpec:
        if (self.run is None) == (self.check is None):
            raise ValueError("a gate needs exactly one of `run` (a command) or `check` (built-in)")
        return self


class Seam(_Model):
    """A shared path that a behaviour must route through."""

    name: str
    """What the seam is, e.g. ``attention-backend``."""
    pattern: Regex
    """Regular expression that marks code implementing the behaviour."""
    through: Regex
    """Regular expression that must appear in the same file when ``pattern`` does."""
    paths: list[str] = Field(default_factory=list)
    """Globs of files the seam applies to (empty: every file)."""
    exceptions: list[str] = Field(default_factory=list)
    """Tracked exceptions: paths allowed to bypass the seam, each with an issue in the ledger."""


class RuntimeProbe(_Model):
    """A value a running program logs, to compare with what the spec declares."""

    name: str
    """The spec's answer key this value is compared with, e.g. ``kv_cache_dtype``."""
    pattern: Regex
    """Regular expression with a ``value`` group, matched against the command's output."""

    @field_validator("pattern")
    @classmethod
    def _has_value_group(cls, value: str) -> str:
        if "value" not in re.compile(value).groupindex:
            raise ValueError("the pattern needs a named group (?P<value>...)")
        return value


class SpecRules(_Model):
    """What a spec must answer."""

    questions: list[str] = Field(default_factory=list)
    """Keys that the spec's ``answers`` must all give, e.g. the memory-format questions."""
    sections: list[str] = Field(
        default_factory=lambda: ["Surface", "Slice", "Anchors", "Adaptations"]
    )
    """Headings every spec must have, non-empty."""


class GatesBlock(_Model):
    """The machine-readable part of one AGENTS.md."""

    gate: list[GateSpec] = Field(default_factory=list)
    """The gates, in order."""
    seam: list[Seam] = Field(default_factory=list)
    """Seams behaviours must route through."""
    additive: list[str] = Field(default_factory=list)
    """Globs where a change may only add files (new hardware, new models)."""
    runtime: list[RuntimeProbe] = Field(default_factory=list)
    """Values the ``runtime-config`` check extracts from a running program."""
    spec: SpecRules = Field(default_factory=SpecRules)
    """What specs must answer."""


class RulesFile(_Model):
    """One AGENTS.md file: where it applies, what it says, which gates it declares."""

    path: str
    """Path relative to the repo root (posix)."""
    directory: str
    """The subtree it applies to (``""`` for the root)."""
    sha256: str
    """Digest of the file's bytes, recorded by every run that used it."""
    prose: str
    """The markdown with the gates block removed: what agents are told."""
    block: GatesBlock
    """The machine part."""
    block_line: int | None = None
    """Line where the gates block starts, if there is one."""

    def applies_to(self, path: str) -> bool:
        return not self.directory or PurePosixPath(path).is_relative_to(self.directory)


class Rules(_Model):
    """Every AGENTS.md of a repo, root first; nested files apply to their subtree."""

    files: list[RulesFile]
    """Root first, then nested files by depth."""

    def for_path(self, path: str) -> list[RulesFile]:
        """Files that apply to ``path``, farthest first (the closest wins)."""
        return [f for f in self.files if f.applies_to(path)]

    def prose_for(self, paths: list[str] | None = None) -> str:
        """The prose agents are told: the root, then nested files touching ``paths``."""
        chosen = [
            f for f in self.files
            if not f.directory or paths is None or any(f.applies_to(p) for p in paths)
        ]
        return "\n\n".join(f"<!-- {f.path} -->\n{f.prose.strip()}" for f in chosen)

    def gates(self) -> list[ResolvedGate]:
        """Every gate; a nested gate with the name of an outer one replaces it in its subtree."""
        resolved: list[ResolvedGate] = []
        for rules_file in self.files:
            for gate in rules_file.block.gate:
                resolved.append(ResolvedGate(spec=gate, source=rules_file.path,
                                             directory=rules_file.directory))
        return resolved

    def gates_for(self, phase: Phase, changed: list[str] | None = None) -> list[ResolvedGate]:
        """Gates that guard ``phase`` for a change touching ``changed`` (None: everything)."""
        out = []
        for gate in self.gates():
            if phase not in gate.spec.phases:
                continue
            if changed is not None and not gate.matches(changed):
                continue
            out.append(gate)
        return out

    def digests(self) -> dict[str, str]:
        return {f.path: f.sha256 for f in self.files}

    @property
    def seams(self) -> list[Seam]:
        return [s for f in self.files for s in f.block.seam]

    @property
    def additive(self) -> list[str]:
        return [p for f in self.files for p in f.block.additive]

    @property
    def runtime(self) -> list[RuntimeProbe]:
        return [p for f in self.files for p in f.block.runtime]

    @property
    def spec(self) -> SpecRules:
        questions: list[str] = []
        sections: list[str] = []
        for f in self.files:
            questions += [q for q in f.block.spec.questions if q not in questions]
            sections += [s for s in f.block.spec.sections if s not in sections]
        return SpecRules(questions=questions, sections=sections)


class ResolvedGate(_Model):
    """A gate with the rules file it came from."""

    spec: GateSpec
    """The gate as declared."""
    source: str
    """The AGENTS.md that declared it."""
    directory: str
    """Directory the command runs in, relative to the repo root; nested gates are scoped to it."""

    @property
    def name(self) -> str:
        return self.spec.name if not self.directory else f"{self.directory}:{self.spec.name}"

    def matches(self, changed: list[str]) -> bool:
        scoped = [p for p in changed if not self.directory
                  or PurePosixPath(p).is_relative_to(self.directory)]
        if self.directory and not scoped:
            return False
        if not self.spec.paths:
            return True
        return any(match_any(p, self.spec.paths) for p in scoped)
