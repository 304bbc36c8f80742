#!/usr/bin/env bash
# Builds grind-loadgen (release) and runs the standard coordinator load benchmark:
# an in-process coordinator on a temporary SQLite database, a `primes` campaign with units of
# 1000 numbers, 200 simulated workers over 8 gRPC channels, 3 s warm-up, 20 s measured.
# Extra arguments go to grind-loadgen (e.g. --workers 1000, --heartbeat-ms 500, --json).
# See BENCHMARKS.md, "Coordinator load".
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
build_release -p grind-bench
machine_line
exec target/release/grind-loadgen --workers 200 --channels 8 --seconds 20 --warmup 3 \
  --to 1e9 --unit 1000 "$@"
