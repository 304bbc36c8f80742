#!/usr/bin/env bash
# Bundle transfer rate on loopback (issue 29), with the commands a user types, against
# `grind serve` on a fresh database:
#   - grind bundle add FILE        pack into a temporary file, Stat, Upload (the coordinator
#                                  hashes, writes, fsyncs and renames it), as `campaign add`
#                                  does for a solver;
#   - grind bundle add FILE again  pack and Stat only: nothing is sent;
#   - grind bundle get DIGEST DIR  Fetch, check the digest and unpack, as a worker does on a
#                                  cache miss.
# References in the same run on the same file: `sha256sum FILE` (one read and hash) and
# `cp FILE` + `sync` (one copy to disk). Files are random bytes (nothing compresses).
# Release build; wall time from the shell around each command.
# Usage: bench/bundles.sh [SIZES_MB, default "100 500"] [ROUNDS, default 1]
#        (GRIND_BIN=path: measure that grind binary instead of building a release one)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here/.."
sizes="${1:-100 500}"
rounds="${2:-1}"
if [ -n "${GRIND_BIN:-}" ]; then
  grind="$GRIND_BIN" # another build (say, a debug one, to try the script)
else
  cargo build -q --release --bin grind
  grind="$PWD/target/release/grind"
fi
work="$(mktemp -d "${TMPDIR:-/tmp}/grind-bundles-bench.XXXXXX")"
serve_pid=""
cleanup() {
  if [ -n "$serve_pid" ]; then kill "$serve_pid" 2>/dev/null || true; wait "$serve_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

echo "machine: $(lscpu | grep 'Model name' | sed 's/.*: *//'), $(nproc) CPUs; disk: $(df -h "$work" | awk 'NR==2 {print $1}')"
echo "commit: $(git rev-parse --short HEAD)  date: $(date -u +%FT%TZ)  load: $(cut -d' ' -f1-3 /proc/loadavg)"

mkfifo "$work/serve.out"
"$grind" serve --listen 127.0.0.1:0 --db "$work/bench.db" >"$work/serve.out" 2>"$work/serve.log" &
serve_pid=$!
read -r line <"$work/serve.out"
url="http://${line##* }"
echo "coordinator: $url"

timed() { # label bytes command...
  local label=$1 bytes=$2 t0 t1 s
  shift 2
  t0=$(date +%s.%N)
  "$@" >/dev/null 2>"$work/cmd.log" || { cat "$work/cmd.log" >&2; exit 1; }
  t1=$(date +%s.%N)
  s=$(echo "$t1 - $t0" | bc)
  printf '%-40s %8.3f s  %8.1f MB/s\n' "$label" "$s" "$(echo "$bytes / 1000000 / $s" | bc -l)"
}

for size in $sizes; do
  file="$work/solver-$size.bin"
  head -c "$((size * 1000000))" /dev/urandom >"$file"
  bytes=$((size * 1000000))
  for round in $(seq "$rounds"); do
    echo "--- $size MB, round $round (load $(cut -d' ' -f1 /proc/loadavg))"
    timed "sha256sum FILE (reference)" "$bytes" sha256sum "$file"
    timed "cp FILE + sync (reference)" "$bytes" sh -c "cp '$file' '$work/copy' && sync '$work/copy'"
    rm -f "$work/copy"
    timed "grind bundle add FILE (upload)" "$bytes" "$grind" bundle add --coordinator "$url" "$file"
    digest=$("$grind" bundle add --coordinator "$url" "$file" 2>/dev/null | tail -n 1)
    timed "grind bundle add FILE (stored: no send)" "$bytes" "$grind" bundle add --coordinator "$url" "$file"
    timed "grind bundle get DIGEST DIR (fetch)" "$bytes" "$grind" bundle get --coordinator "$url" "$digest" "$work/got"
    cmp "$file" "$work/got/solver-$size.bin"
    rm -rf "$work/got" "$work/bench.db.bundles/unpacked"/*
    # A bundle whose file is gone counts as missing: the next round uploads it again.
    rm -f "$work/bench.db.bundles/blobs/${digest#sha256:}"
  done
  rm -f "$file"
done
