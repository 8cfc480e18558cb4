"""Runs the ```console examples of the docs and checks that each shows what the command prints.

In a block, a line starting with `$ ` is a command (run with bash in one scratch directory, stdout and stderr
together, as a terminal shows them) and the lines after it are what it prints. `$ export NAME=VALUE` sets a variable for
the commands after it. An output of exactly `...` is not compared (the command must still succeed). Times such as
2026-11-25T10:00:00.000Z compare equal to any other time of the same shape, since they are when the example ran, and
so do the days after `--unverifiable-retention` and `--rejected-retention`, which are the trial's age on that day.
Every command must exit 0.

Usage: run_examples.py BINARY_DIR DOC... [--update]   (--update writes what the commands print into the docs)
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile

TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")
AGE = re.compile(r"(--(?:unverifiable|rejected)-retention) \d+")


def undated(line):
    """The line with what depends on the day the example ran (times, a trial's age) made the same."""
    return AGE.sub(r"\1 <days>", TIME.sub("<time>", line))


def blocks(lines):
    """(start, end) line indexes of each ```console block's body."""
    start = None
    for index, line in enumerate(lines):
        if start is None and line.rstrip() == "```console":
            start = index + 1
        elif start is not None and line.rstrip() == "```":
            yield start, index
            start = None


def examples(body):
    """(command, expected output lines) pairs of one block."""
    pairs = []
    for line in body:
        if line.startswith("$ "):
            pairs.append((line[2:].rstrip("\n"), []))
        elif pairs:
            pairs[-1][1].append(line.rstrip("\n"))
        elif line.strip():
            raise SystemExit(f"docs examples: output before any command: {line!r}")
    return pairs


def main():
    arguments = [argument for argument in sys.argv[1:] if argument != "--update"]
    update = "--update" in sys.argv
    binaries, docs = os.path.abspath(arguments[0]), [os.path.abspath(doc) for doc in arguments[1:]]
    checkout = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    scratch = tempfile.mkdtemp(prefix="countersign-docs-")
    os.symlink(os.path.join(checkout, "examples"), os.path.join(scratch, "examples"))
    environment = {key: value for key, value in os.environ.items() if not key.startswith("COUNTERSIGN_")}
    environment["PATH"] = binaries + os.pathsep + environment["PATH"]
    environment["COLUMNS"] = "120"
    failures, count = [], 0
    for doc in docs:
        with open(doc) as file:
            lines = file.readlines()
        rewritten, last = [], 0
        for start, end in blocks(lines):
            rewritten += lines[last:start]
            for command, expected in examples(lines[start:end]):
                count += 1
                rewritten.append(f"$ {command}\n")
                if command.startswith("export "):
                    name, _, value = command[len("export "):].partition("=")
                    environment[name] = shlex.split(value)[0] if value else ""
                    continue
                run = subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=scratch, env=environment,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
                printed = [line.rstrip() for line in run.stdout.replace("\r\n", "\n").rstrip("\n").split("\n")] if run.stdout else []
                if run.returncode != 0:
                    failures.append(f"{os.path.basename(doc)}: `{command}` exited {run.returncode}:\n" + "\n".join(printed))
                if expected == ["..."]:
                    rewritten.append("...\n")
                    continue
                rewritten += [line + "\n" for line in printed]
                if not update and [undated(line) for line in printed] != [undated(line.rstrip()) for line in expected]:
                    failures.append(f"{os.path.basename(doc)}: `{command}` printed\n" + "\n".join(printed) + "\nbut the doc shows\n" + "\n".join(expected))
            last = end
        rewritten += lines[last:]
        if update:
            with open(doc, "w") as file:
                file.writelines(rewritten)
    for failure in failures:
        print(failure + "\n", file=sys.stderr)
    if failures:
        print(f"docs examples: {len(failures)} of {count} commands differ from the docs (scripts/docs-examples-test --update rewrites them)", file=sys.stderr)
        sys.exit(1)
    pages = ", ".join(os.path.relpath(doc, checkout) for doc in docs)
    print(f"docs examples: {count} commands " + (f"wrote what they print into {pages}" if update else f"printed what {pages} shows"))


if __name__ == "__main__":
    main()
