#!/bin/bash
# Grid puzzle (issue 6): one worker against two on generated instances, each run timed.
# Usage: bench/grid_workers.sh [SIZE] [SEEDS] [REPS]   (defaults: 16, "2 4", 2)
# Builds the release binaries first (BIN_DIR=dir uses the ones there instead).
# Prints one row per run: seed, workers, repetition, load before, wall and CPU seconds, value,
# proven, stored lower bound, units, branch-and-cut nodes (summed over leases), load after.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
SIZE=${1:-16}
SEEDS=${2:-"2 4"}
REPS=${3:-2}
build_release
BIN=$GRIND
WORK=$(mktemp -d)
remove_at_exit "$WORK"
machine_line
for rep in $(seq 1 "$REPS"); do
  for seed in $SEEDS; do
    for workers in 1 2; do
      db=$WORK/run-$seed-$workers-$rep.db
      load=$(cut -d' ' -f1 /proc/loadavg)
      /usr/bin/time -o "$WORK/time" -f "%e" timeout 1800 "$BIN" run grid --size "$SIZE" \
        --seed "$seed" --workers "$workers" --threads 1 --verify-rate 0 --db "$db" --json \
        > "$WORK/out" 2>&1
      wall=$(cat "$WORK/time")
      summary=$(tail -1 "$WORK/out" | python3 -c 'import json, sys
d = json.loads(sys.stdin.read())
print(round(d["cpu_seconds"], 1), d["value"], d["proven"], d["solution"]["lower_bound"], d["units_done"])')
      nodes=$(sqlite3 "$db" "select sum(nodes) from leases")
      echo "seed $seed workers $workers rep $rep load $load wall $wall cpu/value/proven/lower/units $summary nodes $nodes load_after $(cut -d' ' -f1 /proc/loadavg)"
    done
  done
done
