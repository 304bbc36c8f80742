#!/usr/bin/env python3
"""An anytime solver for Low Autocorrelation Binary Sequences (LABS), written for grind.

The problem: find a sequence s_1..s_N of +1/-1 that minimises the energy

    E(s) = sum_{k=1}^{N-1} C_k(s)^2,   C_k(s) = sum_{i=1}^{N-k} s_i * s_{i+k}.

Usage:  solve.py [INSTANCE]      (INSTANCE defaults to $GRIND_INSTANCE; other arguments, such
                                  as a unit or seed grind may pass, are ignored)

The instance file holds N (lines starting with '#' are comments). Optionally a line
`target <E>` gives a known optimal energy (e.g. from the published table): the solver stops
when it, or anyone in the campaign, reaches it.

What it speaks (grind's exec protocol, a superset of the MaxSAT Evaluation output format):

  stdout  `o <energy>` then `v <0/1 string>` on every improvement (1 = +1, 0 = -1),
          `c ...` comments, `g progress <0..1>` now and then, `g checkpoint` after saving,
          and one final `s OPTIMUM FOUND` (the target or the parity lower bound was reached)
          or `s SATISFIABLE` (stopped by SIGTERM, the time limit or a better bound).
  stdin   `b <energy>` lines: the best energy found anywhere in the campaign. Read by a
          thread, never blocking the search. Used to stop when the campaign has reached the
          target or the lower bound, and to restart sooner from scratch when someone else
          is ahead. Other lines and end of file are ignored. Each bound taken is logged
          (`c received bound <b>` on stdout, and on stderr with the solver's own best).
  env     GRIND_SEED (random seed, default 1), GRIND_TIME_LIMIT (seconds; stops itself
          just before it), GRIND_CHECKPOINT_DIR (best sequence saved there and resumed from).
  signal  SIGTERM (or SIGINT): stop at once; the best sequence has already been printed.

Search: tabu search with incremental energy updates (the local search of the memetic
algorithm of Gallardo, Cotta and Fernandez, 2009), restarted from a perturbed copy of the
best sequence or, after a long stall, from a random one. Standard library only.
"""

import os
import random
import signal
import sys
import threading
import time
from operator import mul

stop_requested = False


def on_stop_signal(_signum, _frame):
    """SIGTERM or SIGINT: ask the search loop to stop (it checks the flag after every step)."""
    global stop_requested
    stop_requested = True


def say(line):
    """Prints one protocol line and flushes, so grind sees it at once."""
    try:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        # Nobody is listening any more: stop quietly.
        global stop_requested
        stop_requested = True


def read_instance(path):
    """Returns (N, target or None) from the instance file; exits 2 with a message if bad."""
    n, target = None, None
    try:
        with open(path, encoding="utf-8") as f:
            for raw in f:
                line = raw.split("#", 1)[0].strip()
                if not line:
                    continue
                words = line.split()
                if words[0] == "target" and len(words) == 2:
                    target = int(words[1])
                elif len(words) == 1 and n is None:
                    n = int(words[0])
                else:
                    raise ValueError(f"unexpected line {raw.strip()!r}")
    except (OSError, ValueError) as e:
        sys.exit(f"solve.py: bad instance file {path}: {e}")
    if n is None or n < 2:
        sys.exit(f"solve.py: instance file {path} must give a length N >= 2")
    return n, target


class Bounds(threading.Thread):
    """Reads `b <value>` lines from stdin in the background; `best` is the lowest seen."""

    def __init__(self):
        super().__init__(daemon=True)
        self.best = None
        self.lock = threading.Lock()
        self.received = []  # values not yet logged by the main thread

    def run(self):
        for line in sys.stdin:
            words = line.split()
            if len(words) != 2 or words[0] != "b":
                continue
            try:
                value = int(words[1])
            except ValueError:
                continue
            with self.lock:
                self.received.append(value)
                if self.best is None or value < self.best:
                    self.best = value

    def take(self):
        """Returns (values received since the last call, lowest value ever)."""
        with self.lock:
            values, self.received = self.received, []
            return values, self.best


def correlations(s):
    """C_1..C_{N-1} of s (index 0 unused)."""
    n = len(s)
    return [0] + [sum(s[i] * s[i + k] for i in range(n - k)) for k in range(1, n)]


def energy_of(c):
    """E = sum of C_k^2."""
    return sum(x * x for x in c[1:])


def flip_energy_change(s, c, i):
    """E(s with s[i] flipped) - E(s), in O(N) but with the loops inside C (sum/map/slices).

    Flipping s_i changes C_k by d_k = -2 s_i t_k with t_k = s_{i+k} + s_{i-k} (a term
    missing when out of range), so the change is sum_k (2 C_k d_k + d_k^2)
    = -4 s_i sum_k C_k t_k + 4 sum_k t_k^2, and sum_k t_k^2 = N - 1 + 2 sum_k s_{i+k} s_{i-k}.
    """
    n = len(s)
    right = s[i + 1:]  # s_{i+k}, k = 1..N-1-i
    left = s[i - 1::-1] if i else []  # s_{i-k}, k = 1..i
    ct = sum(map(mul, c[1:], right)) + sum(map(mul, c[1:], left))
    cross = sum(map(mul, right, left))
    return -4 * s[i] * ct + 4 * (n - 1 + 2 * cross)


def apply_flip(s, c, i):
    """Flips s[i] and updates every C_k in O(N)."""
    n = len(s)
    si2 = -2 * s[i]
    for k in range(1, n):
        t = 0
        if i + k < n:
            t += s[i + k]
        if i - k >= 0:
            t += s[i - k]
        c[k] += si2 * t
    s[i] = -s[i]


def as_text(s):
    """The sequence as printed on `v` lines: 1 for +1, 0 for -1."""
    return "".join("1" if x > 0 else "0" for x in s)


def from_text(text, n):
    """The inverse of as_text, or None if text is not a sequence of length n."""
    if len(text) != n or set(text) - {"0", "1"}:
        return None
    return [1 if ch == "1" else -1 for ch in text]


class Checkpoint:
    """The best sequence in $GRIND_CHECKPOINT_DIR/best.txt, written by rename (atomic)."""

    def __init__(self, n):
        d = os.environ.get("GRIND_CHECKPOINT_DIR")
        self.path = os.path.join(d, "best.txt") if d else None
        self.n = n
        self.last_save = 0.0

    def load(self):
        if not self.path:
            return None
        try:
            with open(self.path, encoding="utf-8") as f:
                return from_text(f.read().strip(), self.n)
        except OSError:
            return None

    def save(self, s, force=False):
        """Saves at most every 2 s (or now, if forced); returns whether it wrote."""
        now = time.monotonic()
        if not self.path or (not force and now - self.last_save < 2.0):
            return False
        tmp = self.path + ".tmp"
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(as_text(s) + "\n")
            os.replace(tmp, self.path)
        except OSError as e:
            say(f"c checkpoint not written: {e}")
            return False
        self.last_save = now
        return True


def main():
    signal.signal(signal.SIGTERM, on_stop_signal)
    signal.signal(signal.SIGINT, on_stop_signal)  # Ctrl-C by hand: the same clean stop
    # The instance: the first argument if it names a file, else $GRIND_INSTANCE (so a
    # campaign that passes its unit or seed as an argument works too; they are ignored).
    args = sys.argv[1:]
    path = args[0] if args and os.path.isfile(args[0]) else os.environ.get("GRIND_INSTANCE")
    if not path:
        sys.exit("usage: solve.py INSTANCE   (or set GRIND_INSTANCE)")
    n, target = read_instance(path)
    seed = int(os.environ.get("GRIND_SEED", "1"))
    limit = os.environ.get("GRIND_TIME_LIMIT")
    start = time.monotonic()
    # Stop a little before the limit on our own, so grind's SIGTERM is not needed.
    deadline = start + max(0.5, float(limit) - 0.5) if limit else None
    # C_k has the parity of N - k, so |C_k| >= 1 for the floor(N/2) values of k with N - k odd.
    lower_bound = n // 2
    goal = max(lower_bound, target) if target is not None else lower_bound
    rng = random.Random(seed)
    bounds = Bounds()
    bounds.start()
    checkpoint = Checkpoint(n)
    say(f"c LABS N={n} seed={seed} lower bound {lower_bound}"
        + (f" target {target}" if target is not None else ""))

    best = checkpoint.load()
    if best is not None:
        say("c resumed from checkpoint")
    else:
        best = [rng.choice((-1, 1)) for _ in range(n)]
    best_e = energy_of(correlations(best))
    say(f"o {best_e}")
    say(f"v {as_text(best)}")
    campaign_best = None
    status = None
    steps = 0
    last_progress = start
    stall = 0  # tabu runs since the last improvement

    while status is None:
        # Start point: the best sequence with a few bits flipped or, after a few runs without
        # improvement (one, when someone else in the campaign is ahead), a random sequence.
        patience = 1 if campaign_best is not None and campaign_best < best_e else 3
        if stall >= patience:
            s = [rng.choice((-1, 1)) for _ in range(n)]
            stall = 0
        else:
            s = best[:]
            for i in rng.sample(range(n), max(1, n // 8)):
                s[i] = -s[i]
        c = correlations(s)
        e = energy_of(c)
        # Tabu search: take the best flip not made in the last `tenure` steps (or any flip
        # that beats the best energy), for a number of steps.
        run_len = rng.randint(2 * n, 6 * n)
        tabu = [0] * n
        improved = False
        for step in range(1, run_len + 1):
            steps += 1
            move, move_e = -1, None
            for i in range(n):
                ei = e + flip_energy_change(s, c, i)
                if (tabu[i] <= step or ei < best_e) and (move_e is None or ei < move_e):
                    move, move_e = i, ei
            if move < 0:
                break
            apply_flip(s, c, move)
            e = move_e
            tabu[move] = step + rng.randint(max(1, run_len // 10), max(2, run_len // 8))
            if e < best_e:
                best, best_e, improved = s[:], e, True
                say(f"o {best_e}")
                say(f"v {as_text(best)}")
                if checkpoint.save(best):
                    say("g checkpoint")
                if best_e <= goal:
                    status = "OPTIMUM FOUND"
                    say(f"c reached {'the target' if best_e == target else 'the lower bound'} {best_e}")
                    break
            if stop_requested or (deadline is not None and time.monotonic() >= deadline):
                break
        stall = 0 if improved else stall + 1

        values, campaign_best = bounds.take()
        for v in values:
            say(f"c received bound {v}")
            # Also on stderr, which grind keeps (its tail) in each run's provenance record.
            print(f"received bound {v} (own best {best_e})", file=sys.stderr, flush=True)
        if status is None and campaign_best is not None and campaign_best <= goal:
            say(f"c the campaign has reached {campaign_best}: nothing left to find")
            status = "SATISFIABLE"
        now = time.monotonic()
        if status is None and (stop_requested or (deadline is not None and now >= deadline)):
            say("c stopping: " + ("signal" if stop_requested else "time limit"))
            status = "SATISFIABLE"
        if limit and now - last_progress >= 1.0:
            say(f"g progress {min(1.0, (now - start) / float(limit)):.3f}")
            last_progress = now

    if checkpoint.save(best, force=True):
        say("g checkpoint")
    say(f"c best {best_e} after {steps} tabu steps in {time.monotonic() - start:.2f} s")
    say(f"s {status}")


if __name__ == "__main__":
    main()
