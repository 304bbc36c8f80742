#!/usr/bin/env bash
# Proves the sieve (Taxman game, OEIS A019312) optimum for every N in A..B with grind's own
# solver and compares each with the published terms in bench/sieve_a019312.txt.
#   bench/sieve.sh [A [B [THREADS]]]     (default: 1 200 2)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
from=${1:-1}
to=${2:-200}
threads=${3:-2}
uptime
exec cargo bench -q -p grind-shared --bench sieve -- --threads "$threads" --check "$from" "$to" "$PWD/bench/sieve_a019312.txt"
