# The few commands people type (`make help` lists them). `make demo` and
# `make test` each set themselves up from a fresh clone: virtualenv, the dev
# dependencies pinned in requirements-dev.lock, native build, install.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
DEPS_STAMP := $(VENV)/.deps-installed
NATIVE := python/prism/_native.abi3.so
LOCK := requirements-dev.lock
RUST_SOURCES := $(shell find rust -name '*.rs' -o -name Cargo.toml) Cargo.toml Cargo.lock
PY_TREES := python tests benches examples scripts tools
PYTEST_ARGS ?=
# pytest-xdist workers for `make test-python`: PYTEST_WORKERS=2 runs each
# test file (or xdist_group, see tests/conftest.py) whole on one of two
# workers (the default: CI has two cores); 0 runs serially.
# docs/performance.md ("CI time") has the whole-suite runs behind it.
PYTEST_WORKERS ?= 2

.PHONY: help install demo test test-rust test-python lint format cov lock exports bench docs dist check-dist clean
.DEFAULT_GOAL := help

help: ## List the targets and what each does
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# Dev dependencies (maturin included) come from the committed lock, every
# file checked against its hash, so two fresh clones test the same set; the
# package itself is an editable maturin install so Python edits need no rebuild.
$(DEPS_STAMP): $(LOCK) | $(PY)
	$(PY) -m pip install -q --require-hashes -r $(LOCK)
	touch $@

# Re-resolves the lock from pyproject.toml (runtime deps + the `dev` extra),
# for every platform, keeping the pins already in it; `make lock UPGRADE=1`
# moves every pin to the newest allowed version.
lock: | $(PY) ## Re-pin the dev dependencies (requirements-dev.lock) from pyproject.toml
	$(PY) -m pip install -q 'uv>=0.5'
	$(PY) -m uv pip compile pyproject.toml --extra dev --generate-hashes --universal \
		--python-version 3.11 $(if $(UPGRADE),--upgrade) --quiet -o $(LOCK)

# Thin-LTO release profile for the dev loop (fat LTO is for `make dist`).
$(NATIVE): $(RUST_SOURCES) $(DEPS_STAMP)
	VIRTUAL_ENV=$(abspath $(VENV)) PATH=$(abspath $(BIN)):$$PATH $(BIN)/maturin develop --release
	test -f $(NATIVE) && touch $(NATIVE)

install: $(NATIVE) ## Virtualenv, locked dev deps, native build, editable install

demo: install ## Run the demo agent (mock provider)
	$(PY) examples/demo.py

# The whole workspace; `cargo test -p prism-core` alone needs no libpython.
test-rust: ## cargo test the whole Rust workspace
	cargo test --workspace --release --quiet

test-python: install ## pytest (PYTEST_ARGS="tests/security -x" narrows it, PYTEST_WORKERS=0 runs it serially)
	$(PY) -m pytest $(if $(filter-out 0,$(PYTEST_WORKERS)),-n $(PYTEST_WORKERS) --dist loadgroup) $(PYTEST_ARGS)

# Line and branch coverage of python/prism; the HTML report lands in htmlcov/.
cov: install ## pytest under coverage: a terminal report and htmlcov/
	$(PY) -m pytest --cov=prism --cov-branch --cov-report=term-missing:skip-covered \
		--cov-report=html $(PYTEST_ARGS)

# Rust: formatting, and clippy with every warning an error (this includes
# `undocumented_unsafe_blocks`: each `unsafe` block says why it is sound).
lint: install ## cargo fmt/clippy, ruff, mypy --strict, stubtest
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings
	$(BIN)/ruff check $(PY_TREES)
	$(BIN)/ruff format --check $(PY_TREES)
	$(BIN)/mypy
	$(PY) -m mypy.stubtest prism._native --allowlist .stubtest-allowlist

# Each lazy package's TYPE_CHECKING block and __all__ are written from its
# _EXPORTS table (the one list kept by hand); a test fails when one is stale.
exports: ## Regenerate the lazy packages' TYPE_CHECKING imports and __all__ from _EXPORTS
	$(PYTHON) scripts/exports.py

# Rewrites files: ruff's safe fixes (import order, modern syntax) and formatting, and cargo fmt.
format: $(DEPS_STAMP) ## Format Python (ruff) and Rust (cargo fmt) in place
	$(BIN)/ruff check --fix --quiet $(PY_TREES)
	$(BIN)/ruff format $(PY_TREES)
	cargo fmt --all

test: test-rust test-python lint ## Everything CI runs: Rust tests, pytest, lint

bench: install ## The pytest-benchmark suites (installs the bench extra)
	$(PY) -c 'import tomllib,subprocess,sys; p=tomllib.load(open("pyproject.toml","rb"))["project"]; subprocess.check_call([sys.executable,"-m","pip","install","-q",*p["optional-dependencies"]["bench"]])'
	$(PY) -m pytest benches --benchmark-only -p no:cacheprovider -o testpaths=benches

# The documentation site (mkdocs.yml): docs/*.md, the README as home page,
# the API reference from docstrings; strict, so a dead link or a reference
# that does not resolve fails. site/ is what a maintainer publishes.
docs: $(DEPS_STAMP) ## Build the documentation site (strict) into site/
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

# The distributable: an abi3 wheel tagged manylinux2014 (glibc 2.17), linked
# by zig (the ziglang package, a dev dependency) so no container is needed,
# with the fat-LTO `dist` profile; plus an sdist that builds with cargo.
dist: $(DEPS_STAMP) ## manylinux2014 abi3 wheel and sdist into dist/
	rm -rf dist
	PATH=$(abspath $(BIN)):$$PATH $(BIN)/maturin build --profile dist --zig \
		--compatibility manylinux2014 --target x86_64-unknown-linux-gnu --out dist
	$(BIN)/maturin sdist --out dist

# Installs what `make dist` built the way a user would (fresh virtualenvs, no
# Rust toolchain on PATH for the wheel) and runs the smoke checks, every
# `prism init` template's own tests, an sdist build, and twine check.
check-dist: dist ## Install what `make dist` built as a user would, and smoke-test it
	PYTHON=$(PYTHON) bash .ci/check-dist

clean: ## Remove the virtualenv, build outputs and the native module
	rm -rf $(VENV) target dist site $(NATIVE)
