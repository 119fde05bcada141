# Entry points for users and CI. Every target runs scripts/setup.sh first (a no-op when
# everything is already installed).
SHELL := /bin/bash
PRESET ?= release
export PATH := $(CURDIR)/.venv/bin:$(PATH)
PARITY := build/$(PRESET)/tools/parity/parity
DEMO_MODEL := examples/models/small_cnn.onnx
# Worker processes for the pytest suites (pytest-xdist): most cases wait on a tool they started,
# so two workers keep both cores busy. PYTEST_WORKERS=0 runs them in one process.
PYTEST_WORKERS ?= 2
PYTEST := python -m pytest -q -n $(PYTEST_WORKERS)

.PHONY: all setup build build-cli build-asan demo test test-unit test-cli test-peers test-python test-asan conformance-report bench clean

all: build

setup:
	@bash scripts/setup.sh

build: setup
	@cmake --preset $(PRESET) >/dev/null
	@cmake --build --preset $(PRESET)

# Only what `parity` itself runs: the CLI and the OpenVINO module it loads at activation (not the
# unit tests, benchmarks, conformance runner, peers' tools or the Python extension).
build-cli: setup
	@cmake --preset $(PRESET) >/dev/null
	@cmake --build --preset $(PRESET) --target parity

build-asan: setup
	@cmake --preset asan >/dev/null
	@cmake --build --preset asan

# Parity's main job on a bundled example.
demo: build-cli
	$(PARITY) run $(DEMO_MODEL) --ref --onnxrt

test-unit: build
	ctest --preset $(PRESET) -j 2

test-cli: build
	PARITY_BIN=$(CURDIR)/$(PARITY) $(PYTEST) tests/cli

# Everything ctest runs (unit tests, the kernel fuzz test, the ONNX conformance suite, the fuzzer's
# kept cases) and the bad-input CLI tests again under AddressSanitizer + UBSan (any report fails
# the run), then the structured fuzzer for FUZZ_ITERATIONS cases of its fixed seed (docs/fuzzing.md;
# a count, not a time, so every machine runs the same cases; a finding's case is written to
# build/asan/fuzz-findings).
FUZZ_ITERATIONS ?= 20000
test-asan: build-asan
	ctest --preset asan -j 2
	ASAN_OPTIONS=fast_unwind_on_malloc=0 \
	LSAN_OPTIONS=suppressions=$(CURDIR)/tests/sanitizers/lsan.supp:print_suppressions=0 \
	PARITY_BIN=$(CURDIR)/build/asan/tools/parity/parity python -m pytest -q -rs tests/cli/test_bad_input*.py
	ASAN_OPTIONS=allocator_may_return_null=1 UBSAN_OPTIONS=abort_on_error=1 build/asan/tests/fuzz/parity_fuzz --iterations $(FUZZ_ITERATIONS) --case-timeout 30 \
	  --known tests/fuzz/known_findings.txt --findings build/asan/fuzz-findings

# Checks against the peers (the onnxruntime and polygraphy Python packages) on the same inputs.
test-peers: build
	PARITY_BIN=$(CURDIR)/$(PARITY) \
	PARITY_RUN_BACKEND=$(CURDIR)/build/$(PRESET)/tests/peers/parity_run_backend \
	PARITY_COMPARE_TOOL=$(CURDIR)/build/$(PRESET)/tests/peers/parity_compare_tool \
	  $(PYTEST) tests/peers

# The Python package (import parity) from this build, against polygraphy where both have the API.
test-python: build
	PYTHONPATH=$(CURDIR)/build/$(PRESET)/python $(PYTEST) tests/python

test: test-unit test-asan test-cli test-peers test-python

# Regenerates docs/conformance.md from a run of every ONNX backend test case.
conformance-report: build
	build/$(PRESET)/tests/conformance/parity_conformance --report docs/conformance.md

# Speed and memory against the peers (prints ratios; not part of `make test`).
bench: build
	python bench/bench_ref.py --build build/$(PRESET)

clean:
	rm -rf build
