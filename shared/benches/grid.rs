//! Times the grid puzzle's exact solver (one core, the whole search in one unit) on
//! generated instances and prints one row per seed: side, seed, seconds, proven, cost, root
//! LP bound, branch-and-cut nodes, and the heuristic's cost.
//!
//! Seconds are this thread's CPU time (the machine is shared), wall time beside it.
//!
//! `cargo bench -p grind-shared --bench grid [-- --size N --seeds A..B --limit SECONDS]`
//! (default: size 8, seeds 1..10, limit 300 s of wall time). With `--tree SECONDS` it also runs
//! the seed's best-first spanning-tree search for that much CPU time per seed and prints its
//! best walk.

use std::collections::{BinaryHeap, HashSet};
use std::time::{Duration, Instant};

use grind_shared::problems::grid::closure::Closure;
use grind_shared::problems::grid::instance::Instance;
use grind_shared::problems::grid::tree::Tree;
use grind_shared::problems::grid::{heuristic, heuristic_kicks, solve_instance, TREE_CHILDREN};

/// CPU time of this thread in seconds (Linux: /proc/thread-self/schedstat), if readable.
fn cpu_seconds() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: f64 = text.split_whitespace().next()?.parse().ok()?;
    Some(ns / 1e9)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let size: usize = value("--size").map_or(8, |v| v.parse().expect("--size N"));
    let (from, to): (u64, u64) = value("--seeds").map_or((1, 10), |v| {
        let (a, b) = v.split_once("..").expect("--seeds A..B");
        (a.parse().expect("seed"), b.parse().expect("seed"))
    });
    let limit = Duration::from_secs_f64(
        value("--limit").map_or(300.0, |v| v.parse().expect("--limit SECONDS")),
    );
    let tree_time = value("--tree").map(|v| Duration::from_secs_f64(v.parse().expect("--tree S")));
    println!("size seed cpu_seconds wall_seconds proven cost root_bound nodes heuristic tree_best");
    for seed in from..=to {
        let grid = Instance::generate(size, seed).expect("instance");
        let started = Instant::now();
        let closure = Closure::new(&grid);
        let (_, heuristic_cost) =
            heuristic::best_order(&closure, heuristic_kicks(grid.cities()), 1);
        let heuristic_seconds = started.elapsed().as_secs_f64();
        let started = Instant::now();
        let cpu_start = cpu_seconds();
        let solved = solve_instance(&grid, Some(limit)).expect("solve");
        let seconds = started.elapsed().as_secs_f64();
        let cpu = match (cpu_start, cpu_seconds()) {
            (Some(a), Some(b)) => format!("{:.3}", b - a),
            _ => "-".into(),
        };
        let tree = tree_time.map(|t| tree_search(&grid, t));
        println!(
            "{size} {seed} {cpu} {seconds:.3} {} {} {} {} {heuristic_cost}({heuristic_seconds:.3}s) {}",
            solved.proven,
            solved.cost,
            solved.root_bound.map_or("-".to_string(), |b| b.to_string()),
            solved.nodes,
            tree.map_or("-".to_string(), |b| b.to_string()),
        );
    }
}

/// The seed's best-first search over spanning trees, locally, for `time` of this thread's
/// CPU (wall time where it cannot be read): the best walk.
fn tree_search(grid: &Instance, time: Duration) -> u64 {
    let started = Instant::now();
    let cpu_start = cpu_seconds();
    let spent = || match (cpu_start, cpu_seconds()) {
        (Some(a), Some(b)) => Duration::from_secs_f64(b - a),
        _ => started.elapsed(),
    };
    let root = Tree::minimum(grid);
    let mut best = root.best_walk(grid).1;
    let mut seen = HashSet::new();
    let mut frontier = BinaryHeap::new();
    frontier.push(std::cmp::Reverse((best, root.encode())));
    while let Some(std::cmp::Reverse((_, payload))) = frontier.pop() {
        if spent() > time {
            break;
        }
        if !seen.insert(payload.clone()) {
            continue;
        }
        let tree = Tree::decode(grid, &payload).expect("tree");
        let mut scored: Vec<(u64, Tree)> = tree
            .neighbours(grid)
            .into_iter()
            .map(|t| (t.best_walk(grid).1, t))
            .collect();
        scored.sort_by_key(|(s, _)| *s);
        scored.truncate(TREE_CHILDREN);
        for (score, t) in scored {
            best = best.min(score);
            let bytes = t.encode();
            if !seen.contains(&bytes) {
                frontier.push(std::cmp::Reverse((score, bytes)));
            }
        }
    }
    best
}
