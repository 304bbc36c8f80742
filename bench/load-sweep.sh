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
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p grind-coordinator -p grind-bench >&2
counts=("$@")
if [ ${#counts[@]} -eq 0 ]; then counts=(500 1000 2000 3000 4000 5000 6000 8000); fi
unit_ms=${UNIT_MS:-1000}
heartbeat_ms=${HEARTBEAT_MS:-10000}
seconds=${SECONDS_PER_RUN:-20}
work=$(mktemp -d)
trap 'kill "${pid:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
for workers in "${counts[@]}"; do
  db="$work/grind-$workers.db"
  target/release/grind serve --listen 127.0.0.1:0 --db "$db" >"$work/serve.out" 2>"$work/serve.err" &
  pid=$!
  for _ in $(seq 100); do grep -q "listening on" "$work/serve.out" 2>/dev/null && break; sleep 0.1; done
  addr=$(awk '/listening on/ {print $NF}' "$work/serve.out")
  # Registrations stay under the per-address limit (1000/s): ramp at 500 a second.
  ramp=$(( workers / 500 + 1 ))
  target/release/grind-loadgen --coordinator "http://$addr" --coordinator-pid "$pid" \
    --coordinator-db "$db" --workers "$workers" --unit-ms "$unit_ms" \
    --heartbeat-ms "$heartbeat_ms" --ramp "$ramp" --seconds "$seconds" --json
  kill "$pid"; wait "$pid" 2>/dev/null || true
  : >"$work/serve.out"
done
