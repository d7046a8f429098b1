# The few commands people type. `make demo` and `make test` each set
# themselves up from a fresh clone: virtualenv, native build, install.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
DEPS_STAMP := $(VENV)/.deps-installed
NATIVE := python/prism/_native.abi3.so
RUST_SOURCES := $(shell find rust -name '*.rs' -o -name Cargo.toml) Cargo.toml Cargo.lock

.PHONY: install demo test test-rust test-python lint bench dist check-dist clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# Dev dependencies are installed once; the package itself is an editable
# maturin install so Python edits need no rebuild.
$(DEPS_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install -q 'maturin>=1.9,<2'
	$(PY) -c 'import tomllib,subprocess,sys; p=tomllib.load(open("pyproject.toml","rb"))["project"]; subprocess.check_call([sys.executable,"-m","pip","install","-q",*p["dependencies"],*p["optional-dependencies"]["dev"]])'
	touch $@

# Thin-LTO release profile for the dev loop (fat LTO is for `make dist`).
$(NATIVE): $(RUST_SOURCES) $(DEPS_STAMP)
	VIRTUAL_ENV=$(abspath $(VENV)) PATH=$(abspath $(BIN)):$$PATH $(BIN)/maturin develop --release
	test -f $(NATIVE) && touch $(NATIVE)

install: $(NATIVE)

demo: install
	$(PY) examples/demo.py

# The whole workspace; `cargo test -p prism-core` alone needs no libpython.
test-rust:
	cargo test --workspace --release --quiet

test-python: install
	$(PY) -m pytest

# Rust: formatting, and clippy with every warning an error (this includes
# `undocumented_unsafe_blocks`: each `unsafe` block says why it is sound).
lint: install
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings
	$(BIN)/ruff check python tests benches examples
	$(BIN)/ruff format --check python tests benches examples
	$(BIN)/mypy
	$(PY) -m mypy.stubtest prism._native --allowlist .stubtest-allowlist

test: test-rust test-python lint

bench: install
	$(PY) -c 'import tomllib,subprocess,sys; p=tomllib.load(open("pyproject.toml","rb"))["project"]; subprocess.check_call([sys.executable,"-m","pip","install","-q",*p["optional-dependencies"]["bench"]])'
	$(PY) -m pytest benches --benchmark-only -p no:cacheprovider -o testpaths=benches

# The distributable: an abi3 wheel tagged manylinux2014 (glibc 2.17), linked
# by zig (the ziglang package, a dev dependency) so no container is needed,
# with the fat-LTO `dist` profile; plus an sdist that builds with cargo.
dist: $(DEPS_STAMP)
	rm -rf dist
	PATH=$(abspath $(BIN)):$$PATH $(BIN)/maturin build --profile dist --zig \
		--compatibility manylinux2014 --target x86_64-unknown-linux-gnu --out dist
	$(BIN)/maturin sdist --out dist

# Installs what `make dist` built the way a user would (fresh virtualenvs, no
# Rust toolchain on PATH for the wheel) and runs the smoke checks, every
# `prism init` template's own tests, an sdist build, and twine check.
check-dist: dist
	PYTHON=$(PYTHON) bash .ci/check-dist

clean:
	rm -rf $(VENV) target dist $(NATIVE)
