# shellcheck shell=bash
# The header every bench/*.sh sources first:
#   . "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# It sets strict mode, moves to the repository root (so relative paths are the repo's; the
# caller's directory is kept in BENCH_CALLER_DIR), kills
# the processes started with start_bg / start_serve and removes the paths given to
# remove_at_exit when the script exits, and defines:
#   machine_line           one line for BENCHMARKS.md: CPU model, cores, load, commit, date
#   build_release [ARGS]   `cargo build -q --release ARGS` (default: the grind and
#                          grind-worker binaries), once per script; BIN_DIR=dir skips the
#                          build and uses the binaries there. Sets GRIND and WORKER.
#   remove_at_exit PATH    remove PATH (a temporary directory, say) when the script exits
#   free_port              a loopback TCP port nothing listens on now
#   start_bg CMD...        CMD in the background, killed at exit ($! is its pid)
#   start_serve LOG [FLAGS...]
#                          `$GRIND serve --listen 127.0.0.1:0 FLAGS` in the background (stderr
#                          to LOG, killed at exit), once it answers; sets SERVE_PID, SERVE_URL
set -euo pipefail

# shellcheck disable=SC2034 # used by the scripts that source this
BENCH_CALLER_DIR="$PWD"
BENCH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$BENCH_ROOT"

bench_pids=()
bench_paths=()
bench_built=""

bench_cleanup() {
    local pid path
    for pid in "${bench_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for path in "${bench_paths[@]}"; do rm -rf "$path"; done
}
trap bench_cleanup EXIT

machine_line() {
    echo "machine: $(lscpu | grep 'Model name' | sed 's/.*: *//'), $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg); commit $(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown); $(date -u +%FT%TZ)"
}

build_release() {
    if [ -z "${BIN_DIR:-}" ] && [ -z "$bench_built" ]; then
        if [ $# -eq 0 ]; then set -- --bin grind --bin grind-worker; fi
        cargo build -q --release "$@"
        bench_built=yes
    fi
    local dir="${BIN_DIR:-$BENCH_ROOT/target/release}"
    GRIND="$dir/grind"
    # shellcheck disable=SC2034 # used by the scripts that source this
    WORKER="$dir/grind-worker"
}

remove_at_exit() {
    bench_paths+=("$1")
}

free_port() {
    local port
    for _ in $(seq 100); do
        port=$((20000 + RANDOM % 40000))
        # A refused connection: nothing listens there.
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            echo "$port"
            return 0
        fi
    done
    echo "free_port: no free loopback port found" >&2
    return 1
}

start_bg() {
    "$@" &
    bench_pids+=($!)
}

start_serve() {
    local log=$1 out="$1.out"
    shift
    "$GRIND" serve --listen 127.0.0.1:0 "$@" >"$out" 2>"$log" &
    SERVE_PID=$!
    bench_pids+=("$SERVE_PID")
    SERVE_URL=""
    # Up to 30 s for its "listening on ADDR" line, then for its first answer (it serves once
    # its start-up write is done).
    for _ in $(seq 300); do
        if [ -z "$SERVE_URL" ] && grep -q "listening on" "$out" 2>/dev/null; then
            SERVE_URL="http://$(awk '/listening on/ {print $NF; exit}' "$out")"
        fi
        if [ -n "$SERVE_URL" ] && "$GRIND" campaign list --coordinator "$SERVE_URL" >/dev/null 2>&1; then
            return 0
        fi
        if ! kill -0 "$SERVE_PID" 2>/dev/null; then break; fi
        sleep 0.1
    done
    echo "grind serve did not start; its log:" >&2
    tail -n 20 "$log" >&2
    return 1
}
