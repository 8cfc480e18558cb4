"""Splits the Swift test suites into shards of about equal time, for scripts/swift-tests.

    python3 shard-suites.py SHARDS TESTS WEIGHTS...

TESTS lists the test ids (`Module.Suite/test()`, one a line, as `--list-tests` prints them). Each WEIGHTS file has
lines `Suite seconds`; a later file overrides an earlier one, and a suite in none weighs a second a test. Prints one
line per shard: the `Module.Suite` ids it runs, heaviest first (the longest-processing-time rule).
"""
import os
import sys

shards = int(sys.argv[1])
tests = [line.strip() for line in open(sys.argv[2]) if "/" in line]
weights = {}
for path in sys.argv[3:]:
    if os.path.exists(path):
        for line in open(path):
            parts = line.split()
            if len(parts) == 2:
                weights[parts[0]] = float(parts[1])
counts = {}
for test in tests:
    suite = test.split("/", 1)[0]
    counts[suite] = counts.get(suite, 0) + 1
suites = sorted(counts, key=lambda suite: (-weights.get(suite.split(".", 1)[1], float(counts[suite])), suite))
loads = [[0.0, []] for _ in range(shards)]
for suite in suites:
    lightest = min(loads, key=lambda load: load[0])
    lightest[0] += weights.get(suite.split(".", 1)[1], float(counts[suite]))
    lightest[1].append(suite)
for load in loads:
    if load[1]:
        print(" ".join(load[1]))
