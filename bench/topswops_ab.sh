#!/usr/bin/env bash
# Runs two builds of the in-process Topswops benchmark (shared/benches/topswops.rs) against each
# other: OLD and NEW alternately, case by case, for ROUNDS rounds, at the same priority, and
# prints every row then the median seconds per case and build. Node counts must agree (the
# script fails otherwise). Seconds are thread CPU time (the machine may be shared).
#
# Usage: bench/topswops_ab.sh OLD_BINARY NEW_BINARY [ROUNDS]
#   where a binary is built by `cargo bench -p grind-shared --bench topswops --no-run`
#   (the path it prints as "Executable"), e.g. one copied aside before a change.
# Cases: CASES="13 --mode prove|13 --mode prove --direction backward|..." overrides the list.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# The binaries as the caller named them (lib.sh moved to the repository root).
old="$(cd "$BENCH_CALLER_DIR" && realpath "$1")"
new="$(cd "$BENCH_CALLER_DIR" && realpath "$2")"
rounds="${3:-3}"
IFS='|' read -r -a cases <<< "${CASES:-13 --mode prove|13 --mode prove --direction backward|13 --mode discover|12 --mode discover --direction backward|13 --mode prove --kernel wide|11 --mode prove --kernel portable --direction backward}"
out="$(mktemp)"
remove_at_exit "$out"

machine_line
for r in $(seq 1 "$rounds"); do
    for c in "${!cases[@]}"; do
        for which in old new; do
            bin="$old"
            if [ "$which" = new ]; then bin="$new"; fi
            # shellcheck disable=SC2086
            row="$(nice -n 10 "$bin" ${cases[$c]} | tail -n 1)"
            echo "round $r case $c $which $row" | tee -a "$out"
        done
    done
done
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
# Columns of a row after the prefix: n mode kernel seconds nodes Mnodes/s decks max.
python3 - "$out" "${cases[@]}" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
cases = sys.argv[2:]
print(f"{'case':<58} {'old s':>8} {'new s':>8} {'new/old':>8} {'nodes':>12}")
for c, name in enumerate(cases):
    got = {}
    nodes = set()
    for r in rows:
        if int(r[3]) == c:
            got.setdefault(r[4], []).append(float(r[8]))
            nodes.add((r[9], r[11], r[12]))
    if len(nodes) != 1:
        sys.exit(f"case {name}: node counts / decks / max differ: {nodes}")
    o, n = statistics.median(got["old"]), statistics.median(got["new"])
    print(f"{name:<58} {o:>8.3f} {n:>8.3f} {n / o:>8.3f} {next(iter(nodes))[0]:>12}")
PY
