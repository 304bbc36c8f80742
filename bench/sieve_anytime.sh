#!/usr/bin/env bash
# The sieve's anytime mode against the published table: for each N, runs
#   grind run sieve --n N --heuristic --seconds SECONDS --json --db DB  (release build, local workers)
# and prints N, grind's value, the published A019312 value (records/a019312.txt), the gap, the
# wall seconds, the seconds (since the campaign was created, from the DB's improvement events)
# at which the final value was first reached, and those at which the published value was
# reached ("-" if never). Extra arguments after the Ns go to `grind run` (e.g. --units 2).
#   SECONDS=60 bench/sieve_anytime.sh 700 850 1000 [-- FLAGS...]
#   SECONDS=60 bench/sieve_anytime.sh $(seq 525 25 1000)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
seconds=${SECONDS:-60}
ns=()
while (( $# )) && [[ $1 != -- ]]; do ns+=("$1"); shift; done
[[ ${1:-} == -- ]] && shift
cargo build -q --release --bin grind
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
uptime
git rev-parse --short=12 HEAD
printf 'N\tgrind\tpublished\tgap\twall_s\tbest_at_s\tpublished_at_s\n'
for n in "${ns[@]}"; do
    published=$(grep -v '^#' records/a019312.txt | sed -n "${n}p")
    db="$dir/sieve-$n.db"
    line=$(target/release/grind run sieve --n "$n" --heuristic --seconds "$seconds" --json --db "$db" "$@" | tail -1)
    value=$(sed -E 's/.*"value":"?([0-9]+).*/\1/' <<<"$line")
    wall=$(sed -E 's/.*"wall_seconds":([0-9.]+).*/\1/' <<<"$line")
    at() {
        python3 - "$db" "$1" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
created = db.execute("select created_ms from campaigns").fetchone()[0]
for at, detail in db.execute("select at_ms, detail from events where kind = 'improvement' order by id"):
    if json.loads(detail)["score"] >= int(sys.argv[2]):
        print(f"{(at - created) / 1000:.1f}")
        break
else:
    print("-")
PY
    }
    printf '%s\t%s\t%s\t%s\t%.1f\t%s\t%s\n' "$n" "$value" "$published" "$((published - value))" \
        "$wall" "$(at "$value")" "$(at "$published")"
done
uptime
