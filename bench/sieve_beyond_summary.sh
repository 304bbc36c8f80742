#!/usr/bin/env bash
# Summarises records/sieve-beyond-1000.tsv (best row per N): how many N grind's game beats,
# equals or falls short of the published best known value, the gap (certified bound - game)
# distribution, the CPU spent per N (search: all rows of the N; rows that found nothing better
# are not written, so their CPU is not counted), and the N furthest from closing; plus, per N,
# how much of the published Franklín–Moniot gap (FM bound - published value) the certified
# bound closes.
#   bench/sieve_beyond_summary.sh [A B]     (only N = A..B)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export FROM=${1:-0} TO=${2:-1000000000}
python3 - <<'PY'
import os
import statistics
lo, hi = int(os.environ["FROM"]), int(os.environ["TO"])
best = {}
for line in open("records/sieve-beyond-1000.tsv"):
    if line.startswith("#") or not line.strip():
        continue
    c = line.rstrip("\n").split("\t")
    n, score = int(c[0]), int(c[1])
    if not lo <= n <= hi:
        continue
    cpu, bcpu = float(c[6]), float(c[7])
    if n in best:
        cpu += best[n]["cpu"]
        bcpu += best[n]["bcpu"]
    if n not in best or score >= best[n]["score"]:
        best[n] = dict(score=score, pub=None if c[2] == "-" else int(c[2]), bound=int(c[4]),
                       gap=int(c[5]))
    best[n]["cpu"], best[n]["bcpu"] = cpu, bcpu
fm = {}
for line in open("records/bvchess-best-1001-2000.tsv"):
    if not line.startswith("#"):
        c = line.split("\t")
        fm[int(c[0])] = int(c[3])
if not best:
    print("no rows")
    raise SystemExit
ns = sorted(best)
beats = [n for n in ns if best[n]["pub"] is not None and best[n]["score"] > best[n]["pub"]]
equal = [n for n in ns if best[n]["pub"] is not None and best[n]["score"] == best[n]["pub"]]
short = [n for n in ns if best[n]["pub"] is not None and best[n]["score"] < best[n]["pub"]]
print(f"N covered: {len(ns)} ({ns[0]}..{ns[-1]}{'' if len(ns) == ns[-1] - ns[0] + 1 else ', with holes'})")
print(f"beats published: {len(beats)}  equals: {len(equal)}  short: {len(short)}")
def runs(ns):
    """Consecutive N with the same difference, as 'a-b (d)'."""
    out, i = [], 0
    while i < len(ns):
        j, d = i, best[ns[i]]["score"] - best[ns[i]]["pub"]
        while j + 1 < len(ns) and ns[j + 1] == ns[j] + 1 and best[ns[j + 1]]["score"] - best[ns[j + 1]]["pub"] == d:
            j += 1
        out.append(f"{ns[i]}{'' if i == j else '-' + str(ns[j])} ({d:+})")
        i = j + 1
    return ", ".join(out)
if beats:
    leads = [best[n]["score"] - best[n]["pub"] for n in beats]
    print(f"  leads: min +{min(leads)}, median +{statistics.median(leads)}, max +{max(leads)}")
if short:
    print("  short at:", runs(short))
gaps = [best[n]["gap"] for n in ns]
print(f"gap (bound - game): min {min(gaps)}, median {statistics.median(gaps)}, mean {statistics.mean(gaps):.1f}, max {max(gaps)}; zero (proven optimal) at {sum(g == 0 for g in gaps)} N")
buckets = [(0, 0), (1, 99), (100, 199), (200, 299), (300, 399), (400, 499), (500, 10**9)]
print("gap histogram:", ", ".join(f"{lo}-{hi if hi < 10**9 else ''}: {sum(lo <= g <= hi for g in gaps)}" for lo, hi in buckets))
closed = [(fm[n] - best[n]["bound"]) / (fm[n] - best[n]["pub"]) for n in ns if n in fm and fm[n] > best[n]["pub"]]
if closed:
    print(f"share of the FM gap (FM bound - published) the certified bound closes: median {statistics.median(closed):.2f}, min {min(closed):.2f}, max {max(closed):.2f}")
cpu = [best[n]["cpu"] for n in ns]
bcpu = [best[n]["bcpu"] for n in ns if best[n]["bcpu"] > 0]
print(f"search CPU per N: mean {statistics.mean(cpu):.1f} s, total {sum(cpu):.0f} s; bound CPU per N: mean {statistics.mean(bcpu) if bcpu else 0:.1f} s, max {max(bcpu) if bcpu else 0:.1f} s")
hard = sorted(ns, key=lambda n: -best[n]["gap"])[:5]
print("largest gaps:", ", ".join(f"{n} ({best[n]['gap']})" for n in hard))
PY
