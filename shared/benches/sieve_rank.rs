//! Rank cuts beside cluster cuts at the root of the Taxman search (an experiment for the
//! proven frontier, BENCHMARKS.md "Rank cuts at the root").
//!
//! A cluster cut says that at most |S| - 1 of a game's pairs run from S into T. Its
//! generalization: for any disjoint S and T, at most r(S, T) pairs do, r being the largest
//! acyclic assignment of numbers of S to factors of T along edges (with the root's fixed
//! pair), found here by a search that allows d = 0, 1, 2, ... numbers to be left out. This
//! bench derives the clusters at the root (`cuts::derive_all_at`), then
//!
//! - solves the primal cut LP in rounds: each round takes the LP's whole pairs, the
//!   strongly connected components of their precedence graph, and adds each component's
//!   rank cut where its rank is below its size;
//! - builds the unions of every two clusters that stay disjoint (S and T) and have at most
//!   MAX_UNION numbers, and solves the LP with the clusters and every union whose rank is at
//!   least 2 below its size;
//! - with GAME (an optimal game's moves, space-separated), prints which numbers the
//!   penalized matching selects that the game does not, and the other way round.
//!
//! Every LP here runs in floating point, as a measurement only: nothing here proves anything.
//!
//! `cargo bench -p grind-shared --bench sieve_rank -- N [MAX_UNION] [GAME]` (default 12).
//!
//! `cargo bench -p grind-shared --bench sieve_rank -- --pool MAX_UNION N...` instead prints,
//! for each N, the root's cluster LP and the same LP with the rank pool the records run
//! proves (`RankPool::at_root`), beside the published optimum: the gaps the search starts
//! from with and without rank cuts.

use std::collections::{BTreeSet, HashMap};
use std::time::Instant;

use grind_shared::problems::sieve::cuts::{self, Cut, DualLp};
use grind_shared::problems::sieve::matching::{Graph, Matching, Scratch};
use grind_shared::problems::sieve::rank_cuts::{rank_of, RankPool};
use grind_shared::problems::sieve::search::Searcher;
use grind_shared::problems::sieve::table;
use microlp::{ComparisonOp, LinearExpr, OptimizationDirection, Problem};

/// The largest acyclic assignment of `s` into `t` along `g`'s edges, with `fixed` first
/// (`rank_cuts::rank_of`; past its step budget, the loosest value).
fn rank(g: &Graph, s: &[u32], t: &[u32], fixed: &[(u32, u32)]) -> usize {
    rank_of(g, s, t, fixed, 2_000_000).unwrap_or(s.len().min(t.len()))
}

/// The cut LP's optimum (floating point) over the root's live graph with `cuts`, each with
/// its right-hand side.
fn lp_value(g: &Graph, node: &Matching, cuts: &[(Cut, usize)]) -> f64 {
    let rhs: HashMap<&Cut, usize> = cuts.iter().map(|(c, r)| (c, *r)).collect();
    let plain: Vec<Cut> = cuts.iter().map(|(c, _)| c.clone()).collect();
    let lp = DualLp::with_rhs(g, node, &plain, |c| rhs[c], None);
    let solution = lp
        .problem
        .solve()
        .expect("cut LP")
        .into_solution()
        .expect("solved");
    solution.objective() + node.fixed_score() as f64
}

/// The primal LP's value, its fractional edges with their values, and its whole edges.
type PrimalLp = (f64, Vec<((u32, u32), f64)>, Vec<(u32, u32)>);

/// The primal cut LP (max Σ K x_e, each number in at most one pair, each cut's edges at
/// most its right-hand side): its value and its fractional edges.
fn primal_fractions(g: &Graph, node: &Matching, cuts: &[(Cut, usize)]) -> PrimalLp {
    let n = g.n();
    let mut lp = Problem::new(OptimizationDirection::Maximize);
    let mut edges = Vec::new();
    let mut at: Vec<Vec<usize>> = vec![Vec::new(); n as usize + 1];
    let mut index: HashMap<(u32, u32), usize> = HashMap::new();
    for big in 2..=n {
        for e in node.live_edges(g, big).filter(|e| e.big == big) {
            let var = lp.add_var(f64::from(big), (0.0, 1.0));
            at[big as usize].push(edges.len());
            at[e.other as usize].push(edges.len());
            index.insert((big, e.other), edges.len());
            edges.push(((big, e.other), var));
        }
    }
    for edges_at in &at {
        if edges_at.len() > 1 {
            let row: LinearExpr = edges_at.iter().map(|&i| (edges[i].1, 1.0)).collect();
            lp.add_constraint(row, ComparisonOp::Le, 1.0);
        }
    }
    for (c, r) in cuts {
        let row: LinearExpr = c
            .edges(g)
            .into_iter()
            .filter_map(|e| index.get(&e).map(|&i| (edges[i].1, 1.0)))
            .collect();
        lp.add_constraint(row, ComparisonOp::Le, *r as f64);
    }
    let solution = lp
        .solve()
        .expect("primal LP")
        .into_solution()
        .expect("solved");
    let fractional = edges
        .iter()
        .map(|&(e, var)| (e, solution[var]))
        .filter(|&(_, x)| x > 1e-6 && x < 1.0 - 1e-6)
        .collect();
    let whole = edges
        .iter()
        .filter(|&&(_, var)| solution[var] > 1.0 - 1e-6)
        .map(|&(e, _)| e)
        .collect();
    (
        solution.objective() + node.fixed_score() as f64,
        fractional,
        whole,
    )
}

/// The strongly connected components (two pairs or more) of the precedence graph of
/// `pairs` (i -> j when i's factor divides j's number).
fn cyclic_components(pairs: &[(u32, u32)]) -> Vec<Vec<(u32, u32)>> {
    let p = pairs.len();
    let succ = |i: usize| {
        (0..p).filter(move |&j| j != i && pairs[i].1 > 1 && pairs[j].0.is_multiple_of(pairs[i].1))
    };
    let reach = |from: usize| {
        let mut seen = vec![false; p];
        let mut stack = vec![from];
        while let Some(i) = stack.pop() {
            for j in succ(i) {
                if !seen[j] {
                    seen[j] = true;
                    stack.push(j);
                }
            }
        }
        seen
    };
    let reach_all: Vec<Vec<bool>> = (0..p).map(reach).collect();
    let mut done = vec![false; p];
    let mut out = Vec::new();
    for i in 0..p {
        if done[i] || !reach_all[i][i] {
            continue;
        }
        let comp: Vec<usize> = (0..p)
            .filter(|&j| reach_all[i][j] && reach_all[j][i])
            .collect();
        for &j in &comp {
            done[j] = true;
        }
        if comp.len() >= 2 {
            out.push(comp.into_iter().map(|j| pairs[j]).collect());
        }
    }
    out
}

/// The `--pool` mode (module docs).
fn pool_gaps(max_union: usize, ns: &[u32]) {
    let terms = table::read_terms(table::PUBLISHED_TABLE).expect("table");
    println!("| N | optimum | cluster LP | gap | rank cuts | with them | gap | closed |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    for &n in ns {
        let g = Graph::new(n);
        let root = Searcher::root_pairs(n);
        let node = Matching::new(&g, &root, &mut Scratch::default());
        let (_, _, clusters) = cuts::derive_all_at(&g, &node, Vec::new(), 40);
        let base: Vec<(Cut, usize)> = clusters.iter().map(|c| (c.clone(), c.most)).collect();
        let plain = lp_value(&g, &node, &base);
        let pool = RankPool::at_root(n, max_union);
        let mut all = base;
        all.extend(pool.cuts().iter().map(|c| (c.clone(), c.most)));
        let ranked = lp_value(&g, &node, &all);
        let opt = terms[n as usize - 1] as f64;
        println!(
            "| {n} | {opt} | {plain:.1} | {:.1} | {} | {ranked:.1} | {:.1} | {:.0}% |",
            plain - opt,
            pool.cuts().len(),
            ranked - opt,
            100.0 * (plain - ranked) / (plain - opt)
        );
    }
}

fn main() {
    let all: Vec<String> = std::env::args().skip(1).collect();
    if let Some(at) = all.iter().position(|a| a == "--pool") {
        let max_union = all[at + 1].parse().expect("--pool MAX_UNION N...");
        let ns: Vec<u32> = all[at + 2..]
            .iter()
            .filter_map(|a| a.parse().ok())
            .collect();
        return pool_gaps(max_union, &ns);
    }
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let n: u32 = args.first().and_then(|a| a.parse().ok()).unwrap_or(616);
    let max_union: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(12);
    let g = Graph::new(n);
    let root = Searcher::root_pairs(n);
    let node = Matching::new(&g, &root, &mut Scratch::default());
    let start = Instant::now();
    let (penalties, bound, clusters) = cuts::derive_all_at(&g, &node, Vec::new(), 40);
    if let Some(game) = args.get(2) {
        // Which numbers the penalized matching selects that an optimal game does not.
        let moves: Vec<u32> = game.split(' ').filter_map(|m| m.parse().ok()).collect();
        let pairs = grind_shared::problems::sieve::game::pairing_of(n, &moves).expect("a game");
        let mut pg = Graph::new(n);
        cuts::apply(&mut pg, &penalties).expect("clusters");
        let m = Matching::new(&pg, &root, &mut Scratch::default());
        let lp: BTreeSet<(u32, u32)> = m.pairs().into_iter().collect();
        let opt: BTreeSet<(u32, u32)> = pairs.into_iter().collect();
        let lp_k: BTreeSet<u32> = lp.iter().map(|p| p.0).collect();
        let opt_k: BTreeSet<u32> = opt.iter().map(|p| p.0).collect();
        let only_lp: Vec<_> = lp.iter().filter(|p| !opt_k.contains(&p.0)).collect();
        let only_opt: Vec<_> = opt.iter().filter(|p| !lp_k.contains(&p.0)).collect();
        println!(
            "matching {} pairs, game {} pairs; selected only by the matching ({}): {only_lp:?}",
            lp.len(),
            opt.len(),
            only_lp.iter().map(|p| p.0).sum::<u32>()
        );
        println!(
            "selected only by the game ({}): {only_opt:?}",
            only_opt.iter().map(|p| p.0).sum::<u32>()
        );
    }
    let base: Vec<(Cut, usize)> = clusters
        .iter()
        .map(|c| (c.clone(), c.numbers.len() - 1))
        .collect();
    let plain = lp_value(&g, &node, &base);
    let mut seen: BTreeSet<Cut> = clusters.iter().cloned().collect();
    let mut ranked = Vec::new();
    for (i, a) in clusters.iter().enumerate() {
        for b in &clusters[i + 1..] {
            let s: BTreeSet<u32> = a.numbers.iter().chain(&b.numbers).copied().collect();
            let t: BTreeSet<u32> = a.factors.iter().chain(&b.factors).copied().collect();
            if s.len() > max_union || !s.is_disjoint(&t) {
                continue;
            }
            let cut = Cut::cluster(s.into_iter().collect(), t.into_iter().collect());
            if !seen.insert(cut.clone()) {
                continue;
            }
            let r = rank(&g, &cut.numbers, &cut.factors, &root);
            let loose = cut.numbers.len().min(cut.factors.len());
            if r + 2 <= loose {
                ranked.push((cut, r));
            }
        }
    }
    // Rounds: the primal LP's pairs, their cyclic components, each one's rank.
    let mut rounds_cuts = base.clone();
    for round in 0..30 {
        let (primal, fractional, whole) = primal_fractions(&g, &node, &rounds_cuts);
        let comps = cyclic_components(&whole);
        let sizes: Vec<usize> = comps.iter().map(Vec::len).collect();
        let mut added = 0;
        for comp in comps.iter().filter(|c| c.len() <= max_union) {
            let mut cut = Cut::cluster(
                comp.iter().map(|p| p.0).collect(),
                comp.iter().map(|p| p.1).collect(),
            );
            cut.numbers.sort_unstable();
            cut.factors.sort_unstable();
            if !seen.insert(cut.clone()) {
                continue;
            }
            let r = rank(&g, &cut.numbers, &cut.factors, &root);
            if r < cut.numbers.len() {
                rounds_cuts.push((cut, r));
                added += 1;
            }
        }
        println!(
            "round {round}: primal LP {primal:.1}, {} fractional edges, cyclic components {sizes:?}, {added} rank cuts added ({:.1} s)",
            fractional.len(),
            start.elapsed().as_secs_f64()
        );
        if added == 0 {
            break;
        }
    }
    let mut all = base.clone();
    all.extend(ranked.iter().cloned());
    let with_rank = lp_value(&g, &node, &all);
    println!(
        "N = {n}: {} clusters, Lagrangian bound {bound}, LP {plain:.1}; {} rank cuts \
         (unions of two clusters, at most {max_union} numbers, deficiency >= 2): LP {with_rank:.1}; {:.1} s",
        clusters.len(),
        ranked.len(),
        start.elapsed().as_secs_f64()
    );
}
