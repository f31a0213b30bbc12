#!/usr/bin/env bash
# Set up portwright on this machine: a virtual environment with the package and its
# test tools, and (with --engine) a running Docker engine and the offline base image.
# Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."

want_engine=0
for arg in "$@"; do
  case "$arg" in
    --engine) want_engine=1 ;;
    *) echo "usage: $0 [--engine]" >&2; exit 2 ;;
  esac
done

python=${PYTHON:-python3}
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "portwright needs Python >= 3.11 (found: $("$python" --version 2>&1))." >&2
  echo "fix: install python3.11 or newer, or set PYTHON=/path/to/python3.11" >&2
  exit 1
fi

if [ ! -x .venv/bin/python ]; then
  echo "› creating .venv"
  "$python" -m venv .venv
fi

stamp=.venv/.portwright-installed
want=$(cat pyproject.toml | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]; then
  echo "› installing portwright and its test tools into .venv"
  .venv/bin/python -m pip install --quiet --upgrade pip
  PYTHONWARNINGS=ignore .venv/bin/python -m pip install --quiet -e ".[dev,web]"
  echo "$want" > "$stamp"
fi

if [ "$want_engine" = 1 ]; then
  bash scripts/engine.sh
fi
