#!/usr/bin/env bash
# Best known games of the sieve (Taxman game, OEIS A019312) for N past the published optimum
# table, each with a certified upper bound: walks N = A..B as a family (each N starts from the
# best of N - 1's game extended, N + 1's game cut down and N's own recorded game), improves it
# for SECONDS CPU seconds with the anytime mode's large neighbourhood search (one thread,
# release build), and appends a row to records/sieve-beyond-1000.tsv whenever N's game is new
# or better. Each N's cluster-cut bound certificate goes to records/sieve-bounds/N.txt and is
# checked before its row is written (its cut rounds start from the neighbours' stored cuts).
# --backward walks B..A (so N + 1 seeds N); --min-seconds M stops an N after M seconds once its
# game reaches the published value (SECONDS stays the limit for the N that fall short);
# --seed X draws other LNS regions (recorded in the row's start column); --portfolio K lets up
# to K LNS runs work on an N that falls short; --reach R also starts N from N + 1..R's games
# cut down; --below B --start n-B starts N from N - B's game lifted (another lineage), --greedy
# from the greedy game; --relink R relinks runs with the other starts, --dump/--extra keep and
# reuse unrecorded games (see benches/sieve_beyond.rs for these and the schedule overrides).
#   bench/sieve_beyond.sh A B [SECONDS] [--backward] [--min-seconds M] [--portfolio K]
#   [--reach R] [--seed X]     (default SECONDS: 10; M: SECONDS; K, R: 1)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
from=${1:?first N}
to=${2:?last N}
seconds=${3:-10}
shift $(( $# < 3 ? $# : 3 ))
record=records/sieve-beyond-1000.tsv
commit=$(git rev-parse --short=12 HEAD)
uptime
# Each row is appended by reopening the file, so that a row found after the file was replaced
# (a checkout) lands in the file as it is then instead of being lost.
cargo bench -q -p grind-shared --bench sieve_beyond -- --from "$from" --to "$to" \
    --seconds "$seconds" --commit "$commit" "$@" |
  while IFS= read -r row; do
    printf '%s\n' "$row" >>"$record"
  done
