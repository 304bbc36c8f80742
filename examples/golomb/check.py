#!/usr/bin/env python3
"""The checker for the Golomb ruler example.

Usage:  check.py INSTANCE SOLUTION

INSTANCE is golomb's instance file (the number of marks n; `known` lines and `#` comments
are ignored). SOLUTION is what grind hands a checker: the solver's `v` lines exactly as
printed, e.g. `v 0 1 4 9 11`. The marks must be n integers, starting at 0, strictly
increasing, with all pairwise differences distinct. For checking by hand, SOLUTION may also
be golomb's whole output: then the model is the `v` lines after the last `o` line, and that
`o` value must equal the ruler's length. `c` and `s` lines are ignored.

Exit codes (grind's checker convention):
  0   valid: the length on the first line of stdout (the score; lower is better)
  43  invalid solution: the reason on stdout
  2   the checker could not do its job (unreadable files, bad instance)
"""

import sys

EXIT_INVALID = 43
EXIT_CHECKER_FAILED = 2


def invalid(reason):
    print(f"invalid: {reason}")
    sys.exit(EXIT_INVALID)


def failed(reason):
    print(f"check.py: {reason}", file=sys.stderr)
    sys.exit(EXIT_CHECKER_FAILED)


def read_marks_count(path):
    try:
        with open(path, encoding="utf-8") as f:
            for raw in f:
                words = raw.split("#", 1)[0].split()
                if len(words) == 1:
                    return int(words[0])
    except (OSError, UnicodeDecodeError, ValueError) as e:
        failed(f"cannot read instance {path}: {e}")
    failed(f"instance {path} gives no number of marks")


def read_model(path):
    """Returns (mark texts, claimed length or None)."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except UnicodeDecodeError:
        invalid("the solution is not UTF-8 text")
    except OSError as e:
        failed(f"cannot read solution {path}: {e}")
    marks, claimed = [], None
    for number, line in enumerate(lines, 1):
        words = line.split()
        if not words or words[0] in ("c", "s"):
            continue
        if words[0] == "o":
            if len(words) != 2 or not words[1].lstrip("-").isdigit():
                invalid(f"line {number}: `o` needs an integer length, got {line!r}")
            claimed, marks = int(words[1]), []
        elif words[0] == "v":
            marks.extend(words[1:])
        else:
            invalid(f"line {number}: expected a `v` line, got {line[:60]!r}")
    return marks, claimed


def main():
    if len(sys.argv) != 3:
        failed("usage: check.py INSTANCE SOLUTION")
    n = read_marks_count(sys.argv[1])
    texts, claimed = read_model(sys.argv[2])
    if not texts:
        invalid("no marks (no `v` line)")
    if not all(t.isdigit() for t in texts):
        invalid(f"marks must be non-negative integers, got {' '.join(texts)[:80]!r}")
    marks = [int(t) for t in texts]
    if len(marks) != n:
        invalid(f"{len(marks)} marks, the instance needs {n}")
    if marks[0] != 0:
        invalid(f"the first mark is {marks[0]}, not 0")
    for a, b in zip(marks, marks[1:]):
        if b <= a:
            invalid(f"marks not strictly increasing: {a} then {b}")
    seen = {}
    for j, b in enumerate(marks):
        for a in marks[:j]:
            if b - a in seen:
                c, d = seen[b - a]
                invalid(f"difference {b - a} occurs twice: {d} - {c} and {b} - {a}")
            seen[b - a] = (a, b)
    length = marks[-1]
    if claimed is not None and claimed != length:
        invalid(f"claimed length {claimed}, but the ruler has length {length}")
    print(length)
    print(f"Golomb ruler with {n} marks, length {length}")


if __name__ == "__main__":
    main()
