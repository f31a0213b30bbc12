"""What sort of file a path is: source, tests, or one of the kinds a port does not carry.

Only ``source`` and ``tests`` files carry behaviour a port must follow. Everything else an
upstream keeps beside its code — build and packaging files, generated bundles, CI, lint and
editor configs, dotfiles, benchmarks, demo pages and their styles, type stubs, docs — is
*not applicable* by default. The defaults know the usual tooling of each ecosystem
(:data:`ECOSYSTEMS`); ``[upstream.path_kinds]`` in ``portwright.toml`` overrides them kind by
kind:

- a kind you set replaces that kind's default patterns; every kind you do not set keeps its
  defaults (a partial table never drops the defaults);
- your kinds are checked first, in your order, then the defaults in :data:`ORDER`;
- ``source`` is a kind too: ``source = ["support/**"]`` claims paths that a default would call
  tooling.

Public API:

- ``default_path_kinds() -> dict[str, list[str]]`` — the defaults, in precedence order
- ``merge_path_kinds(overrides: Mapping[str, list[str]]) -> dict[str, list[str]]``
- ``classify(path: str, path_kinds: Mapping[str, list[str]]) -> str`` — the first kind with a
  matching glob, else ``source``
- ``CARRIED`` — the kinds whose changes a port carries (``source``, ``tests``)
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache

from portwright import globs

CARRIED = frozenset({"source", "tests"})
"""Kinds whose changes a port must follow."""

ORDER = ("dist", "ci", "tooling", "build", "types", "tests", "bench", "demo", "docs", "config")
"""Precedence of the default kinds: generated and tooling files before tests (a
``test/package.json`` is packaging), tests before docs and data formats (a
``test/fixtures/spec.txt`` is a test)."""

ECOSYSTEMS: dict[str, dict[str, list[str]]] = {
    "any": {
        "dist": ["dist/**"],
        "ci": [".github/**", ".gitlab-ci.yml", ".gitlab/**", ".travis.yml", ".circleci/**",
               "appveyor.yml", ".appveyor.yml", "azure-pipelines.yml", ".buildkite/**",
               "Jenkinsfile", ".drone.yml", "codecov.yml", ".codecov.yml",
               ".pre-commit-config.yaml", ".readthedocs.y*ml", "renovate.json"],
        "tooling": ["**/.*", "**/.*/**", "scripts/**", "script/**", "support/**",
                    "**/Vagrantfile"],
        "build": ["**/Dockerfile", "**/Dockerfile.*", "**/*.dockerfile", "**/docker-compose*.y*ml",
                  "**/*.nix", "**/flake.lock"],
        "tests": ["test/**", "tests/**", "testing/**", "**/__tests__/**", "**/fixtures/**",
                  "**/testdata/**", "**/test_*.*", "**/*_test.*", "**/*.test.*", "**/*.spec.*",
                  "**/*_tests.*"],
        "bench": ["bench/**", "benches/**", "benchmark/**", "benchmarks/**", "perf/**",
                  "**/bench_*.*", "**/*_bench.*", "**/*.bench.*", "**/benchmark_*.*"],
        "demo": ["demo/**", "demos/**", "example/**", "examples/**", "playground/**",
                 "site/**", "website/**", "**/*.css", "**/*.scss", "**/*.sass", "**/*.less",
                 "**/*.styl", "**/*.html", "**/*.htm", "**/*.svg", "**/*.png", "**/*.jpg",
                 "**/*.gif", "**/*.ico"],
        "docs": ["docs/**", "doc/**", "man/**", "**/*.md", "**/*.markdown", "**/*.rst",
                 "**/*.adoc", "**/*.txt", "**/LICENSE*", "**/LICENCE*", "**/COPYING*",
                 "**/AUTHORS*", "**/CONTRIBUTORS*", "**/CHANGELOG*", "**/changelog*",
                 "**/HISTORY*", "**/NEWS*", "**/CODEOWNERS", "**/NOTICE*"],
        "config": ["**/*.json", "**/*.yaml", "**/*.yml", "**/*.toml", "**/*.cfg", "**/*.ini",
                   "**/*.lock"],
    },
    "js": {
        "dist": ["**/*.min.js", "**/*.min.css", "**/*.map"],
        "tooling": ["eslint.json", "**/eslint.config.*", "**/prettier.config.*",
                    "**/typedoc.json", "**/jest.config.*", "**/karma.conf.*",
                    "**/vitest.config.*", "**/mocha.opts", "**/tslint.json"],
        "build": ["**/package.json", "**/package-lock.json", "**/npm-shrinkwrap.json",
                  "**/yarn.lock", "**/pnpm-lock.yaml", "**/bower.json", "**/rollup.config.*",
                  "**/webpack.config.*", "**/vite.config.*", "**/babel.config.*",
                  "**/tsconfig*.json", "**/jsconfig.json", "**/gulpfile.*", "**/Gruntfile.*",
                  "**/deno.json", "**/deno.lock"],
        "types": ["**/*.d.ts", "**/*.d.mts", "**/*.d.cts"],
        "demo": ["**/*.pug", "**/*.jade", "**/*.vue", "**/*.svelte",
                 "**/dingus/**"],  # CommonMark implementations call their demo page a dingus
    },
    "python": {
        "ci": ["tox.ini", "noxfile.py"],
        "tooling": ["**/mypy.ini", "**/pytest.ini", "**/ruff.toml", "**/pylintrc"],
        "tests": ["**/conftest.py"],
        "build": ["**/setup.py", "**/setup.cfg", "**/pyproject.toml", "**/requirements*.txt",
                  "**/requirements/**", "**/MANIFEST.in", "**/Pipfile", "**/Pipfile.lock",
                  "**/poetry.lock", "**/uv.lock", "**/environment*.yml"],
        "types": ["**/*.pyi", "**/py.typed"],
        "demo": ["**/*.ipynb"],
    },
    "cpp": {
        "tooling": ["**/CPPLINT.cfg", "**/compile_flags.txt", "**/Doxyfile"],
        "build": ["**/Makefile", "**/makefile", "**/GNUmakefile", "**/*.mk", "**/CMakeLists.txt",
                  "**/*.cmake", "**/CMakePresets.json", "**/meson.build", "**/meson_options.txt",
                  "**/BUILD", "**/BUILD.bazel", "**/WORKSPACE", "**/WORKSPACE.bazel",
                  "**/MODULE.bazel", "**/*.bzl", "**/SConstruct", "**/SConscript",
                  "**/configure.ac", "**/configure", "**/*.vcxproj", "**/*.sln",
                  "**/vcpkg.json", "**/conanfile.*", "**/*.pc.in"],
    },
    "cuda": {
        "build": ["**/*.cu.cmake"],
    },
    "rust": {
        "tooling": ["**/rustfmt.toml", "**/clippy.toml", "**/rust-toolchain*", "**/deny.toml"],
        "build": ["**/Cargo.toml", "**/Cargo.lock", "**/build.rs"],
    },
}
"""Default patterns per ecosystem and kind (merged in :func:`default_path_kinds`)."""


def default_path_kinds() -> dict[str, list[str]]:
    """Every ecosystem's defaults merged, kinds in :data:`ORDER`."""
    out: dict[str, list[str]] = {kind: [] for kind in ORDER}
    for table in ECOSYSTEMS.values():
        for kind, patterns in table.items():
            out[kind].extend(p for p in patterns if p not in out[kind])
    return out


def merge_path_kinds(overrides: Mapping[str, list[str]]) -> dict[str, list[str]]:
    """``overrides`` first (each replaces that kind's defaults), then the remaining defaults."""
    merged = {kind: list(patterns) for kind, patterns in overrides.items()}
    for kind, patterns in default_path_kinds().items():
        merged.setdefault(kind, patterns)
    return merged


_BASENAME = re.compile(r"\*\*/([^*?/\[]+)")
_SUFFIX = re.compile(r"\*\*/\*([^*?/\[]+)")
_PREFIX = re.compile(r"\*\*/([^*?/\[]+)\*")


@dataclass(frozen=True)
class _KindMatcher:
    """The globs of one kind: ``**/name``, ``**/*suffix`` and ``**/prefix*`` (most of the
    defaults) compared on the file name, the rest as one regular expression. Compiling every
    default glob into a regular expression cost more than classifying a whole tree."""

    names: frozenset[str]
    suffixes: tuple[str, ...]
    prefixes: tuple[str, ...]
    regex: re.Pattern[str] | None

    def match(self, path: str) -> bool:
        folder, _, name = path.rpartition("/")
        # ``**/`` is ``(?:.*/)?``: any folders, but no newline in them
        if "\n" not in folder and (name in self.names or name.endswith(self.suffixes)
                                   or name.startswith(self.prefixes)):
            return True
        return self.regex is not None and self.regex.match(path) is not None


@lru_cache(maxsize=256)
def _compiled(patterns: tuple[str, ...]) -> _KindMatcher:
    names: set[str] = set()
    suffixes: list[str] = []
    prefixes: list[str] = []
    rest: list[str] = []
    for pattern in patterns:
        if found := _BASENAME.fullmatch(pattern):
            names.add(found[1])
        elif found := _SUFFIX.fullmatch(pattern):
            suffixes.append(found[1])
        elif found := _PREFIX.fullmatch(pattern):
            prefixes.append(found[1])
        else:
            rest.append(pattern)
    sources = [globs.translate(p) for p in rest]
    regex = re.compile("|".join(f"(?:{s})" for s in sources)) if sources else None
    return _KindMatcher(frozenset(names), tuple(suffixes), tuple(prefixes), regex)


def _kind_matchers(path_kinds: Mapping[str, Iterable[str]]) -> list[tuple[str, _KindMatcher]]:
    return [(kind, _compiled(tuple(patterns))) for kind, patterns in path_kinds.items()]


def classify(path: str, path_kinds: Mapping[str, list[str]]) -> str:
    """The kind of ``path``: the first ``path_kinds`` entry with a matching glob, else
    ``source``."""
    for kind, matcher in _kind_matchers(path_kinds):
        if matcher.match(path):
            return kind
    return "source"
