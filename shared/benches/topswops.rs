//! Times the exact Topswops search (one core, one unit = the whole tree) and prints one row
//! per run: n, mode, kernel, seconds, nodes, nodes/s, decks found.
//!
//! `cargo bench -p grind-shared --bench topswops [-- N... [--mode prove|prove-all|discover]
//! [--kernel auto|portable|narrow|wide] [--direction forward|backward] [--repeat R] [--from F]]`
//! (default: n = 12 13 14, mode prove, forward).
//!
//! * `prove`: proof mode at target f(n), fixed-point decks skipped (`set_skip_fixed_points`,
//!   sound for proving the maximum) — the configuration of `bench/topswops_ref.c`.
//! * `prove-all`: proof mode at target f(n) without skipping fixed points.
//! * `discover`: discovery mode with the bound starting at f(n) - 1 and rising as decks are
//!   found; `--from F` starts it at F instead (F = f(n - 1) is what a campaign knows, like
//!   `topswops_ref N -d -f F`).
//! * `derive`: computes f(1), f(2), ... up to the largest n given from scratch: discovery mode
//!   with no bound, each size using the values found for the smaller ones as its tail bounds
//!   (nothing taken from the known table), one row per size.
//!
//! Seconds are the search's CPU time (the machine may be shared), or wall time where the
//! CPU time cannot be read.
//!
//! The tail bounds are the known f(m), m < n (OEIS A000375, which the tests re-derive for
//! small m); the time reported is the best of R runs.

use std::cell::Cell;
use std::time::Instant;

use grind_shared::problems::topswops::search::{
    count_flips, Direction, Kernel, Mode, Observer, Searcher,
};

/// f(m) for m = 0..=19, published (OEIS A000375): the benchmark proves these targets.
const KNOWN_F: [u32; 20] = [
    0, 0, 1, 2, 4, 7, 10, 16, 22, 30, 38, 51, 65, 80, 101, 113, 139, 159, 191, 221,
];

/// Counts what the search reports and raises the bound in discovery mode.
struct Counter {
    bound: Cell<Option<u32>>,
    found: Cell<u64>,
    best: Cell<u32>,
}

impl Observer for Counter {
    fn bound(&self) -> Option<u32> {
        self.bound.get()
    }
    fn found(&self, deck: &[u8], flips: u32) {
        assert_eq!(count_flips(deck).ok(), Some(flips as u64), "{deck:?}");
        self.found.set(self.found.get() + 1);
        self.best.set(self.best.get().max(flips));
        if self.bound.get().is_some_and(|b| flips > b) {
            self.bound.set(Some(flips));
        }
    }
    fn donate(&self, _prefixes: Vec<Vec<u8>>, _new_limit: Vec<u8>) {}
}

/// CPU time of this thread in seconds (Linux: /proc/thread-self/schedstat), if readable.
/// The machine is shared, so CPU time is a steadier measure than wall time.
fn cpu_seconds() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: f64 = text.split_whitespace().next()?.parse().ok()?;
    Some(ns / 1e9)
}

fn main() {
    let mut sizes = Vec::new();
    let mut mode = "prove".to_string();
    let mut kernel = "auto".to_string();
    let mut direction = Direction::Forward;
    let mut repeat = 1;
    let mut from = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--mode" => mode = args.next().unwrap_or_default(),
            "--kernel" => kernel = args.next().unwrap_or_default(),
            "--direction" => {
                direction = match args.next().as_deref() {
                    Some("backward") => Direction::Backward,
                    Some("forward") => Direction::Forward,
                    other => {
                        eprintln!("topswops bench: unknown direction {other:?}");
                        std::process::exit(2);
                    }
                }
            }
            "--from" => match args.next().and_then(|f| f.parse::<u32>().ok()) {
                Some(f) => from = Some(f),
                None => {
                    eprintln!("topswops bench: --from needs a flip count");
                    std::process::exit(2);
                }
            },
            "--repeat" => repeat = args.next().and_then(|r| r.parse().ok()).unwrap_or(1),
            flag if flag.starts_with("--") => {} // --bench and other harness flags
            size => match size.parse::<usize>() {
                Ok(n) if (1..KNOWN_F.len()).contains(&n) => sizes.push(n),
                _ => {
                    eprintln!("topswops bench: n must be in 1..{}: {size}", KNOWN_F.len());
                    std::process::exit(2);
                }
            },
        }
    }
    if sizes.is_empty() {
        sizes = vec![12, 13, 14];
    }
    println!(
        "{:>3} {:>10} {:>16} {:>9} {:>14} {:>10} {:>6} {:>5}",
        "n", "mode", "kernel", "seconds", "nodes", "Mnodes/s", "decks", "max"
    );
    if mode == "derive" {
        derive(sizes.iter().copied().max().unwrap_or(1));
        return;
    }
    for n in sizes {
        let f = KNOWN_F[n];
        let mut searcher = match Searcher::new(n, KNOWN_F[..n].to_vec()) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("topswops bench: {e}");
                std::process::exit(2);
            }
        };
        searcher.set_direction(direction);
        let forced = match kernel.as_str() {
            "portable" => Some(Kernel::Portable),
            "narrow" => Some(Kernel::Narrow),
            "wide" => Some(Kernel::Wide),
            _ => None,
        };
        if let Some(k) = forced {
            if let Err(e) = searcher.set_kernel(k) {
                eprintln!("topswops bench: {e}");
                std::process::exit(2);
            }
        }
        let (search_mode, start_bound) = match mode.as_str() {
            "prove" => {
                searcher.set_skip_fixed_points(true);
                (Mode::Prove(f), None)
            }
            "prove-all" => (Mode::Prove(f), None),
            "discover" => (Mode::Discover, Some(from.unwrap_or(f - 1))),
            other => {
                eprintln!("topswops bench: unknown mode {other}");
                std::process::exit(2);
            }
        };
        let mut best_time = f64::INFINITY;
        let mut row = None;
        for _ in 0..repeat.max(1) {
            let counter = Counter {
                bound: Cell::new(start_bound),
                found: Cell::new(0),
                best: Cell::new(0),
            };
            let start = Instant::now();
            let cpu_start = cpu_seconds();
            if let Err(e) = searcher.search(&[], None, None, search_mode, &counter) {
                eprintln!("topswops bench: {e}");
                std::process::exit(1);
            }
            let wall = start.elapsed().as_secs_f64();
            let secs = match (cpu_start, cpu_seconds()) {
                (Some(a), Some(b)) => b - a,
                _ => wall,
            };
            if secs < best_time {
                best_time = secs;
                row = Some((searcher.stats(), counter.found.get(), counter.best.get()));
            }
        }
        if let Some((stats, found, best)) = row {
            println!(
                "{:>3} {:>10} {:>16} {:>9.3} {:>14} {:>10.1} {:>6} {:>5}",
                n,
                mode,
                match searcher.direction() {
                    Direction::Forward => searcher.kernel().to_string(),
                    Direction::Backward => format!("{}-bwd", searcher.kernel()),
                },
                best_time,
                stats.nodes,
                stats.nodes as f64 / best_time / 1e6,
                found,
                best
            );
        }
    }
}

/// f(1..=max_n) from scratch, each from the previous ones (see the module docs).
fn derive(max_n: usize) {
    let mut found = vec![0u32];
    for n in 1..=max_n {
        let mut searcher = match Searcher::new(n, found.clone()) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("topswops bench: {e}");
                std::process::exit(1);
            }
        };
        let counter = Counter {
            bound: Cell::new(None),
            found: Cell::new(0),
            best: Cell::new(0),
        };
        // Discovery mode raises the bound only past an existing one: start from the first
        // deck reported.
        struct First<'a>(&'a Counter);
        impl Observer for First<'_> {
            fn bound(&self) -> Option<u32> {
                self.0.bound.get()
            }
            fn found(&self, deck: &[u8], flips: u32) {
                if self.0.bound.get().is_none() {
                    self.0.bound.set(Some(flips));
                }
                self.0.found(deck, flips);
            }
            fn donate(&self, _prefixes: Vec<Vec<u8>>, _new_limit: Vec<u8>) {}
        }
        let cpu_start = cpu_seconds();
        let start = Instant::now();
        if let Err(e) = searcher.search(&[], None, None, Mode::Discover, &First(&counter)) {
            eprintln!("topswops bench: {e}");
            std::process::exit(1);
        }
        let secs = match (cpu_start, cpu_seconds()) {
            (Some(a), Some(b)) => b - a,
            _ => start.elapsed().as_secs_f64(),
        };
        let best = counter.best.get();
        let stats = searcher.stats();
        println!(
            "{:>3} {:>10} {:>16} {:>9.3} {:>14} {:>10.1} {:>6} {:>5}",
            n,
            "derive",
            searcher.kernel().to_string(),
            secs,
            stats.nodes,
            if secs > 1e-3 {
                stats.nodes as f64 / secs / 1e6
            } else {
                0.0
            },
            counter.found.get(),
            best
        );
        found.push(best);
    }
}
