//! Measures the shape of exact sieve proof trees (issue 19): one thread, the whole tree from
//! the root, strong branching with the published optimum as both the reference and the bar
//! (so the tree is the one that proves nothing beats it, as a campaign that starts from an
//! optimal game searches). Prints nodes, seconds, the depth profile, and how often the same
//! cycle is branched on in different subtrees.
//!
//! `cargo bench -p grind-shared --bench sieve_tree [-- N... [--table FILE] [--candidates C]
//! [--top K] [--regions R]]` (default N = 400, table `records/a019312.txt`, 8 candidates,
//! top 10, region bound off; `--regions R` prices up to R disjoint cycles a node; `--cluster`
//! turns cluster branching on; `--cuts` also bounds every node by the Lagrangian bound of
//! cluster cuts, `Searcher::set_cut_penalties`). `-- N --dump A,B,...` prints the root
//! matching's mates, duals and edge slacks at the numbers A, B, ... instead.
//!
//! `-- --root-bounds A B [STEP]` prints, for N = A, A + STEP, ..., B, the root's matching
//! bound, the cluster cuts' Lagrangian root bound (`sieve::cuts::derive`), the published
//! value and the two gaps.

use std::time::Instant;

use grind_shared::problems::sieve::search::{Observer, Searcher};
use grind_shared::problems::sieve::{cuts, table};

/// The matching bound and the cut bound at the root for N = from, from + step, ..., to.
fn root_bounds(from: u32, to: u32, step: u32, terms: &[i64]) {
    println!("N\tmatching\tcuts\tpublished\tgap(matching)\tgap(cuts)\tcut count\tseconds");
    let mut n = from;
    while n <= to {
        let start = Instant::now();
        let (penalties, bound) = cuts::derive(n, &Searcher::root_pairs(n));
        let secs = start.elapsed().as_secs_f64();
        let plain = Searcher::new(n).root_bound();
        let published = terms.get(n as usize - 1).copied().unwrap_or(0);
        println!(
            "{n}\t{plain}\t{bound}\t{published}\t{}\t{}\t{}\t{secs:.2}",
            plain - published,
            bound - published,
            penalties.cuts.len()
        );
        n += step.max(1);
    }
}

fn flag(args: &mut Vec<String>, name: &str) -> Option<String> {
    let at = args.iter().position(|a| a == name)?;
    args.remove(at);
    (at < args.len()).then(|| args.remove(at))
}

/// The bar: prunes every node whose bound does not beat it; reports any better game.
struct Bar(i64);

impl Observer for Bar {
    fn bound(&self) -> Option<i64> {
        Some(self.0)
    }
    fn found(&self, moves: &[u32], score: i64) {
        panic!("a game of {score} beats the table's {}: {moves:?}", self.0);
    }
}

fn main() {
    let mut args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let table = flag(&mut args, "--table").unwrap_or_else(|| table::PUBLISHED_TABLE.into());
    let candidates: usize = flag(&mut args, "--candidates").map_or(8, |c| c.parse().expect("C"));
    let top: usize = flag(&mut args, "--top").map_or(10, |c| c.parse().expect("K"));
    let regions: usize = flag(&mut args, "--regions").map_or(0, |c| c.parse().expect("R"));
    let cluster = args.iter().any(|a| a == "--cluster");
    let with_cuts = args.iter().any(|a| a == "--cuts");
    args.retain(|a| a != "--cluster" && a != "--cuts");
    let terms = table::read_terms(&table).expect("the table");
    if let Some(from) = flag(&mut args, "--root-bounds") {
        let to: u32 = args.first().map_or(1000, |t| t.parse().expect("B"));
        let step: u32 = args.get(1).map_or(50, |t| t.parse().expect("STEP"));
        root_bounds(from.parse().expect("A"), to, step, &terms);
        return;
    }
    if let Some(d) = flag(&mut args, "--dump") {
        let nums: Vec<u32> = d.split(',').map(|x| x.parse().expect("number")).collect();
        dump(args[0].parse().expect("N"), &nums);
        return;
    }
    let ns: Vec<u32> = if args.is_empty() {
        vec![400]
    } else {
        args.iter().map(|a| a.parse().expect("N")).collect()
    };
    for n in ns {
        let opt = terms[n as usize - 1];
        let start = Instant::now();
        let mut s = Searcher::new(n);
        s.set_strong_branching(Some(opt), candidates);
        s.set_profile(true);
        s.set_region_bound(regions);
        s.set_cluster_branching(cluster);
        if with_cuts {
            let (penalties, _) = cuts::derive(n, &Searcher::root_pairs(n));
            s.set_cut_penalties(&penalties)
                .expect("derived cuts are clusters");
        }
        s.search(&[], None, None, &Bar(opt)).expect("search");
        let secs = start.elapsed().as_secs_f64();
        let p = s.profile().expect("profiling");
        let branching: u64 = p.branches_at.iter().sum();
        println!(
            "N = {n}: optimum {opt}, root bound {}, gap {}; {} nodes, {} branching, {} pruned by \
             the region bound ({regions} cycles), {:.2} s",
            s.root_bound(),
            s.root_bound() - opt,
            s.stats().nodes,
            branching,
            s.stats().region_pruned,
            secs
        );
        if let Some(o) = s.region_outcomes() {
            println!("regions priced: L=0 {}, 1 {}, 2-3 {}, 4-7 {}, 8-15 {}, >=16 {}, capped {}, out of steps {}", o[0], o[1], o[2], o[3], o[4], o[5], o[6], o[7]);
        }
        println!("depth\tnodes\tbranching");
        for (d, (&a, &b)) in p.nodes_at.iter().zip(&p.branches_at).enumerate() {
            println!("{d}\t{a}\t{b}");
        }
        let mut counts: Vec<(&Vec<(u32, u32)>, u64)> =
            p.cycles.iter().map(|(c, &k)| (c, k)).collect();
        counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let repeated: u64 = counts.iter().filter(|c| c.1 > 1).map(|c| c.1).sum();
        println!(
            "distinct cycles {} for {branching} branchings ({:.1} each); branchings on a cycle \
             seen elsewhere too: {repeated} ({:.1}%)",
            counts.len(),
            branching as f64 / counts.len().max(1) as f64,
            100.0 * repeated as f64 / branching.max(1) as f64
        );
        println!(
            "cycle shares a number with its parent's: {} of {} ({:.1}%), with some ancestor's: {} ({:.1}%)",
            p.touches_parent,
            p.with_parent,
            100.0 * p.touches_parent as f64 / p.with_parent.max(1) as f64,
            p.touches_ancestor,
            100.0 * p.touches_ancestor as f64 / p.with_parent.max(1) as f64
        );
        let mut pair_counts: std::collections::HashMap<(u32, u32), u64> = Default::default();
        for (c, k) in &counts {
            for &pair in c.iter() {
                *pair_counts.entry(pair).or_default() += k;
            }
        }
        let mut pairs: Vec<_> = pair_counts.into_iter().collect();
        pairs.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        println!("distinct pairs branched on: {}", pairs.len());
        println!("top cycles (branchings, non-fixed pairs):");
        for (c, k) in counts.iter().take(top) {
            println!("  {k}\t{c:?}");
        }
        println!("top pairs (branchings through them):");
        for (pair, k) in pairs.iter().take(top) {
            println!("  {k}\t{pair:?}");
        }
    }
}

/// Prints the root matching's mate, dual and live edges (with slack) of each number.
fn dump(n: u32, numbers: &[u32]) {
    use grind_shared::problems::sieve::matching::{Graph, Matching, Scratch};
    use grind_shared::problems::sieve::search::largest_prime;
    let g = Graph::new(n);
    let mut sc = Scratch::default();
    let m = Matching::new(&g, &[(largest_prime(n), 1)], &mut sc);
    for &x in numbers {
        let edges: Vec<String> = m
            .live_edges(&g, x)
            .map(|e| {
                format!(
                    "{}:s{}",
                    e.other,
                    m.dual(x) + m.dual(e.other) - i64::from(e.big)
                )
            })
            .collect();
        println!(
            "{x}: mate {} y {} edges {}",
            m.mate(x),
            m.dual(x),
            edges.join(" ")
        );
    }
}
