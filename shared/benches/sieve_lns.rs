//! The sieve's neighbourhood search in-process, one thread: best score against time for N
//! from a chain start ([`lns::chain`]), printed as it rises. What the anytime units do,
//! without the coordinator, to tune region sizes and repair budgets.
//!
//! `cargo bench -p grind-shared --bench sieve_lns -- N SECONDS [--size S | --sizes A,B,..]
//! [--nodes K]
//! [--chain L] [--per-step C] [--seed X] [--kick-every K] [--slack S] [--kick-pairs P]`
//! [--print]` (defaults: the anytime units' constants; --print prints the best game).

use std::time::Instant;

use grind_shared::problems::sieve::anytime::{
    region_size, CHAIN_LENGTH, CHAIN_STEPS, KICK_EVERY, KICK_PAIRS, KICK_SLACK, REPAIR_NODES,
};
use grind_shared::problems::sieve::lns::{chain, Lns, Schedule};

fn flag(args: &mut Vec<String>, name: &str) -> Option<u64> {
    let at = args.iter().position(|a| a == name)?;
    args.remove(at);
    (at < args.len()).then(|| args.remove(at).parse().expect(name))
}

fn main() {
    let mut args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let size = flag(&mut args, "--size").map(|s| s as usize);
    let sizes: Vec<usize> = match args.iter().position(|a| a == "--sizes") {
        Some(at) => {
            args.remove(at);
            let list = args.remove(at);
            list.split(',')
                .map(|s| s.parse().expect("--sizes"))
                .collect()
        }
        None => Vec::new(),
    };
    let nodes = flag(&mut args, "--nodes").unwrap_or(REPAIR_NODES);
    let length = flag(&mut args, "--chain").map_or(CHAIN_LENGTH, |c| c as u32);
    let per_step = flag(&mut args, "--per-step").unwrap_or(CHAIN_STEPS);
    let seed = flag(&mut args, "--seed").unwrap_or(1);
    let print = args
        .iter()
        .position(|a| a == "--print")
        .map(|at| args.remove(at))
        .is_some();
    let kick_every = flag(&mut args, "--kick-every").unwrap_or(KICK_EVERY);
    let slack = flag(&mut args, "--slack").map_or(KICK_SLACK, |s| s as i64);
    let kick_pairs = flag(&mut args, "--kick-pairs").map_or(KICK_PAIRS, |p| p as usize);
    let n: u32 = args.first().map_or(1000, |a| a.parse().expect("N"));
    let seconds: f64 = args.get(1).map_or(30.0, |a| a.parse().expect("SECONDS"));
    let start = Instant::now();
    let from = n.saturating_sub(length).max(1);
    let chain_size = size.unwrap_or(region_size(n));
    let sizes = if sizes.is_empty() {
        vec![chain_size]
    } else {
        sizes
    };
    let moves = chain(from, n, seed, chain_size, nodes, 200, per_step, &|| false)
        .expect("chain")
        .expect("not stopped");
    let mut lns = Lns::new(n, &moves, seed).expect("start");
    println!(
        "N = {n}: chain from {from} gives {} in {:.2} s",
        lns.game().1,
        start.elapsed().as_secs_f64()
    );
    let plan = Schedule {
        sizes: &sizes,
        nodes,
        kick_every,
        slack,
        kick_pairs,
    };
    let mut last = lns.best().1;
    while start.elapsed().as_secs_f64() < seconds {
        if lns.tick(&plan) {
            last = lns.best().1;
            println!(
                "{:.2}\t{}\t{last}",
                start.elapsed().as_secs_f64(),
                lns.stats().steps
            );
        }
    }
    let s = lns.stats();
    println!(
        "end {last} after {:.1} s: {} steps, {} improvements, {} nodes",
        start.elapsed().as_secs_f64(),
        s.steps,
        s.improvements,
        s.nodes
    );
    if print {
        let moves: Vec<String> = lns.best().0.iter().map(u32::to_string).collect();
        println!("{}", moves.join(" "));
    }
}
