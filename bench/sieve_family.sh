#!/usr/bin/env bash
# Proves the sieve family N = A..B with `grind run` (release build, embedded coordinator and
# local workers on every core), once with members building on each other (the default) and
# once with --independent, each on a fresh database; prints the command's own summary line
# and, per member, value, proven, units searched (results), nodes, CPU seconds and whether it
# was closed at its ceiling, read from each run's database, plus the totals.
#   bench/sieve_family.sh A B [MODES]     (MODES: "chain independent" by default)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
from=${1:?first N}
to=${2:?last N}
modes=${3:-chain independent}
grind=${GRIND:-target/release/grind}
[[ -x $grind ]] || { echo "build first: cargo build --release -p grind-coordinator" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for mode in $modes; do
    flags=()
    [[ $mode == independent ]] && flags=(--independent)
    db=$work/$mode.db
    echo "== $mode: grind run sieve --n-from $from --n-to $to ${flags[*]} --db DB --json"
    uptime
    start=$(date +%s.%N)
    "$grind" run sieve --n-from "$from" --n-to "$to" "${flags[@]}" --db "$db" --json |
        tail -1 | python3 -c 'import json,sys; d=json.load(sys.stdin); print("campaigns:", len(d["campaigns"]), "wall_seconds:", d["wall_seconds"])'
    end=$(date +%s.%N)
    uptime
    sqlite3 -separator ' ' "$db" "
        SELECT json_extract(params_json, '\$.n'), best_score, state,
               (SELECT count(*) FROM results r WHERE r.campaign_id = c.id),
               nodes, printf('%.1f', cpu_seconds),
               (SELECT count(*) FROM events e WHERE e.campaign_id = c.id
                  AND e.kind = 'closed_at_ceiling'),
               (SELECT group_concat(label || '=' || value || (CASE WHEN backed_by IS NULL
                  THEN ' (open)' ELSE ' (backed by ' || backed_by || ')' END))
                  FROM premises p WHERE p.campaign_id = c.id)
        FROM campaigns c ORDER BY id" |
        awk 'BEGIN { print "N value state results nodes cpu_s closed rests_on" }
             { print; r += $4; nodes += $5; cpu += $6; closed += $7 }
             END { printf "total: results %d, nodes %d, cpu_s %.1f, closed at ceiling %d\n", r, nodes, cpu, closed }'
    printf 'wall (command): %.1f s\n' "$(echo "$end - $start" | bc)"
done
