#!/bin/sh
# HTCondor wrapper for grind-worker (see grind-worker.sub): finds the transferred binary,
# token and CA file in the job's scratch directory and replaces itself with the worker, so
# HTCondor's SIGTERM reaches the worker directly (exec, no shell left in between).
set -eu

: "${GRIND_COORDINATOR:?GRIND_COORDINATOR is not set (environment = ... in grind-worker.sub)}"

bin=./grind-worker
if [ -f "$bin" ]; then
    chmod u+x "$bin"
elif command -v grind-worker >/dev/null 2>&1; then
    bin=$(command -v grind-worker)
else
    echo "grind-worker.sh: no grind-worker in the job directory or on PATH" >&2
    exit 1
fi

token=${GRIND_TOKEN_FILE:-worker.token}
if [ ! -r "$token" ]; then
    echo "grind-worker.sh: cannot read the token file $token" >&2
    exit 1
fi
chmod 0600 "$token" 2>/dev/null || true

set -- --coordinator "$GRIND_COORDINATOR" --token-file "$token" "$@"
if [ -s ca.pem ]; then
    set -- --ca-file ca.pem "$@"
fi

exec "$bin" "$@"
