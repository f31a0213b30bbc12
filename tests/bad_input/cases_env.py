"""Bad input in PORTWRIGHT_* environment variables: the message names the variable."""

from __future__ import annotations

from tests.bad_input.harness import Case


def env(case_id: str, argv: tuple[str, ...], name: str, value: str, *,
        expect: int = 2, says: tuple[str, ...] | None = None) -> Case:
    return Case(case_id, argv, env={name: value}, expect=expect,
                says=(name,) if says is None else says)


INFO = ("sandbox", "info")
SPEC = ("gates", "run", "--phase", "spec")

CASES = [
    env("env-unknown-section", ("rows",), "PORTWRIGHT_SNADBOX__MEMORY", "4g"),
    env("env-unknown-name", ("rows",), "PORTWRIGHT_VERBOSE", "1"),
    env("env-unknown-key", INFO, "PORTWRIGHT_SANDBOX__MEMROY", "4g"),
    env("env-prefix-only", ("rows",), "PORTWRIGHT_", "x"),
    env("env-empty-part", INFO, "PORTWRIGHT_SANDBOX____MEMORY", "4g"),
    env("env-memory-banana", INFO, "PORTWRIGHT_SANDBOX__MEMORY", "banana"),
    env("env-timeout-inf", INFO, "PORTWRIGHT_SANDBOX__TIMEOUT", "inf"),
    env("env-timeout-zero", INFO, "PORTWRIGHT_SANDBOX__TIMEOUT", "0"),
    env("env-timeout-nan", INFO, "PORTWRIGHT_SANDBOX__TIMEOUT", "nan"),
    env("env-section-scalar", INFO, "PORTWRIGHT_SANDBOX", "4g"),
    env("env-source-empty", ("gap",), "PORTWRIGHT_UPSTREAM__SOURCE", ""),
    env("env-source-missing", ("gap",), "PORTWRIGHT_UPSTREAM__SOURCE", "../nowhere"),
    env("env-source-dot", ("gap",), "PORTWRIGHT_UPSTREAM__SOURCE", "."),
    env("env-pin-store", ("rows",), "PORTWRIGHT_PIN__STORE", "json"),
    env("env-budget-nan", ("model", "check", "--offline"), "PORTWRIGHT_MODEL__BUDGET__COST_USD",
        "nan"),
    env("env-state-root", SPEC, "PORTWRIGHT_STATE_DIR", "/"),
    env("env-state-relative", SPEC, "PORTWRIGHT_STATE_DIR", "state"),
    env("env-state-empty", SPEC, "PORTWRIGHT_STATE_DIR", ""),
    env("env-state-in-repo", SPEC, "PORTWRIGHT_STATE_DIR", "{down}/.state"),
    env("env-key-relative", SPEC, "PORTWRIGHT_EVIDENCE_KEY", "evidence.key"),
    env("env-key-in-repo", SPEC, "PORTWRIGHT_EVIDENCE_KEY", "{down}/keys/evidence.key"),
    # what portwright reads itself, and valid overrides, are accepted
    env("env-ok-model-name", ("model", "check", "--offline"), "PORTWRIGHT_MODEL__NAME", "qwen3",
        expect=0, says=("qwen3",)),
    env("env-ok-sandbox-env", INFO, "PORTWRIGHT_SANDBOX__ENV__FOO", "bar", expect=0, says=()),
    env("env-ok-test-var", ("rows",), "PORTWRIGHT_TEST_ANYTHING", "1", expect=0, says=()),
    env("env-ok-home", ("rows",), "PORTWRIGHT_HOME", "/tmp", expect=0, says=()),
    env("env-ok-require-engine", ("rows",), "PORTWRIGHT_REQUIRE_ENGINE", "1", expect=0, says=()),
    # the clones of real repositories the benchmarks read (README: `export` it in a shell)
    env("env-ok-real-repos", ("rows",), "PORTWRIGHT_REAL_REPOS", "/srv/real", expect=0, says=()),
]
