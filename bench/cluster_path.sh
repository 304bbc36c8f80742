#!/usr/bin/env bash
# Issue 18's end-to-end figures, each side by side with its reference in the same run:
#   - grind run topswops --n 13 --workers 1 --threads 1  vs  the C forward search (discovery,
#     bench/topswops_ref.c -d, cc -O2), wall seconds of each process, twice: told f(13) - 1
#     as its starting bound (-d), and starting from f(12) (-d -f 65), which is what grind
#     knows (grind computes f(1..12) itself; the C program has them compiled in); and
#     its proof modes, told the target f(13) = 80: the program's default run (every deck
#     reaching 80, the figure issue 18 quotes as "a C forward search 3.5 s") and -s
#     (fixed-point decks skipped);
#   - grind run housie count (1,554 tiny units);
#   - grind run primes --to 2000000000 with --unit 100000 (20,000 units) vs --unit 200000000
#     (10 units).
# Release build; wall time from the shell around each command.
# Usage: bench/cluster_path.sh [ROUNDS, default 1]
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rounds="${1:-1}"
build_release
grind="$GRIND"
build="$(mktemp -d)"
remove_at_exit "$build"
cc -O2 -o "$build/topswops_ref" bench/topswops_ref.c

machine_line

timed() { # label command...
  local label=$1 t0 t1 out
  shift
  t0=$(date +%s.%N)
  out=$("$@" 2>/dev/null | tail -n 1)
  t1=$(date +%s.%N)
  printf '%-44s %8.3f s   %s\n' "$label" "$(echo "$t1 - $t0" | bc)" "$(echo "$out" | cut -c1-110)"
}

for _ in $(seq "$rounds"); do
  timed "C forward search n=13 (discovery)" "$build/topswops_ref" 13 -d
  timed "C forward search n=13 (from f(12))" "$build/topswops_ref" 13 -d -f 65
  timed "C forward search n=13 (proof, default)" "$build/topswops_ref" 13
  timed "C forward search n=13 (proof, -s)" "$build/topswops_ref" 13 -s
  timed "grind run topswops --n 13 -w1 -t1" "$grind" run topswops --n 13 --workers 1 --threads 1 --json
  timed "grind run housie count" "$grind" run housie count --json
  timed "grind run primes 2e9 --unit 200000000" "$grind" run primes --to 2000000000 --unit 200000000 --json
  timed "grind run primes 2e9 --unit 100000" "$grind" run primes --to 2000000000 --unit 100000 --json
done

# Where grind's Topswops work goes (one more run, kept in a database): nodes of the
# campaign's own units and of its replica units, against the C search's nodes above.
"$grind" run topswops --n 13 --workers 1 --threads 1 --json --db "$build/ts13.db" >/dev/null 2>&1
if command -v sqlite3 >/dev/null; then
  sqlite3 "$build/ts13.db" "SELECT CASE replica WHEN 0 THEN 'topswops units' ELSE 'replica units' END,
    count(*), sum(nodes), printf('%.3f s CPU', sum(cpu_seconds)) FROM results GROUP BY replica"
fi
