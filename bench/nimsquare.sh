#!/usr/bin/env bash
# Measures the Nim Square solver (Project Euler 310) against a straightforward C reference:
# the C program (cc -O2) for N = 1e7, then `cargo bench -p grind-shared --bench nimsquare`
# (N = 1e5, 1e6, 1e7 on rayon pools of 1 and 2 threads).
#
# Usage: bench/nimsquare.sh [N for the C reference, default 10000000]
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
n="${1:-10000000}"
build="$(mktemp -d)"
remove_at_exit "$build"

machine_line
echo
echo "C reference (cc -O2, one thread):"
cc -O2 -o "$build/nimsquare_ref" bench/nimsquare_ref.c
printf '%12s %10s %9s %s\n' N seconds "max g" "losing positions"
"$build/nimsquare_ref" "$n"
echo
echo "grind (cargo bench -p grind-shared --bench nimsquare):"
cargo bench -q -p grind-shared --bench nimsquare
