//! Times the fast Topswops scorer on one large deck, per kernel, against the plain replay.
//!
//! `cargo bench -p grind-shared --bench topswops_scorer [-- BLOCKS [--repeat R]
//! [--kernel portable|avx2|avx512] [--replay]]` (`--replay` also times the plain replay
//! the coordinator verifies with).
//!
//! The deck: unique heads [1] + [2 7 1 8 5 3 4 9 6] + [2 7 1 8 5 3 4 9 6] + ... (each block
//! shifted past the previous ones), BLOCKS blocks (default 1111: n = 10,000), the fixed
//! block of S. Belyaev's 2011 write-up (shared/seeds/topswops-ru.txt), which reports
//! 108,568,388 flips for n = 10,000 for its construction (our reading of its notation gives
//! 107,661,251: every kernel and the plain replay agree on it). Seconds are this thread's
//! CPU time (Linux schedstat) beside wall time: the machine may be shared, note `uptime`.

use std::time::Instant;

use grind_shared::problems::topswops::heads::to_deck;
use grind_shared::problems::topswops::replay::replay_flips;
use grind_shared::problems::topswops::scorer::{flips_with, Card, Kernel};

/// CPU time of this thread in seconds (Linux: /proc/thread-self/schedstat), if readable.
fn cpu_seconds() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: f64 = text.split_whitespace().next()?.parse().ok()?;
    Some(ns / 1e9)
}

/// Runs `f`, returning its result, CPU seconds (wall when unreadable) and wall seconds.
fn timed<T>(f: impl FnOnce() -> T) -> (T, f64, f64) {
    let (cpu, wall) = (cpu_seconds(), Instant::now());
    let out = f();
    let wall = wall.elapsed().as_secs_f64();
    let cpu = match (cpu, cpu_seconds()) {
        (Some(a), Some(b)) => b - a,
        _ => wall,
    };
    (out, cpu, wall)
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let blocks: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(1111);
    let repeat: usize = args
        .iter()
        .position(|a| a == "--repeat")
        .and_then(|i| args.get(i + 1))
        .and_then(|r| r.parse().ok())
        .unwrap_or(1);
    let only = args
        .iter()
        .position(|a| a == "--kernel")
        .and_then(|i| args.get(i + 1))
        .map(|k| Kernel::parse(k).expect("kernel: portable, avx2, avx512 or auto"));
    let with_replay = args.iter().any(|a| a == "--replay");
    let block = [2, 7, 1, 8, 5, 3, 4, 9, 6];
    let mut heads: Vec<Card> = Vec::new();
    for b in 0..blocks {
        heads.extend(block.iter().map(|&v| (v + 1 + 9 * b) as Card));
    }
    heads.push(1);
    let n = heads.len();
    let deck = to_deck(&heads).expect("valid heads");
    println!(
        "n = {n}, {blocks} fixed blocks; kernel detected: {:?}",
        Kernel::detect()
    );
    println!(
        "{:<10} {:>12} {:>8} {:>8} {:>14}",
        "kernel", "flips", "cpu s", "wall s", "flips/cpu s"
    );
    let mut counts = Vec::new();
    let kernels: Vec<Kernel> = match only {
        Some(k) => vec![k],
        None => Kernel::all_available(),
    };
    for kernel in kernels {
        let (mut best_cpu, mut best_wall, mut flips) = (f64::INFINITY, f64::INFINITY, 0);
        for _ in 0..repeat {
            let (f, cpu, wall) = timed(|| flips_with(kernel, &deck).expect("valid deck"));
            flips = f;
            best_cpu = best_cpu.min(cpu);
            best_wall = best_wall.min(wall);
        }
        println!(
            "{:<10} {flips:>12} {best_cpu:>8.2} {best_wall:>8.2} {:>14.0}",
            format!("{kernel:?}"),
            flips as f64 / best_cpu
        );
        counts.push(flips);
    }
    if with_replay {
        let (plain, cpu, wall) = timed(|| replay_flips(&deck).expect("valid deck"));
        println!(
            "{:<10} {plain:>12} {cpu:>8.2} {wall:>8.2} {:>14.0}",
            "replay",
            plain as f64 / cpu
        );
        counts.push(plain);
    }
    assert!(counts.windows(2).all(|w| w[0] == w[1]), "kernels disagree");
}
