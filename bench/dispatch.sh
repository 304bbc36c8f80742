#!/usr/bin/env bash
# Dispatch cost per unit, end to end, as users run it: `grind run primes` (embedded
# coordinator, in-process workers) and `grind serve` + `grind-worker` processes, with units
# that take 0 ms (64 numbers), 1 ms and 100 ms (primes --min-unit-ms sleeps to stretch a unit,
# so the unit's own time is known exactly and takes no CPU).
#
# overhead per unit = (wall - fixed) * lanes / units - unit time   (lanes = workers x threads)
# where `fixed` is the wall time of a one-unit campaign of 0 ms measured the same way
# (process start, database, connection, the first lease): the cost paid once per run.
# Units of 0 ms are joined into coarser units once measured (what users get); units
# stretched with --min-unit-ms are never joined, so their rows show the per-lease cost.
#
# Usage: bench/dispatch.sh [UNITS for the 0 and 1 ms rows, default 2000]
# Environment: BIN_DIR=dir measures the `grind` and `grind-worker` found there instead of
# building this tree (to run another build beside it); LANES="2 4" picks the `grind run`
# lane counts (default "1 2 4"; the served rows run 1 and 4 lanes when LANES has them).
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
units="${1:-2000}"
lanes="${LANES:-1 2 4}"
build_release
grind="$GRIND"
worker="$WORKER"
work="$(mktemp -d)"
remove_at_exit "$work"
pids=()

machine_line
printf '%-6s %8s %6s %8s %9s %9s %12s\n' mode unit_ms units lanes wall_s fixed_s overhead_ms

fixed=0
report() { # mode ms n lanes wall
  awk -v m="$1" -v ms="$2" -v n="$3" -v l="$4" -v w="$5" -v f="$fixed" \
    'BEGIN { printf "%-6s %8s %6d %8s %9.3f %9.3f %12.4f\n", m, ms, n, l, w, f, ((w-f)*l/n - ms/1000)*1000 }'
}

now() { date +%s.%N; }

run_embedded() { # ms n workers
  local ms=$1 n=$2 w=$3 t0 t1
  t0=$(now)
  "$grind" run primes --from 0 --to $((n * 64)) --unit 64 --min-unit-ms "$ms" \
    --workers "$w" --threads 1 --verify-rate 0 --json > "$work/out.json"
  t1=$(now)
  grep -q '"state":"done"' "$work/out.json" || { echo "run did not finish: $(cat "$work/out.json")"; exit 1; }
  report run "$ms" "$n" "$w" "$(echo "$t1 - $t0" | bc)"
}

run_served() { # ms n workers
  local ms=$1 n=$2 w=$3 t0 t1 db id
  db="$work/serve-$ms-$w.db"
  start_serve "$work/serve.log" --db "$db" --verify-rate 0
  pids+=("$SERVE_PID")
  local url="$SERVE_URL"
  t0=$(now)
  id=$("$grind" campaign add --coordinator "$url" primes --to $((n * 64)) --unit 64 \
    --min-unit-ms "$ms" --verify-rate 0 | tail -1)
  for i in $(seq "$w"); do
    start_bg "$worker" --coordinator "$url" --threads 1 --name "w$i" 2>/dev/null; pids+=($!)
  done
  "$grind" watch --coordinator "$url" "$id" --interval-ms 20 >/dev/null
  t1=$(now)
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; pids=()
  wait 2>/dev/null || true
  report serve "$ms" "$n" "$w" "$(echo "$t1 - $t0" | bc)"
}

fixed=$(run_embedded 0 1 1 | awk '{print $5}')
for w in $lanes; do
  run_embedded 0 "$units" "$w"
  run_embedded 1 "$units" "$w"
  run_embedded 100 $((40 * w)) "$w"
done
fixed=$(run_served 0 1 1 | awk '{print $5}')
for w in $lanes; do
  [ "$w" = 1 ] || [ "$w" = 4 ] || continue
  run_served 0 "$units" "$w"
  run_served 1 "$units" "$w"
  run_served 100 $((40 * w)) "$w"
done
