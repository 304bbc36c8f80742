#!/usr/bin/env bash
# Proves the sieve (Taxman game, OEIS A019312) optimum for every N in A..B with grind's own
# solver (release build, in-process campaign on THREADS threads) and appends one row per N to
# records/sieve.tsv (value, root bound, units, nodes, CPU and wall seconds, solver and grind
# versions, commit, date, an optimal game), resuming after the largest N already recorded and,
# within an N, after the units a stopped run finished (records/in-progress/N.jsonl).
#   [UNITS=K] bench/sieve_record.sh A B [THREADS]     (default THREADS: 2, K: 2048 units an N;
#   the tree is the campaigns', cut finer so that a stopped run loses less; a unit donates its
#   untried subtrees to a thread left without work, sieve::work_queue). Stop it with
#   `touch target/sieve-record.stop` (it then exits within seconds, its open units journaled
#   with their checkpoints); a kill loses the open units' work since the last snapshot
#   (every SNAPSHOT_MINUTES, default 10, the open units are journaled with their checkpoints).
#   From N = NODE_CUTS_FROM (default 785, where exact campaigns start using them) on, units
#   also prune by cut bounds kept warm down their trees (the same tree: a proof journaled
#   without them is finished with them). Their LPs also take rank cuts (unions of two root
#   clusters of at most RANK_UNION numbers, default 30, proven once per N; RANK_UNION=0
#   turns them off; the same tree). With them, branching nodes whose subtree took
#   LOCAL_RANKS nodes (default 0: every branching node; empty turns it off) also prove rank cuts of their own
#   (unions of two tight clusters of their LP, ranked with their fixed pairs; the same tree).
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
from=${1:?first N}
to=${2:?last N}
threads=${3:-2}
record=records/sieve.tsv
commit=$(git rev-parse --short=12 HEAD)
# Resume after the largest N already recorded.
last=$(awk -F'\t' '!/^#/ && $1 > max { max = $1 } END { print max + 0 }' "$record")
if (( last >= from )); then from=$((last + 1)); fi
if (( from > to )); then echo "N <= $last already recorded"; exit 0; fi
uptime
# Each row is appended by reopening the file, so that a row proven after the file was
# replaced (a checkout, a stash) lands in the file as it is then instead of being lost.
# Finished units are journaled in records/in-progress/N.jsonl (removed once N's row is
# written): a run stopped mid-N resumes there, also from a clone when the file is committed.
# `touch target/sieve-record.stop` stops the run gracefully: each search stops at its next
# checkpoint, and the units left open are journaled with their checkpoints (a unit holding
# hours of work is resumed there, not searched again). The run removes the file when it
# starts.
stop=$PWD/target/sieve-record.stop
mkdir -p records/in-progress target
# One run at a time: two would append the same rows and journal lines twice.
exec 9>"$PWD/target/sieve-record.lock"
if ! flock -n 9; then
  echo "another records run holds target/sieve-record.lock" >&2
  exit 1
fi
rm -f "$stop"
rank_flags=()
if (( ${RANK_UNION:-30} > 0 )); then
  rank_flags=(--rank-union "${RANK_UNION:-30}")
  if [[ -n ${LOCAL_RANKS-0} ]]; then rank_flags+=(--local-ranks "${LOCAL_RANKS-0}"); fi
fi
cargo bench -q -p grind-shared --bench sieve -- --threads "$threads" --record "$from" "$to" "$commit" \
  --units "${UNITS:-2048}" --journal "$PWD/records/in-progress" --stop-file "$stop" \
  --snapshot-minutes "${SNAPSHOT_MINUTES:-10}" \
  --node-cuts-from "${NODE_CUTS_FROM:-785}" ${rank_flags[@]+"${rank_flags[@]}"} |
  while IFS= read -r row; do
    printf '%s\n' "$row" >>"$record"
  done
