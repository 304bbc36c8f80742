#!/usr/bin/env bash
# Exec campaigns (issue 29), measured from the commands a user types: `grind serve`,
# `grind-worker --allow-exec`, `grind campaign add exec`, `grind run exec`. Release build.
#
#   a. start-up: the cost grind adds per exec unit on a warm bundle cache. A tiny C solver
#      (bench/exec_start.c) writes CLOCK_REALTIME at the start of main to stderr (kept in
#      each result's provenance, stderr_tail); the worker's event stream (--events) has
#      `lease_granted` (the lease reply arrived) and `unit_started` (a thread took the unit)
#      in microseconds. Per unit: grant -> solver's first instruction for units that found a
#      thread free when granted (started within 1 ms of the grant), and thread start ->
#      first instruction for every unit (queued units wait for the previous one first).
#      One worker, one thread, UNITS units, after a 2-unit campaign that warms the cache.
#   b. bound feed: two workers (one thread each), a --bound-feed max campaign of 4 seeds
#      of FEED_SECONDS each running bench/exec_feed.c: every 100-500 ms a solver prints an
#      improvement whose cost is the time it printed it (microseconds); a solver receiving
#      `b <cost>` it did not print itself records now - cost. Delays from all results.
#   c. the LABS example (examples/labs, N = 27 with target 37: each seed stops at the
#      published optimum, a fixed amount of work per seed) over seeds 0..LABS_SEEDS-1 on 2
#      cores: `grind run exec ... --workers 1 --threads 2 --verify-rate 0` against GNU
#      parallel -j2 running the same solver with the same seeds by hand; wall and CPU.
#      LABS_ROUNDS rounds (default 1) of the order by hand, grind, grind, by hand, then
#      each side's mean, median and spread, and grind's mean over by hand's: this machine's
#      speed drifts by 10-30% between runs of the same deterministic work, so one pair of
#      runs decides nothing.
#
# Other processes share this machine (other builds): every part runs twice in the same run,
# at normal priority and under `nice -n 19` (all processes of that part), and `uptime` is
# printed before each.
#
# Usage: bench/exec.sh [UNITS, default 300] [FEED_SECONDS, default 20] [LABS_SEEDS, default 8]
# Environment: BIN_DIR=dir uses the grind and grind-worker found there (no build);
# PARTS="a b c" picks parts; NICE="0 19" picks the priorities.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
units="${1:-300}"
feed_seconds="${2:-20}"
labs_seeds="${3:-8}"
parts="${PARTS:-a b c}"
nices="${NICE:-0 19}"
build_release
work="$(mktemp -d "${TMPDIR:-/tmp}/grind-exec-bench.XXXXXX")"
remove_at_exit "$work"
command -v parallel >/dev/null || { echo "needs GNU parallel (apt-get install parallel)" >&2; exit 1; }
cc -O2 -o "$work/start" bench/exec_start.c
cc -O2 -o "$work/feed" bench/exec_feed.c
cat >"$work/check.sh" <<'EOF'
#!/bin/sh
# The benchmark's checker: the score is the `v` value (0 for an empty solution).
x=
while IFS= read -r line; do case $line in "v "*) x=${line#v } ;; esac; done < "$2"
echo "${x:-0}"
EOF
chmod +x "$work/check.sh"
echo "bench" >"$work/instance.txt"

machine_line
echo "grind $("$GRIND" --version 2>/dev/null | head -1); $(cc --version | head -1); $(python3 --version); $(parallel --version | head -1)"

# percentiles LABEL: the numbers on stdin (microseconds) as count, p50, p90, p99, max in ms.
percentiles() {
    python3 -c '
import sys
v = sorted(float(x) for x in sys.stdin.read().split())
if not v:
    print(f"{sys.argv[1]:<44} no samples"); sys.exit()
q = lambda p: v[min(len(v) - 1, int(p * len(v)))] / 1000
print(f"{sys.argv[1]:<44} n={len(v):<5} p50 {q(.5):8.3f} ms  p90 {q(.9):8.3f} ms  p99 {q(.99):8.3f} ms  max {v[-1]/1000:8.3f} ms")
' "$1"
}

# serve_and_workers NICE NAME THREADS N: grind serve and N workers (--allow-exec, events).
serve_and_workers() {
    local n=$1 name=$2 threads=$3 count=$4 i
    start_serve "$work/$name-serve.log" --db "$work/$name.db"
    renice -n "$n" -p "$SERVE_PID" >/dev/null
    for i in $(seq "$count"); do
        start_bg nice -n "$n" "$WORKER" --coordinator "$SERVE_URL" --threads "$threads" \
            --name "$name-w$i" --allow-exec --events "$work/$name-w$i.events" \
            --bundle-cache "$work/$name-cache-$i" 2>"$work/$name-w$i.log"
    done
}

# add_campaign ARGS...: `grind campaign add exec ARGS` on SERVE_URL; prints the campaign id.
add_campaign() {
    "$GRIND" campaign add --coordinator "$SERVE_URL" exec --checker "$work/check.sh" \
        --instance "$work/instance.txt" --objective max --verify-rate 0 "$@" 2>>"$work/add.log" | tail -1
}

watch_done() { "$GRIND" watch --coordinator "$SERVE_URL" "$1" --interval-ms 50 >/dev/null; }

stop_serve_and_workers() {
    local pid
    for pid in "${bench_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${bench_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    bench_pids=()
}

part_a() { # NICE
    local n=$1 name="a$1" warm id
    echo "--- a. start-up per unit, warm cache: $units units, 1 worker x 1 thread, nice $n; $(uptime)"
    serve_and_workers "$n" "$name" 1 1
    warm=$(add_campaign --solver "$work/start" --units seeds:2 --unit-seconds 10)
    watch_done "$warm"
    id=$(add_campaign --solver "$work/start" --units "seeds:$units" --unit-seconds 10)
    local t0 t1
    t0=$(date +%s.%N)
    watch_done "$id"
    t1=$(date +%s.%N)
    echo "$units units in $(echo "$t1 - $t0" | bc) s wall (campaign add to done)"
    python3 - "$work/$name.db" "$work/$name-w1.events" "$id" >"$work/$name.samples" <<'EOF'
import json, sqlite3, sys
db, events, campaign = sys.argv[1], sys.argv[2], int(sys.argv[3])
granted, started = {}, {}
for line in open(events):
    e = json.loads(line)
    if e.get("campaign_id") != campaign:
        continue
    if e["event"] == "lease_granted":
        granted[e["lease_id"]] = e["at_us"]
    elif e["event"] == "unit_started":
        started[e["lease_id"]] = e["at_us"]
con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
for lease, prov in con.execute(
        "SELECT lease_id, provenance_json FROM results WHERE campaign_id = ?", (campaign,)):
    tail = json.loads(prov)["stderr_tail"]
    first = int(tail.split()[1])
    g, s = granted[lease], started[lease]
    print("start", first - s)
    print("grant_all", first - g)
    if s - g < 1000:
        print("grant_free", first - g)
EOF
    grep '^grant_free' "$work/$name.samples" | cut -d' ' -f2 | percentiles "grant -> first instruction (thread free)"
    grep '^start' "$work/$name.samples" | cut -d' ' -f2 | percentiles "thread start -> first instruction (all)"
    grep '^grant_all' "$work/$name.samples" | cut -d' ' -f2 | percentiles "grant -> first instruction (all, queued too)"
    stop_serve_and_workers
}

part_b() { # NICE
    local n=$1 name="b$1" id
    echo "--- b. bound feed between two workers: 4 seeds x ${feed_seconds} s, nice $n; $(uptime)"
    serve_and_workers "$n" "$name" 1 2
    # Both workers ask (and wait) for work before the campaign exists: each takes its share.
    for i in 1 2; do
        until grep -q '"registered"' "$work/$name-w$i.events" 2>/dev/null; do sleep 0.05; done
    done
    id=$(add_campaign --solver "$work/feed" --units seeds:4 --unit-seconds "$feed_seconds" \
        --grace-seconds 2 --bound-feed)
    watch_done "$id"
    python3 - "$work/$name.db" "$id" >"$work/$name.samples" <<'EOF'
import json, sqlite3, sys
con = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
printed = received = 0
workers = set()
for worker, prov in con.execute(
        "SELECT worker_id, provenance_json FROM results WHERE campaign_id = ?", (int(sys.argv[2]),)):
    workers.add(worker)
    words = json.loads(prov)["stderr_tail"].split()
    i = words.index("d")
    n, own = int(words[i + 1]), int(words[i + 2])
    printed += own
    received += n
    for d in words[i + 3:i + 3 + n]:
        print(d)
print(f"{len(workers)} workers ran the units; {printed} improvements printed, "
      f"{received} received by a solver on another worker (the rest were superseded "
      f"before they arrived, or printed by a solver with no other one running)", file=sys.stderr)
EOF
    percentiles "print on one worker -> b line on the other" <"$work/$name.samples"
    stop_serve_and_workers
}

# The PATH grind gives solvers (grind_exec::env::SOLVER_PATH): by hand too, so the solver's
# `#!/usr/bin/env python3` finds the same interpreter (a shell's PATH may put another one
# first, e.g. a pyenv shim and build: 0.95 against 1.64 CPU s for seed 3 here).
solver_path=/usr/local/bin:/usr/bin:/bin

labs_parallel() { # NICE
    local n=$1 t0 t1 labs="$BENCH_ROOT/examples/labs"
    rm -rf "$work/labs-$n"; mkdir -p "$work/labs-$n"
    t0=$(date +%s.%N)
    /usr/bin/time -f "%U %S" -o "$work/labs-$n.time" nice -n "$n" parallel -j2 \
        "PATH=$solver_path GRIND_SEED={} $labs/solve.py $labs/instances/27.txt > $work/labs-$n/{}.out" \
        ::: $(seq 0 $((labs_seeds - 1)))
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc >>"$work/labs-walls-hand"
    printf '%-44s wall %8.2f s  CPU %8.2f s  best %s; tabu steps %s\n' "parallel -j2 solve.py (by hand)" \
        "$(echo "$t1 - $t0" | bc)" "$(awk '{print $1 + $2}' "$work/labs-$n.time")" \
        "$(cat "$work/labs-$n"/*.out | awk '/^o /{print $2}' | sort -n | head -1)" \
        "$(cat "$work/labs-$n"/*.out | awk '/^c best/{s += $5} END {print s}')"
}

labs_grind() { # NICE
    local n=$1 t0 t1 labs="$BENCH_ROOT/examples/labs" out
    t0=$(date +%s.%N)
    out=$(/usr/bin/time -f "%U %S" -o "$work/labs-grind-$n.time" nice -n "$n" "$GRIND" run exec \
        --solver "$labs/solve.py" --checker "$labs/check.py" --instance "$labs/instances/27.txt" \
        --objective min --units "seeds:$labs_seeds" --unit-seconds 600 --workers 1 --threads 2 \
        --verify-rate 0 --json 2>"$work/labs-grind-$n.log" | tail -1)
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc >>"$work/labs-walls-grind"
    printf '%-44s wall %8.2f s  CPU %8.2f s  best %s; units CPU %s s\n' "grind run exec (campaign)" \
        "$(echo "$t1 - $t0" | bc)" "$(awk '{print $1 + $2}' "$work/labs-grind-$n.time")" \
        "$(echo "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["value"])')" \
        "$(echo "$out" | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["cpu_seconds"], 2))')"
}

part_c() { # NICE
    local n=$1
    echo "--- c. LABS N=27 to the optimum 37, seeds 0..$((labs_seeds - 1)) on 2 cores, nice $n, order ABBA; $(uptime)"
    # The same runs (each seed's search is deterministic: it stops at the target), in the
    # order by hand, grind, grind, by hand, so a load that changes during the part hits both.
    rm -f "$work/labs-walls-hand" "$work/labs-walls-grind"
    for _ in $(seq "${LABS_ROUNDS:-1}"); do
        labs_parallel "$n"
        labs_grind "$n"
        labs_grind "$n"
        labs_parallel "$n"
    done
    python3 - "$work/labs-walls-hand" "$work/labs-walls-grind" <<'EOF'
import statistics, sys
walls = [[float(x) for x in open(path).read().split()] for path in sys.argv[1:3]]
for name, w in zip(["parallel -j2 (by hand)", "grind run exec"], walls):
    print(f"{name:<24} n={len(w):<3} mean {statistics.mean(w):6.2f} s  median "
          f"{statistics.median(w):6.2f} s  min {min(w):6.2f}  max {max(w):6.2f}  "
          f"sd {statistics.stdev(w) if len(w) > 1 else 0:5.2f}")
ratio = statistics.mean(walls[1]) / statistics.mean(walls[0])
print(f"grind's mean wall over by hand's: {ratio:.3f}")
EOF
}

for n in $nices; do
    for part in $parts; do "part_$part" "$n"; done
done
echo "done; $(uptime)"
