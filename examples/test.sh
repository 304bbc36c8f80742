#!/usr/bin/env bash
# Tests for the two example solvers (LABS in Python, Golomb rulers in C), run as real programs.
#
#   examples/test.sh            (needs python3 and cc; takes about 10-30 s on 2 cores)
#
# Reference values: OEIS A102780 (optimal LABS energies, offset 1) and OEIS A003022 (optimal
# Golomb ruler lengths, offset 2). The last line is "N passed, M failed"; the exit status is 1
# if anything failed.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
LABS=$HERE/labs
GOLOMB=$HERE/golomb
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
passed=0
failed=0

pass() { passed=$((passed + 1)); echo "ok   $1"; }
fail() { failed=$((failed + 1)); echo "FAIL $1"; }
# expect NAME CONDITION...: passes if the command succeeds.
expect() { local name=$1; shift; if "$@"; then pass "$name"; else fail "$name"; fi; }

# wait_for SECONDS COMMAND...: polls COMMAND every 0.05 s until it succeeds; 1 on timeout.
wait_for() {
    local deadline=$(($(date +%s%N) + $1 * 1000000000)); shift
    until "$@"; do
        [ "$(date +%s%N)" -ge "$deadline" ] && return 1
        sleep 0.05
    done
}

# The last `o` value in a solver's output, and the `v` lines that follow it.
last_cost() { grep '^o ' "$1" | tail -n 1 | cut -d' ' -f2; }
last_model() { awk '/^o /{m=""} /^v /{m=m $0 "\n"} END{printf "%s", m}' "$1"; }
export -f last_cost last_model

# every_claim_checks CHECKER INSTANCE OUTPUT: every o/v pair of OUTPUT is scored by the checker
# exactly as the solver claimed it (the solver's claims are honest).
every_claim_checks() {
    local dir=$WORK/claims.$$ k=0 f claim
    rm -rf "$dir"; mkdir -p "$dir"
    awk -v d="$dir" '/^o /{k++; f=sprintf("%s/%04d", d, k); print $2 > (f ".claim")} /^v /{print > (f ".sol")}' "$3"
    for f in "$dir"/*.claim; do
        claim=$(cat "$f")
        checker_says "$1" "$2" "${f%.claim}.sol" 0 "$claim" || return 1
        k=$((k + 1))
    done
    echo "    $k claims checked"
    [ "$k" -gt 1 ]
}

# checker_says CHECKER INSTANCE SOLUTION EXIT [SCORE]: the checker exits EXIT (and prints SCORE).
checker_says() {
    local out code
    out=$(python3 "$1" "$2" "$3" 2>&1); code=$?
    [ "$code" -eq "$4" ] || { echo "    exit $code, wanted $4: $out"; return 1; }
    [ $# -lt 5 ] || [ "$(head -n 1 <<<"$out")" = "$5" ] || { echo "    said: $out"; return 1; }
}

# stops_on_sigterm SECONDS OUT COMMAND...: starts COMMAND (stdout to OUT), waits for its first
# `o` line, sends SIGTERM, and passes if it exits within SECONDS having printed an `s` line.
stops_on_sigterm() {
    local secs=$1 out=$2; shift 2
    "$@" > "$out" 2>&1 < /dev/null &
    local pid=$!
    wait_for 60 grep -q '^o ' "$out" || { kill -9 $pid; echo "    no o line"; return 1; }
    kill -TERM $pid
    local t0; t0=$(date +%s%N)
    wait_for "$secs" bash -c "! kill -0 $pid 2>/dev/null" || { kill -9 $pid; echo "    still running"; return 1; }
    wait $pid
    echo "    stopped $(( ($(date +%s%N) - t0) / 1000000 )) ms after SIGTERM"
    grep -q '^s ' "$out"
}

echo "== LABS (examples/labs)"
# A102780(1..30): the optimal energies of LABS, N = 1..30.
A102780=(0 1 1 2 2 7 3 8 12 13 5 10 6 19 15 24 32 25 29 26 26 39 47 36 36 45 37 50 62 59)

# The table as transcribed agrees with a brute force over all sequences (N <= 12), and the
# checker scores an optimal sequence with exactly that energy.
brute=$(python3 - <<'EOF'
from itertools import product
for n in range(2, 13):
    def e(s):
        return sum(sum(s[i] * s[i + k] for i in range(n - k)) ** 2 for k in range(1, n))
    best = min(product((1, -1), repeat=n), key=e)
    print(n, e(best), "".join("1" if x > 0 else "0" for x in best))
EOF
)
ok=1
while read -r n e seq; do
    [ "$e" = "${A102780[$((n - 1))]}" ] || { echo "    N=$n: brute force $e, table ${A102780[$((n - 1))]}"; ok=0; }
    echo "$n" > "$WORK/labs-$n.txt"; echo "v $seq" > "$WORK/labs-$n.sol"
    checker_says "$LABS/check.py" "$WORK/labs-$n.txt" "$WORK/labs-$n.sol" 0 "$e" || ok=0
done <<<"$brute"
expect "LABS: brute force N=2..12 matches A102780 and the checker" [ $ok = 1 ]

# The solver finds the published optimum (given as its target) and the checker agrees.
for n in 20 24; do
    e=${A102780[$((n - 1))]}
    printf '%s\ntarget %s\n' "$n" "$e" > "$WORK/t$n.txt"
    t0=$(date +%s)
    GRIND_SEED=1 timeout 120 python3 "$LABS/solve.py" "$WORK/t$n.txt" < /dev/null > "$WORK/t$n.out"
    echo "    N=$n: $(grep '^c best' "$WORK/t$n.out")"
    last_model "$WORK/t$n.out" > "$WORK/t$n.sol"
    expect "LABS: N=$n reaches the optimum $e and says OPTIMUM FOUND" \
        bash -c "[ \"\$(last_cost $WORK/t$n.out)\" = $e ] && grep -qx 's OPTIMUM FOUND' $WORK/t$n.out"
    expect "LABS: the checker scores N=$n's solution $e" \
        checker_says "$LABS/check.py" "$WORK/t$n.txt" "$WORK/t$n.sol" 0 "$e"
    expect "LABS: the checker accepts N=$n's whole output" \
        checker_says "$LABS/check.py" "$WORK/t$n.txt" "$WORK/t$n.out" 0 "$e"
done
expect "LABS: every o line of N=24's run is the energy of its v line" \
    every_claim_checks "$LABS/check.py" "$WORK/t24.txt" "$WORK/t24.out"

GRIND_INSTANCE="$WORK/t20.txt" GRIND_SEED=3 timeout 120 python3 "$LABS/solve.py" 17 < /dev/null > "$WORK/env20.out"
expect "LABS: instance from GRIND_INSTANCE, a stray argument ignored" \
    bash -c "[ \"\$(last_cost $WORK/env20.out)\" = ${A102780[19]} ]"

# The checker refuses wrong claims and malformed solutions with exit 43, and fails with
# another code when it cannot do its job.
inst=$WORK/t20.txt
sol=$(cat "$WORK/t20.sol")
bad() { printf '%b' "$2" > "$WORK/bad.sol"; expect "LABS checker: $1" checker_says "$LABS/check.py" "$inst" "$WORK/bad.sol" 43; }
bad "wrong claimed energy" "o 25\n$sol\n"
bad "too short" "v 0101\n"
bad "too long" "$sol""1\n"
bad "bad symbol" "v 0101010101x101010101\n"
bad "no v line" "c nothing\n"
bad "garbage line" "hello\n$sol\n"
bad "non-integer o" "o 2.5\n$sol\n"
expect "LABS checker: missing instance is a checker failure (exit 2)" \
    checker_says "$LABS/check.py" "$WORK/none.txt" "$WORK/t20.sol" 2
sed 's/1/+/g; s/0/-/g' "$WORK/t20.sol" > "$WORK/pm.sol"
expect "LABS checker: scores the +/- form the same" \
    checker_says "$LABS/check.py" "$inst" "$WORK/pm.sol" 0 "${A102780[19]}"

# A bound line on stdin: the campaign already has N=40's optimum (108), so the solver stops.
printf '40\ntarget 108\n' > "$WORK/t40.txt"
echo "b 108" | GRIND_SEED=1 timeout 60 python3 "$LABS/solve.py" "$WORK/t40.txt" > "$WORK/b40.out"
expect "LABS: logs the bound it receives" grep -qx 'c received bound 108' "$WORK/b40.out"
expect "LABS: stops when the campaign's bound reaches the target" \
    bash -c "grep -q '^c the campaign has reached 108' $WORK/b40.out && grep -qx 's SATISFIABLE' $WORK/b40.out"

# SIGTERM stops it promptly; what it printed last is a valid solution; its checkpoint resumes.
echo 64 > "$WORK/t64.txt"
mkdir -p "$WORK/ckpt"
expect "LABS: SIGTERM stops the solver within 3 s" \
    stops_on_sigterm 3 "$WORK/term.out" env GRIND_CHECKPOINT_DIR="$WORK/ckpt" python3 "$LABS/solve.py" "$WORK/t64.txt"
last_model "$WORK/term.out" > "$WORK/term.sol"
expect "LABS: the last solution before SIGTERM checks out" \
    checker_says "$LABS/check.py" "$WORK/t64.txt" "$WORK/term.sol" 0 "$(last_cost "$WORK/term.out")"
GRIND_CHECKPOINT_DIR="$WORK/ckpt" GRIND_TIME_LIMIT=1 timeout 30 python3 "$LABS/solve.py" "$WORK/t64.txt" < /dev/null > "$WORK/resume.out"
expect "LABS: a new run resumes from the checkpoint" bash -c \
    "grep -qx 'c resumed from checkpoint' $WORK/resume.out && [ \"\$(grep -m1 '^o ' $WORK/resume.out | cut -d' ' -f2)\" = \"$(last_cost "$WORK/term.out")\" ]"
expect "LABS: GRIND_TIME_LIMIT=1 stops it by itself" grep -qx 'c stopping: time limit' "$WORK/resume.out"

echo "== Golomb rulers (examples/golomb)"
# A003022(n) for n = 2..12 marks.
declare -A A003022=([2]=1 [3]=3 [4]=6 [5]=11 [6]=17 [7]=25 [8]=34 [9]=44 [10]=55 [11]=72 [12]=85)
BIN=$WORK/golomb
expect "Golomb: builds with cc -O2" cc -O2 -Wall -Wextra -Werror -o "$BIN" "$GOLOMB/golomb.c"

# Every unit of the units file, then the minimum over units: the published optimum.
for n in 5 8 9 10; do
    echo "$n" > "$WORK/g$n.txt"
    "$BIN" --units "$WORK/g$n.txt" > "$WORK/g$n.units"
    best=""; complete=1; nodes=0
    while read -r unit; do
        "$BIN" "$WORK/g$n.txt" "$unit" < /dev/null > "$WORK/g$n-$unit.out"
        grep -q '^c slice .* done' "$WORK/g$n-$unit.out" || complete=0
        nodes=$((nodes + $(grep '^c nodes' "$WORK/g$n-$unit.out" | cut -d' ' -f3)))
        c=$(last_cost "$WORK/g$n-$unit.out")
        if [ -n "$c" ] && { [ -z "$best" ] || [ "$c" -lt "$best" ]; }; then best=$c; bestunit=$unit; fi
    done < "$WORK/g$n.units"
    echo "    n=$n: $(wc -l < "$WORK/g$n.units") units, $nodes nodes, best $best (unit $bestunit)"
    expect "Golomb: n=$n, every unit searched to the end" [ $complete = 1 ]
    expect "Golomb: n=$n, minimum over units = A003022 = ${A003022[$n]}" [ "$best" = "${A003022[$n]}" ]
    last_model "$WORK/g$n-$bestunit.out" > "$WORK/g$n.sol"
    expect "Golomb: n=$n, the checker scores the best ruler ${A003022[$n]}" \
        checker_says "$GOLOMB/check.py" "$WORK/g$n.txt" "$WORK/g$n.sol" 0 "${A003022[$n]}"
done
expect "Golomb: every o line of n=10 unit 4 is the length of its valid ruler" \
    every_claim_checks "$GOLOMB/check.py" "$WORK/g10.txt" "$WORK/g10-4.out"
"$BIN" "$WORK/g9.txt" < /dev/null > "$WORK/g9-all.out"
expect "Golomb: n=9 without a unit (all slices) finds ${A003022[9]} and says OPTIMUM FOUND" \
    bash -c "[ \"\$(last_cost $WORK/g9-all.out)\" = ${A003022[9]} ] && grep -qx 's OPTIMUM FOUND' $WORK/g9-all.out"
"$BIN" "$WORK/g10.txt" "1-3" < /dev/null > "$WORK/g10-range.out"
expect "Golomb: a range unit 1-3 covers its slices (finds 55, from slice 1)" \
    bash -c "[ \"\$(last_cost $WORK/g10-range.out)\" = 55 ] && grep -q '^c slice d1=1..3 done' $WORK/g10-range.out"

GRIND_INSTANCE="$WORK/g10.txt" GRIND_UNIT=2 "$BIN" < /dev/null > "$WORK/g10-env.out"
expect "Golomb: instance and unit from GRIND_INSTANCE and GRIND_UNIT (same as argv)" \
    bash -c "[ \"\$(last_cost $WORK/g10-env.out)\" = \"\$(last_cost $WORK/g10-2.out)\" ] && grep -q '^c slice d1=2..2 done' $WORK/g10-env.out"
GRIND_INSTANCE="$WORK/g10.txt" "$BIN" 3 < /dev/null > "$WORK/g10-arg.out"
expect "Golomb: a single argument that is no file is the unit (instance from GRIND_INSTANCE)" \
    grep -q '^c slice d1=3..3 done' "$WORK/g10-arg.out"

# A bound on stdin: the same unit explores fewer nodes and prints no ruler (none is shorter).
echo "b 55" | "$BIN" "$WORK/g10.txt" 1 > "$WORK/g10-b.out"
free_nodes=$(grep '^c nodes' "$WORK/g10-1.out" | cut -d' ' -f3)
bound_nodes=$(grep '^c nodes' "$WORK/g10-b.out" | cut -d' ' -f3)
echo "    n=10 unit 1: $free_nodes nodes alone, $bound_nodes with b 55"
expect "Golomb: logs the bound it receives" grep -qx 'c received bound 55' "$WORK/g10-b.out"
expect "Golomb: b 55 makes unit 1 explore fewer nodes" [ "$bound_nodes" -lt "$free_nodes" ]
expect "Golomb: with b 55 nothing is printed, the slice is done, s UNKNOWN" bash -c \
    "! grep -q '^o ' $WORK/g10-b.out && grep -q 'no ruler in it is shorter than 55' $WORK/g10-b.out && grep -qx 's UNKNOWN' $WORK/g10-b.out"
# A bound arriving while the search runs (stdin held open, line sent after the first `o`).
# n = 12's first slice runs for seconds, so the solver is still searching when the line
# arrives (n = 10's slices can end before it on a quiet machine). The bound is 86, one above
# A003022's 85 for 12 marks, which lies in another slice: a solver that uses it prints no
# ruler of 86 or more after receiving it, one that ignores it goes on improving above 86. The
# write ignores SIGPIPE: a solver that has already exited fails this check instead of killing
# the script.
cp "$GOLOMB/instances/12.txt" "$WORK/g12.txt"
mkfifo "$WORK/fifo"
"$BIN" "$WORK/g12.txt" 1 < "$WORK/fifo" > "$WORK/g12-late.out" &
gpid=$!
exec 3> "$WORK/fifo"
wait_for 30 grep -q '^o ' "$WORK/g12-late.out"
late_bound=86
(trap '' PIPE; echo "b $late_bound" >&3) 2>/dev/null || true
exec 3>&-
wait $gpid
expect "Golomb: a bound received mid-search is used (only rulers < ${late_bound} printed after it)" bash -c \
    "awk -v B='${late_bound}' '/^c received bound /{b = (\$4 == B)} b && /^o /{if (\$2 >= B) bad=1} END{exit !(b && !bad)}' $WORK/g12-late.out"
"$BIN" "$WORK/g12.txt" 1 < /dev/null > "$WORK/g12-free.out"
late_nodes=$(awk '/^c nodes /{print $3}' "$WORK/g12-late.out")
free12_nodes=$(awk '/^c nodes /{print $3}' "$WORK/g12-free.out")
expect "Golomb: the bound received mid-search cut the slice (${late_nodes} nodes, ${free12_nodes} without)" \
    [ "${late_nodes:-999999999999}" -lt "${free12_nodes:-0}" ]

# SIGTERM and the time limit stop the search promptly; the last ruler printed checks out.
expect "Golomb: SIGTERM stops n=12 within 1 s" stops_on_sigterm 1 "$WORK/g12-term.out" "$BIN" "$WORK/g12.txt"
expect "Golomb: says why it stopped" grep -qx 'c stopped by SIGTERM' "$WORK/g12-term.out"
last_model "$WORK/g12-term.out" > "$WORK/g12.sol"
expect "Golomb: the last ruler before SIGTERM checks out" \
    checker_says "$GOLOMB/check.py" "$WORK/g12.txt" "$WORK/g12.sol" 0 "$(last_cost "$WORK/g12-term.out")"
t0=$(date +%s%N)
GRIND_TIME_LIMIT=1 timeout 20 "$BIN" "$WORK/g12.txt" < /dev/null > "$WORK/g12-tl.out"
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
expect "Golomb: GRIND_TIME_LIMIT=1 stops it by itself (${ms} ms)" \
    bash -c "[ $ms -lt 3000 ] && grep -qx 'c stopped by the time limit' $WORK/g12-tl.out"

# The checker refuses what is not an n-mark Golomb ruler with exit 43.
inst=$WORK/g5.txt
gbad() { printf '%b' "$2" > "$WORK/gbad.sol"; expect "Golomb checker: $1" checker_says "$GOLOMB/check.py" "$inst" "$WORK/gbad.sol" 43; }
gbad "repeated difference" "v 0 1 2 4 8\n"
gbad "too few marks" "v 0 1 4 9\n"
gbad "not starting at 0" "v 1 2 5 10 12\n"
gbad "not increasing" "v 0 4 1 9 11\n"
gbad "wrong claimed length" "o 10\nv 0 1 4 9 11\n"
gbad "not a number" "v 0 1 4 nine 11\n"
gbad "garbage line" "0 1 4 9 11\n"
printf 'v 0 1 4 9 11\n' > "$WORK/g5ok.sol"
expect "Golomb checker: 0 1 4 9 11 is valid, length 11" checker_says "$GOLOMB/check.py" "$inst" "$WORK/g5ok.sol" 0 11
printf 'marks\n' > "$WORK/gbad.txt"
expect "Golomb: a bad instance file is an error (exit 2) naming the file" bash -c \
    "\"$BIN\" $WORK/gbad.txt 1 </dev/null 2>&1 >/dev/null | grep -q gbad.txt && [ \"\${PIPESTATUS[0]}\" = 2 ]"
printf '0\n' > "$WORK/lbad.txt"
expect "LABS: a bad instance file is an error (exit 1) naming the file" bash -c \
    "python3 $LABS/solve.py $WORK/lbad.txt </dev/null 2>&1 >/dev/null | grep -q lbad.txt && [ \"\${PIPESTATUS[0]}\" = 1 ]"
expect "Golomb: bad unit is a usage error (exit 2)" bash -c "\"$BIN\" $inst x-1 </dev/null >/dev/null 2>&1; [ \$? = 2 ]"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
