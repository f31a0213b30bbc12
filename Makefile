# The two commands a new machine needs: `make demo` and `make test`.
.PHONY: demo test setup engine lint clean-demo

setup:
	@bash scripts/bootstrap.sh

engine:
	@bash scripts/bootstrap.sh --engine

demo:
	@bash scripts/bootstrap.sh --engine
	@.venv/bin/python examples/demo.py

test:
	@bash scripts/bootstrap.sh --engine
	@bash scripts/github-openapi.sh
	@.venv/bin/python -m pytest -n auto --maxprocesses 4 --dist loadgroup

lint: setup
	@.venv/bin/ruff check portwright tests benchmarks examples
	@.venv/bin/mypy
