#!/usr/bin/env python3
"""The checker for the LABS example: recomputes a sequence's energy from scratch.

Usage:  check.py INSTANCE SOLUTION

INSTANCE is the solver's instance file (N; `target` lines and `#` comments are ignored).
SOLUTION is what grind hands a checker: the solver's `v` lines exactly as printed, e.g.

    v 0000011001010

Several `v` lines are joined; spaces inside them are ignored; each symbol is `1` or `+`
(+1) or `0` or `-` (-1). For checking by hand, SOLUTION may also be a solver's whole output:
then the model is the `v` lines after the last `o` line, and that `o` value must equal the
recomputed energy. `c` and `s` lines are ignored.

Exit codes (grind's checker convention):
  0   valid: the energy on the first line of stdout (the score; lower is better)
  43  invalid solution: the reason on stdout
  2   the checker could not do its job (unreadable files, bad instance): not the solver's
      fault (any exit code other than 0 and 43 means "checker failed" to grind)
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


def read_n(path):
    try:
        with open(path, encoding="utf-8") as f:
            for raw in f:
                line = raw.split("#", 1)[0].split()
                if len(line) == 1:
                    n = int(line[0])
                    if n < 2:
                        failed(f"instance {path}: N must be at least 2, got {n}")
                    return n
    except (OSError, UnicodeDecodeError, ValueError) as e:
        failed(f"cannot read instance {path}: {e}")
    failed(f"instance {path} gives no length N")


def read_model(path):
    """Returns (symbols, claimed energy or None) from the solution file."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except UnicodeDecodeError:
        invalid("the solution is not UTF-8 text")
    except OSError as e:
        failed(f"cannot read solution {path}: {e}")
    symbols, claimed = [], None
    for number, line in enumerate(lines, 1):
        words = line.split(maxsplit=1)
        if not words or words[0] in ("c", "s"):
            continue
        if words[0] == "o":
            try:
                claimed = int(words[1]) if len(words) == 2 else None
            except ValueError:
                claimed = None
            if claimed is None:
                invalid(f"line {number}: `o` needs an integer energy, got {line!r}")
            symbols = []  # a new model starts after every `o`
        elif words[0] == "v":
            symbols.extend("".join(words[1:]).split())
        else:
            invalid(f"line {number}: expected a `v` line, got {line[:60]!r}")
    return "".join(symbols), claimed


def energy(s):
    n = len(s)
    return sum(sum(s[i] * s[i + k] for i in range(n - k)) ** 2 for k in range(1, n))


def main():
    if len(sys.argv) != 3:
        failed("usage: check.py INSTANCE SOLUTION")
    n = read_n(sys.argv[1])
    text, claimed = read_model(sys.argv[2])
    if not text:
        invalid("no sequence (no `v` line)")
    bad = sorted(set(text) - set("01+-"))
    if bad:
        invalid(f"symbols {''.join(bad)!r} are not 0/1 or +/-")
    if len(text) != n:
        invalid(f"the sequence has {len(text)} symbols, the instance needs N = {n}")
    e = energy([1 if ch in "1+" else -1 for ch in text])
    if claimed is not None and claimed != e:
        invalid(f"claimed energy {claimed}, but the sequence has energy {e}")
    print(e)
    print(f"energy {e}, length {n}")


if __name__ == "__main__":
    main()
