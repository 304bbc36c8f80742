#!/usr/bin/env bash
# Measures the exact Topswops search (shared/src/problems/topswops/search.rs) against its C
# reference (bench/topswops_ref.c: the same algorithms, cc -O2, no -march flags), one core,
# proof mode at target f(n) with fixed-point decks skipped, for n = 12 13 14 by default, in
# both directions (forward: Knuth's search; backward: Pepperdine's). C and Rust run
# alternately, size by size and direction by direction, so both see the same machine load;
# seconds are thread CPU time (the machine may be shared).
#
# Usage: bench/topswops.sh [N...]          (e.g. bench/topswops.sh 12 13 14 15)
#        MODE=prove-all|discover bench/topswops.sh ...   (default MODE=prove)
#        DIRS="backward" bench/topswops.sh ...           (default DIRS="forward backward")
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
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
remove_at_exit "$build"

machine_line
cc -O2 -o "$build/topswops_ref" bench/topswops_ref.c
cargo bench -q -p grind-shared --bench topswops --no-run
dirs=(${DIRS:-forward backward})
printf '%3s %10s %16s %9s %14s %10s %6s %5s\n' n mode kernel seconds nodes Mnodes/s decks max
for n in "${sizes[@]}"; do
    for dir in "${dirs[@]}"; do
        bflag=()
        if [ "$dir" = backward ]; then bflag=(-b); fi
        "$build/topswops_ref" "$n" "${cflags[@]}" "${bflag[@]}"
        cargo bench -q -p grind-shared --bench topswops -- "$n" --mode "$mode" \
            --direction "$dir" | tail -n 1
    done
done
