#!/usr/bin/env bash
# The sieve's anytime mode against the published table: for each N, runs
#   grind run sieve --n N --heuristic --seconds SECONDS --json   (release build, local workers)
# and prints N, grind's value, the published A019312 value (records/a019312.txt), the gap and
# the wall seconds. Extra arguments after the Ns go to `grind run` (e.g. --units 2).
#   SECONDS=60 bench/sieve_anytime.sh 700 850 1000 [-- FLAGS...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${SECONDS:-60}
ns=()
while (( $# )) && [[ $1 != -- ]]; do ns+=("$1"); shift; done
[[ ${1:-} == -- ]] && shift
cargo build -q --release --bin grind
uptime
git rev-parse --short=12 HEAD
printf 'N\tgrind\tpublished\tgap\twall_s\n'
for n in "${ns[@]}"; do
    published=$(grep -v '^#' records/a019312.txt | sed -n "${n}p")
    line=$(target/release/grind run sieve --n "$n" --heuristic --seconds "$seconds" --json "$@" | tail -1)
    value=$(sed -E 's/.*"value":"?([0-9]+).*/\1/' <<<"$line")
    wall=$(sed -E 's/.*"wall_seconds":([0-9.]+).*/\1/' <<<"$line")
    printf '%s\t%s\t%s\t%s\t%s\n' "$n" "$value" "$published" "$((published - value))" "$wall"
done
uptime
