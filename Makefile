# Entry points for users and CI. Every target runs scripts/setup.sh first (a no-op when
# everything is already installed).
SHELL := /bin/bash
PRESET ?= release
export PATH := $(CURDIR)/.venv/bin:$(PATH)
PARITY := build/$(PRESET)/tools/parity/parity
DEMO_MODEL := examples/models/small_cnn.onnx

.PHONY: all setup build build-asan demo test test-unit test-cli test-asan conformance-report bench clean

all: build

setup:
	@bash scripts/setup.sh

build: setup
	@cmake --preset $(PRESET) >/dev/null
	@cmake --build --preset $(PRESET)

build-asan: setup
	@cmake --preset asan >/dev/null
	@cmake --build --preset asan

# Parity's main job on a bundled example.
demo: build
	$(PARITY) inspect model $(DEMO_MODEL) --show layers

test-unit: build
	ctest --preset $(PRESET) -j 2

test-cli: build
	PARITY_BIN=$(CURDIR)/$(PARITY) python -m pytest -q tests/cli

# Unit tests and bad-input CLI tests under AddressSanitizer + UBSan. The kernel fuzz test and
# the conformance suite run in the release stage (test-unit); running them under the sanitizers
# too is the open part of the "Reference runner" issue (not yet verified clean under UBSan).
test-asan: build-asan
	ctest --preset asan -j 2 -E '^(conformance|Fuzz\.)'
	PARITY_BIN=$(CURDIR)/build/asan/tools/parity/parity python -m pytest -q tests/cli/test_bad_input.py

test: test-unit test-asan test-cli

# Regenerates docs/conformance.md from a run of every ONNX backend test case.
conformance-report: build
	build/$(PRESET)/tests/conformance/parity_conformance --report docs/conformance.md

# Speed and memory against the peers (prints ratios; not part of `make test`).
bench: build
	python bench/bench_ref.py --build build/$(PRESET)

clean:
	rm -rf build
