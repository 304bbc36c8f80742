#!/usr/bin/env bash
# Measures the exact Topswops search (shared/src/problems/topswops/search.rs) against its C
# reference (bench/topswops_ref.c: the same algorithms, cc -O2, no -march flags), one core,
# proof mode at target f(n) with fixed-point decks skipped, for n = 12 13 14 by default.
# The two run alternately, size by size, so both see the same machine load; seconds are
# thread CPU time (the machine may be shared).
#
# Usage: bench/topswops.sh [N...]          (e.g. bench/topswops.sh 12 13 14 15)
#        MODE=prove-all|discover bench/topswops.sh ...   (default MODE=prove)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
sizes=("$@")
if [ ${#sizes[@]} -eq 0 ]; then
    sizes=(12 13 14)
fi
mode="${MODE:-prove}"
case "$mode" in
    prove) cflags=(-s) ;;
    prove-all) cflags=() ;;
    discover) cflags=(-d) ;;
    *) echo "unknown MODE $mode" >&2; exit 2 ;;
esac
build="$(mktemp -d)"
trap 'rm -rf "$build"' EXIT

echo "machine: $(lscpu | grep 'Model name' | sed 's/.*: *//'), $(nproc) CPUs"
cc -O2 -o "$build/topswops_ref" "$here/topswops_ref.c"
cd "$here/.."
cargo bench -q -p grind-shared --bench topswops --no-run
printf '%3s %10s %13s %9s %14s %10s %6s %5s\n' n mode kernel seconds nodes Mnodes/s decks max
for n in "${sizes[@]}"; do
    "$build/topswops_ref" "$n" "${cflags[@]}"
    cargo bench -q -p grind-shared --bench topswops -- "$n" --mode "$mode" | tail -n 1
done
