#!/usr/bin/env bash
# A heuristic Topswops campaign for a fixed time, then its best-versus-time curve and its
# per-stage CPU times, read from the campaign's database (improvement events and unit
# results). The database keeps the campaign: run again with the same DB to resume it.
#
# Usage: bench/topswops_heuristic.sh N SECONDS [topswops flags...]
#   e.g. bench/topswops_heuristic.sh 97 600 --k 8
#        DB=/var/tmp/ts10k.db bench/topswops_heuristic.sh 10000 900 --k 9 --units 4
# Environment: DB (default: a new temporary file), WORKERS (default 1), THREADS (default 2),
# GRIND (a grind binary to use instead of building target/release/grind), POLL (seconds
# between live looks at the database, default 2).
# While the campaign runs, every improvement of the best is printed as it lands
# ("live SECONDS FLIPS", seconds since the campaign was created), with the load average
# once a minute ("load SECONDS ...").
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
n="$1"; seconds="$2"; shift 2
if [ -z "${GRIND:-}" ]; then
    build_release -p grind-coordinator
fi
db="${DB:-$(mktemp -d)/topswops-$n.db}"
machine_line
echo "campaign: topswops --n $n --heuristic $*; database $db"
start_bg "$GRIND" run topswops --n "$n" --heuristic "$@" --seconds "$seconds" --db "$db" \
    --workers "${WORKERS:-1}" --threads "${THREADS:-2}" --json > "$db.run.json"
grind_pid=$!
last=0; ticks=0
while kill -0 "$grind_pid" 2>/dev/null; do
    sleep "${POLL:-2}"; ticks=$((ticks + 1))
    rows="$(sqlite3 -separator ' ' "$db" "
      SELECT e.id, printf('%.1f', (e.at_ms - c.created_ms) / 1000.0),
             json_extract(e.detail, '$.score')
      FROM events e JOIN campaigns c ON c.id = e.campaign_id
      WHERE e.kind = 'improvement' AND e.id > $last ORDER BY e.id" 2>/dev/null || true)"
    if [ -n "$rows" ]; then
        echo "$rows" | awk '{ print "live", $2, $3; fflush() }'
        last="$(echo "$rows" | tail -1 | cut -d' ' -f1)"
    fi
    if [ $((ticks * ${POLL:-2} % 60)) -lt "${POLL:-2}" ]; then
        echo "load $((ticks * ${POLL:-2})) $(uptime | sed 's/.*load/load/')"
    fi
done
wait "$grind_pid" || true
echo "load after: $(uptime | sed 's/.*load/load/')"
echo
echo "# best versus time (seconds since the campaign was created, flips)"
sqlite3 -separator ' ' "$db" "
  SELECT printf('%.1f', (e.at_ms - c.created_ms) / 1000.0), json_extract(e.detail, '$.score')
  FROM events e JOIN campaigns c ON c.id = e.campaign_id
  WHERE e.kind = 'improvement' ORDER BY e.id"
echo
echo "# stages: label kind, stage, prefix length, units, CPU seconds (sum over units), best after"
sqlite3 -separator ' ' "$db" "
  SELECT substr(u.label, 1, instr(u.label, ' (') - 1) AS stage,
         CAST(substr(u.label, instr(u.label, 'prefix ') + 7,
              instr(u.label, ')') - instr(u.label, 'prefix ') - 7) AS INTEGER) AS prefix,
         count(*), printf('%.2f', sum(r.cpu_seconds)), max(CAST(r.value AS INTEGER))
  FROM units u JOIN results r ON r.unit_id = u.id
  WHERE u.label LIKE 'grow stage %' AND r.status = 'accepted'
  GROUP BY stage ORDER BY min(u.id)"

# Projection: fit stage CPU time = A * L^B over the later half of the measured growth stages
# (L = prefix length), then sum the fitted times of the stages still to come, up to
# TARGET_L (default n) in steps of K (default: --k from the flags, else 8). Also the
# asymptotic model (flips per candidate and flip length both grow like L, so a stage costs
# ~ L^2) calibrated on the last measured stage.
k=8
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
    if [ "${args[$i]}" = "--k" ]; then k="${args[$((i + 1))]}"; fi
done
echo
echo "# projection (stage CPU seconds = A * L^B, fitted on the later half of the stages)"
sqlite3 -separator ' ' "$db" "
  SELECT CAST(substr(u.label, instr(u.label, 'prefix ') + 7,
              instr(u.label, ')') - instr(u.label, 'prefix ') - 7) AS INTEGER) AS prefix,
         sum(r.cpu_seconds), max(CAST(r.value AS INTEGER))
  FROM units u JOIN results r ON r.unit_id = u.id
  WHERE u.label LIKE 'grow stage %' AND r.status = 'accepted'
  GROUP BY substr(u.label, 1, instr(u.label, ' (') - 1) ORDER BY min(u.id)" |
awk -v k="$k" -v target="${TARGET_L:-$n}" '
  { L[NR] = $1; t[NR] = $2; best[NR] = $3 }
  END {
    if (NR < 4) { print "too few stages to fit"; exit }
    from = int(NR / 2) + 1; m = 0; sx = sy = sxx = sxy = 0
    for (i = from; i <= NR; i++) if (t[i] > 0 && L[i] > 0) {
      x = log(L[i]); y = log(t[i]); m++; sx += x; sy += y; sxx += x * x; sxy += x * y
    }
    b = (m * sxy - sx * sy) / (m * sxx - sx * sx); a = (sy - b * sx) / m
    total = 0
    for (l = L[NR] + k; l < target; l += k) total += exp(a) * l ^ b
    done = 0; for (i = 1; i <= NR; i++) done += t[i]
    printf "stages measured: %d (prefix up to %d), CPU seconds so far %.0f, best %d\n", NR, L[NR] + k, done, best[NR]
    printf "fit: stage CPU s = %.3g * L^%.3f (on %d stages)\n", exp(a), b, m
    printf "projected CPU time to grow to L = %d (fitted exponent): %.0f s = %.1f core-days\n", target, total, total / 86400
    quad = 0
    for (l = L[NR] + k; l < target; l += k) quad += t[NR] * (l / L[NR]) ^ 2
    printf "projected CPU time to grow to L = %d (stage time ~ L^2 from the last stage): %.0f s = %.1f core-days\n", target, quad, quad / 86400
    printf "p = best / (L + k)^2 at the last stage: %.4f\n", best[NR] / ((L[NR] + k) ^ 2)
  }'
