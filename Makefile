SHELL := /bin/bash
# Countersign: `make run` and `make test` do all set-up on a fresh Debian machine.
SWIFT ?= swift
HOST ?= 127.0.0.1
PORT ?= 8080
FUZZ_SECONDS ?= 10

.PHONY: run test build release deps test-deps clean

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

# A short fuzz run of every parser target first (about a minute), the dashboard in headless Chromium (scripts/browser-test,
# about 15 s; screenshots in .build/dashboard-screenshots), docs/quickstart.md run as written (scripts/quickstart-test),
# docs/cli.md's examples checked against what the commands print (scripts/docs-examples-test),
# docs/openapi.yaml held against a live server by schemathesis (scripts/contract-test, about 30 s),
# then the Swift tests on both engines, with a throw-away
# PostgreSQL server (scripts/with-postgres); the Swift Testing summary stays the last line printed (CI reads it).
# The tests take about two minutes; a run still going after TEST_TIMEOUT seconds has hung and fails (exit 124).
TEST_TIMEOUT ?= 1800
test: test-deps
	$(SWIFT) build --build-tests
	scripts/fuzz $(FUZZ_SECONDS)
	node --test Tests/Dashboard
	timeout -k 10 600 scripts/browser-test
	timeout -k 10 600 scripts/quickstart-test
	timeout -k 10 600 scripts/docs-examples-test
	timeout -k 10 600 scripts/contract-test
	timeout -k 30 $(TEST_TIMEOUT) scripts/with-postgres $(SWIFT) test --skip-build --no-parallel 2>&1 | tee .build/test.log; exit $${PIPESTATUS[0]}

clean:
	rm -rf .build .build-fuzz
