#!/usr/bin/env bash
# What proving the sieve (Taxman) frontier further would cost, from the records themselves.
# For every N in FIT..B it derives the root's cluster-cut bound (`sieve_tree --root-bounds`,
# about 0.2-0.7 s an N) and its gap to the published optimum; it fits ln(CPU seconds) of
# records/sieve.tsv's searched rows (units > 0) of solver version VERSION against that gap
# (least squares), then predicts the CPU of every N past the frontier up to B that needs a
# search: those whose published optimum is below the ceiling N - 1 gives
# (`sieve::family::ceiling`; the others close at their ceiling with no search).
#   bench/sieve_cost_model.sh B [FIT [VERSION]]     (default FIT 736, VERSION 7)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
to=${1:?last N}
fit_from=${2:-736}
version=${3:-7}
bounds=$(mktemp)
remove_at_exit "$bounds"
cargo bench -q -p grind-shared --bench sieve_tree -- --root-bounds "$fit_from" "$to" 1 >"$bounds"
awk -F'\t' -v version="$version" '
  function is_prime(k,   d) { if (k < 2) return 0; for (d = 2; d * d <= k; d++) if (k % d == 0) return 0; return 1 }
  FILENAME == ARGV[1] { if ($1 ~ /^[0-9]+$/) gap[$1] = $6; next }
  FILENAME == ARGV[2] { if ($1 !~ /^#/ && NF) opt[++terms] = $1; next }
  $1 !~ /^#/ {
    if ($1 > frontier) frontier = $1
    if ($4 > 0 && $8 == version && ($1 in gap)) {
      x = gap[$1]; y = log($6); k++; sx += x; sy += y; sxx += x * x; sxy += x * y; syy += y * y
    }
  }
  END {
    if (k < 3) { print "fewer than 3 searched rows of solver version " version " to fit"; exit 1 }
    b = (k * sxy - sx * sy) / (k * sxx - sx * sx); a = (sy - b * sx) / k
    r = (k * sxy - sx * sy) / sqrt((k * sxx - sx * sx) * (k * syy - sy * sy))
    printf "fit over %d searched rows (solver version %s): ln(CPU s) = %.3f + %.4f * cut gap, r = %.3f;", k, version, a, b, r
    printf " the CPU doubles every %.1f points of root cut gap\n", log(2) / b
    print "N\tcut gap\tpredicted CPU s"
    for (n = frontier + 1; n in gap; n++) {
      drop = 0
      if (is_prime(n)) { for (p = n - 1; !is_prime(p); p--) ; drop = p }
      if (opt[n] >= opt[n - 1] + n - drop) continue
      cpu = exp(a + b * gap[n]); total += cpu; searched++
      if (cpu > worst) { worst = cpu; hardest = n }
      printf "%d\t%d\t%.0f\n", n, gap[n], cpu
    }
    printf "N = %d..%d: %d need a search, predicted %.0f CPU s (%.1f CPU hours) in all, the most %.0f (N = %d)\n",
      frontier + 1, n - 1, searched, total, total / 3600, worst, hardest
  }' "$bounds" records/a019312.txt records/sieve.tsv
