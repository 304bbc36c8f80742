#!/usr/bin/env bash
# Saturation sweep of one coordinator process: for each worker count, a fresh
# `grind serve` (its own CPU and peak memory are measured by pid) and `grind-loadgen`
# simulating that many workers that hold every unit UNIT_MS (default 1000 ms) and heartbeat
# every HEARTBEAT_MS (default 10000 ms). One JSON line per worker count on stdout.
#
#   bench/load-sweep.sh 500 1000 2000 5000        # worker counts (default below)
#   SECONDS_PER_RUN=30 UNIT_MS=1000 bench/load-sweep.sh 5000
#
# See BENCHMARKS.md ("Reliability suites: load and scaling").
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
build_release -p grind-coordinator -p grind-bench >&2
machine_line >&2
counts=("$@")
if [ ${#counts[@]} -eq 0 ]; then counts=(500 1000 2000 3000 4000 5000 6000 8000); fi
unit_ms=${UNIT_MS:-1000}
heartbeat_ms=${HEARTBEAT_MS:-10000}
seconds=${SECONDS_PER_RUN:-20}
work=$(mktemp -d)
remove_at_exit "$work"
for workers in "${counts[@]}"; do
  db="$work/grind-$workers.db"
  start_serve "$work/serve.err" --db "$db"
  pid=$SERVE_PID
  # Registrations stay under the per-address limit (1000/s): ramp at 500 a second.
  ramp=$(( workers / 500 + 1 ))
  target/release/grind-loadgen --coordinator "$SERVE_URL" --coordinator-pid "$pid" \
    --coordinator-db "$db" --workers "$workers" --unit-ms "$unit_ms" \
    --heartbeat-ms "$heartbeat_ms" --ramp "$ramp" --seconds "$seconds" --json
  kill "$pid"; wait "$pid" 2>/dev/null || true
done
