SHELL := /bin/bash
# Countersign: `make run` and `make test` do all set-up on a fresh Debian machine.
SWIFT ?= swift
HOST ?= 127.0.0.1
PORT ?= 8080
FUZZ_SECONDS ?= 600

.PHONY: run test fuzz build release deps test-deps clean

# What serving needs (OpenSSL, SQLite, Chart.js); the Swift toolchain (6.2 or later) must already be on PATH.
deps:
	@scripts/install-deps

# What only the tests need besides: PostgreSQL, Chromium and its driver, node, sqlite3's shell.
test-deps:
	@scripts/install-deps --test

build: deps
	$(SWIFT) build --product countersign

release: deps
	$(SWIFT) build -c release --product countersign

run: build
	$(SWIFT) run countersign serve --host $(HOST) --port $(PORT)

# Every check, stage by stage (scripts/test says what each runs): the build, then at once the Swift tests on both
# engines in shards against a throw-away PostgreSQL server, the parsers' fuzz corpora and a few seconds of fuzzing per
# target, the dashboard in headless Chromium (screenshots in .build/dashboard-screenshots), docs/quickstart.md and
# docs/cli.md run as written, and docs/openapi.yaml held against a live server. It prints each stage's time; the last
# line is Swift Testing's closing line for the whole run (CI reads it). Here: 3-4 minutes built, 9 from a fresh clone
# (docs/performance.md; the machine's speed drifts by more than twice between days).
test: test-deps
	SWIFT=$(SWIFT) scripts/test

# The long fuzz run: every parser target for FUZZ_SECONDS (default 600) each.
fuzz: build
	scripts/fuzz $(FUZZ_SECONDS)

clean:
	rm -rf .build .build-fuzz
