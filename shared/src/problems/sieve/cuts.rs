//! Cluster cuts and their Lagrangian penalties: a tighter bound for the exact search.
//!
//! # The cuts
//!
//! A *cluster* is a set S of selected numbers and a set T of factors, disjoint and of the same
//! size, such that every bijection of S onto T along edges of the graph has a precedence
//! cycle by itself (checked by enumerating the bijections). A game's edges from S into T
//! share no number, so there are at most |S| of them, and exactly |S| only if they form such
//! a bijection, which no game contains: **every game has at most |S| - 1 edges from S into
//! T**.
//!
//! # The bound
//!
//! Give each cut c an integer penalty `λ_c >= 0`. For every game x (a set of edges),
//!
//! ```text
//! w(x) = Σ_e w_e x_e  <=  Σ_e (w_e - Σ_{c ∋ e} λ_c) x_e + Σ_c λ_c (|S_c| - 1)
//! ```
//!
//! because each cut's edges in x number at most |S_c| - 1. The right side is at most the
//! heaviest matching under the lowered weights plus `Λ = Σ_c λ_c (|S_c| - 1)`: so the
//! matching bound of the penalized graph, offset by Λ ([`apply`]), bounds every game of every
//! search node, for any penalties >= 0. Soundness rests only on each cut being a cluster and
//! each penalty being >= 0, never on how well the penalties were chosen.
//!
//! # Choosing the penalties
//!
//! In rounds ([`derive`](fn@derive)): the heaviest matching under the current penalties (with (P, 1)
//! fixed, as at the search's root) is searched for precedence cycles; each cycle whose
//! numbers and factors form a cluster becomes a cut; then the penalties are the floors of an
//! optimal `z` of the dual of the matching LP with the cuts,
//!
//! ```text
//! min Σ_v y_v + Σ_c (|S_c| - 1) z_c   s.t.  y_K + y_b + Σ_{c ∋ (K, b)} z_c >= K  per edge,  y, z >= 0,
//! ```
//!
//! whose value is that LP's optimum; the bipartite matching polytope is integral, so with the
//! exact `z` the Lagrangian bound equals it, and flooring loses a point or two. The rounds
//! stop when the matching shows no new cluster. The LP runs in floating point, but nothing
//! rests on it: the cuts are checked exactly and the penalties are integers.

use microlp::{ComparisonOp, LinearExpr, OptimizationDirection, Problem, Variable};

use super::certificate::{CertCut, Certificate};
use super::matching::{Graph, Matching, Scratch};
use super::rank_cuts::RankPool;
use super::regions::FixedReach;

/// Most rounds of cut finding at the root.
const MAX_ROUNDS: usize = 40;

/// The heaviest precedence cycle [`light_cycle_clusters`] follows, in summed shortfalls
/// `1 - x` (a cycle below 1 is violated by its own edges; heavier ones may be through the
/// other bijections' edges). Measured on twelve 791 units (BENCHMARKS.md, "Cuts from the
/// LP's light cycles"): 2 finds fewer, 5 no more than 3.
pub(super) const LIGHT_CYCLE_BUDGET: f64 = 3.0;

/// A cut: at most `most` edges of a game run from `numbers` into `factors`. A *cluster*
/// (|S| = |T|, `most` = |S| - 1) is checked wherever it is used ([`Cut::is_cluster`]); any
/// other cut is a *rank cut*, valid only as a member of a [`RankPool`] that proved it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Cut {
    /// S, increasing.
    pub numbers: Vec<u32>,
    /// T, increasing.
    pub factors: Vec<u32>,
    /// The most edges from S into T that a game has.
    pub most: usize,
}

impl Cut {
    /// The cluster cut of S = `numbers` and T = `factors`: at most |S| - 1 edges.
    pub fn cluster(numbers: Vec<u32>, factors: Vec<u32>) -> Cut {
        let most = numbers.len().saturating_sub(1);
        Cut {
            numbers,
            factors,
            most,
        }
    }

    /// True when the cut has a cluster's shape (|S| = |T|, `most` = |S| - 1).
    pub fn is_cluster_shaped(&self) -> bool {
        self.numbers.len() == self.factors.len() && self.most + 1 == self.numbers.len()
    }

    /// The graph's edges from S into T, as (big, small).
    pub fn edges(&self, g: &Graph) -> Vec<(u32, u32)> {
        self.numbers
            .iter()
            .flat_map(|&k| {
                self.factors
                    .iter()
                    .filter(move |&&b| g.bit_of(k, b).is_some())
                    .map(move |&b| (k, b))
            })
            .collect()
    }

    /// True when every bijection of S onto T along edges of `g` has a precedence cycle (so
    /// the cut is valid for every game).
    pub fn is_cluster(&self, g: &Graph) -> bool {
        self.is_cluster_with(g, &|_, _| true, &mut FixedReach::new(g.n(), Vec::new()))
    }

    /// True when the cut is valid for every game of the search node `node`: S and T are free
    /// numbers there, and every bijection of S onto T along the node's live edges, together
    /// with its fixed pairs, has a precedence cycle. (A cluster of the whole graph is one of
    /// every node; a node's exclusions and fixed pairs make more sets clusters.)
    pub fn is_cluster_at(&self, g: &Graph, node: &Matching) -> bool {
        self.is_cluster_within(g, node, &mut FixedReach::new(g.n(), node.fixed_pairs()))
    }

    /// [`Cut::is_cluster_at`] with the reach of the node's fixed pairs given (worked out
    /// once for many cuts at one node).
    pub fn is_cluster_within(&self, g: &Graph, node: &Matching, reach: &mut FixedReach) -> bool {
        self.numbers
            .iter()
            .chain(&self.factors)
            .all(|&v| v <= g.n() && !node.is_fixed(v))
            && self.is_cluster_with(g, &|k, b| node.is_live(g, k, b), reach)
    }

    fn is_cluster_with(
        &self,
        g: &Graph,
        live: &dyn Fn(u32, u32) -> bool,
        reach: &mut FixedReach,
    ) -> bool {
        if !self.is_cluster_shaped() || self.numbers.iter().any(|k| self.factors.contains(k)) {
            return false;
        }
        let edges = self.edges(g);
        let options: Vec<Vec<(u32, u32)>> = self
            .numbers
            .iter()
            .map(|&k| {
                edges
                    .iter()
                    .copied()
                    .filter(|e| e.0 == k && live(e.0, e.1))
                    .collect()
            })
            .collect();
        !reach.any_acyclic_assignment(&options)
    }
}

/// Cuts with their penalties (each >= 1), and the bound they add up to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Penalties {
    /// The cuts with a positive penalty, in a fixed order.
    pub cuts: Vec<(Cut, i32)>,
}

impl Penalties {
    /// Λ = Σ λ_c most_c (|S_c| - 1 for a cluster): what the penalties promise back.
    pub fn offset(&self) -> i64 {
        self.cuts
            .iter()
            .map(|(c, l)| i64::from(*l) * c.most as i64)
            .sum()
    }
}

/// Lowers the weights of `g` by the penalties and adds their offset (see the module docs).
/// Errors name a cut that is not a cluster of `g`.
pub fn apply(g: &mut Graph, penalties: &Penalties) -> Result<(), String> {
    apply_checked(g, penalties, &mut |g, cut| cut.is_cluster(g))
}

/// [`apply`] for the games of one search node: each cut need only be a cluster at `node`
/// ([`Cut::is_cluster_at`]), and the penalized graph bounds that node and its subtree only.
pub fn apply_at(g: &mut Graph, node: &Matching, penalties: &Penalties) -> Result<(), String> {
    apply_at_with(g, node, penalties, None)
}

/// [`apply_at`] where a cut that is not cluster-shaped may also be a rank cut of `pool`
/// ([`RankPool::holds_at`]).
pub fn apply_at_with(
    g: &mut Graph,
    node: &Matching,
    penalties: &Penalties,
    pool: Option<&RankPool>,
) -> Result<(), String> {
    let mut reach = FixedReach::new(g.n(), node.fixed_pairs());
    apply_checked(g, penalties, &mut |g, cut| {
        if cut.is_cluster_shaped() {
            cut.is_cluster_within(g, node, &mut reach)
        } else {
            pool.is_some_and(|p| p.holds_at(cut, node))
        }
    })
}

fn apply_checked(
    g: &mut Graph,
    penalties: &Penalties,
    valid: &mut dyn FnMut(&Graph, &Cut) -> bool,
) -> Result<(), String> {
    for (cut, lambda) in &penalties.cuts {
        if *lambda < 0 || !valid(g, cut) {
            return Err(format!("not a valid cut: {cut:?} with penalty {lambda}"));
        }
        for (big, small) in cut.edges(g) {
            g.penalize(big, small, *lambda);
        }
    }
    g.add_offset(penalties.offset());
    Ok(())
}

/// Penalties for the instance `n` with `root` fixed (see the module docs), and the
/// Lagrangian root bound they give.
pub fn derive(n: u32, root: &[(u32, u32)]) -> (Penalties, i64) {
    derive_from(n, root, Vec::new())
}

/// [`derive`](fn@derive) warm-started from `cuts` (for instance a neighbouring N's, which stay clusters:
/// being one depends only on the numbers and factors): their penalties come first, so the
/// rounds only add what the matching still shows. Cuts that are not clusters of `n`'s graph
/// are dropped.
pub fn derive_from(n: u32, root: &[(u32, u32)], cuts: Vec<Cut>) -> (Penalties, i64) {
    let g = Graph::new(n);
    let node = Matching::new(&g, root, &mut Scratch::default());
    derive_at(&g, &node, cuts, MAX_ROUNDS)
}

/// Penalties for the games of one search node (its fixed pairs and excluded edges: cuts
/// that are clusters there, [`Cut::is_cluster_at`], and the dual LP of its live graph), and
/// the Lagrangian bound they give that node and its subtree ([`apply_at`]); warm-started
/// from `cuts` like [`derive_from`], dropping those that are not clusters at the node, with
/// at most `rounds` rounds of cut finding (each one more LP).
pub fn derive_at(g: &Graph, node: &Matching, cuts: Vec<Cut>, rounds: usize) -> (Penalties, i64) {
    let (penalties, bound, _) = derive_all_at(g, node, cuts, rounds);
    (penalties, bound)
}

/// [`derive_at`], also returning every cut its rounds found (a penalty of 0 at this node
/// included: a pool for the nodes below, [`super::warm_lp`]).
pub fn derive_all_at(
    g: &Graph,
    node: &Matching,
    cuts: Vec<Cut>,
    rounds: usize,
) -> (Penalties, i64, Vec<Cut>) {
    let n = g.n();
    let mut reach = FixedReach::new(n, node.fixed_pairs());
    let mut cuts: Vec<Cut> = cuts
        .into_iter()
        .filter(|c| c.is_cluster_within(g, node, &mut reach))
        .collect();
    cuts.sort();
    cuts.dedup();
    let mut penalties = if cuts.is_empty() {
        Penalties::default()
    } else {
        dual_penalties(g, node, &cuts).unwrap_or_default()
    };
    let mut scratch = Scratch::default();
    let mut bound;
    let mut round = 0;
    loop {
        let mut penalized = Graph::new(n);
        apply_at(&mut penalized, node, &penalties).expect("derived cuts are clusters");
        let m = node.reweighted(&penalized, &mut scratch);
        bound = m.matching_bound();
        round += 1;
        if round > rounds {
            break;
        }
        let before = cuts.len();
        let free: Vec<(u32, u32)> = m
            .pairs()
            .into_iter()
            .filter(|p| !node.is_fixed(p.0))
            .collect();
        for cut in cycle_clusters(g, node, &free) {
            if !cuts.contains(&cut) {
                cuts.push(cut);
            }
        }
        if cuts.len() == before {
            break;
        }
        match dual_penalties(g, node, &cuts) {
            Some(p) => penalties = p,
            None => break,
        }
    }
    (penalties, bound, cuts)
}

/// A checkable certificate ([`super::certificate`]) of the Lagrangian root bound with (P, 1)
/// fixed: the cuts [`derive`](fn@derive) keeps with their penalties, and the optimal duals of the
/// penalized matching on 2..=N/2 as potentials (those above N/2 derived by the checker).
/// Its bound is what the checker proves from them: [`derive`](fn@derive)'s, since the derived
/// potentials are at most the matching's own duals.
pub fn certify(n: u32) -> Certificate {
    certify_from(n, Vec::new())
}

/// [`certify`] with the cut rounds warm-started from `cuts` ([`derive_from`]).
pub fn certify_from(n: u32, cuts: Vec<Cut>) -> Certificate {
    let root = [(super::search::largest_prime(n), 1)];
    let (penalties, bound) = derive_from(n, &root, cuts);
    let mut g = Graph::new(n);
    apply(&mut g, &penalties).expect("derived cuts are clusters");
    let m = Matching::new(&g, &root, &mut Scratch::default());
    let mut cert = Certificate {
        n,
        bound,
        cuts: penalties
            .cuts
            .iter()
            .map(|(c, lambda)| CertCut {
                numbers: c.numbers.clone(),
                factors: c.factors.clone(),
                penalty: i64::from(*lambda),
            })
            .collect(),
        potentials: (2..=n / 2)
            .map(|v| (v, m.dual(v)))
            .filter(|&(_, y)| y > 0)
            .collect(),
        derive_upper: true,
    };
    if let Ok(proven) = super::certificate::proven_bound(&cert) {
        cert.bound = proven.min(bound);
    }
    cert
}

/// The clusters at `node` that the free pairs of `shadow` (the node's matching under some
/// penalties) form: cuts those penalties miss (each found like a round of [`derive_at`]).
pub fn missed_cuts(g: &Graph, node: &Matching, shadow: &Matching) -> Vec<Cut> {
    let free: Vec<(u32, u32)> = shadow
        .pairs()
        .into_iter()
        .filter(|p| !node.is_fixed(p.0))
        .collect();
    cycle_clusters(g, node, &free)
}

/// For each pair, the shortest precedence cycle of `pairs` (a matching) through it, kept
/// when its numbers and factors form a cluster at `node`.
pub(super) fn cycle_clusters(g: &Graph, node: &Matching, pairs: &[(u32, u32)]) -> Vec<Cut> {
    let count = pairs.len();
    let successors = precedence_successors(g.n(), pairs);
    let on_cycles = may_lie_on_cycles(&successors);
    let mut found = Vec::new();
    // The cycles already weighed (the same cycle is found from each of its pairs).
    let mut weighed: std::collections::HashSet<Cut> = std::collections::HashSet::new();
    let mut reach = FixedReach::new(g.n(), node.fixed_pairs());
    let mut parent = vec![usize::MAX; count];
    let mut queue = std::collections::VecDeque::new();
    for start in 0..count {
        if !on_cycles[start] {
            continue;
        }
        parent.fill(usize::MAX);
        queue.clear();
        queue.push_back(start);
        parent[start] = start;
        let mut last = None;
        'bfs: while let Some(u) = queue.pop_front() {
            for &v in &successors[u] {
                if v == start {
                    last = Some(u);
                    break 'bfs;
                }
                // A pair on no cycle leads nowhere back to `start` (and is first reached
                // from no pair that does: the search finds the same cycle without it).
                if parent[v] == usize::MAX && on_cycles[v] {
                    parent[v] = u;
                    queue.push_back(v);
                }
            }
        }
        let Some(last) = last else { continue };
        let cut = traced_cycle(pairs, &parent, start, last);
        if weighed.insert(cut.clone()) && cut.is_cluster_within(g, node, &mut reach) {
            found.push(cut);
        }
    }
    found
}

/// Clusters on the light precedence cycles of a fractional LP optimum that the optimum
/// violates. Each pair (with its value x > 0) weighs its shortfall `1 - x`; the pairs are
/// taken lightest first, and from each, the lightest cycle back to it through later pairs
/// only (so each cycle is found from its lightest pair, and a heavy start explores little),
/// with shortfalls summing below [`LIGHT_CYCLE_BUDGET`]. A cycle is kept when its pairs
/// share no number and no factor, the optimum puts more than |S| - 1 on all the edges from
/// its numbers S into its factors T (not only the cycle's: the flow may spread over several
/// bijections), and S and T form a cluster at `node`.
pub(super) fn light_cycle_clusters(
    g: &Graph,
    node: &Matching,
    pairs: &[((u32, u32), f64)],
) -> Vec<Cut> {
    // Each pair also costs a little, so that among equally light cycles the shortest wins.
    const STEP: f64 = 1e-3;
    let edges: Vec<(u32, u32)> = pairs.iter().map(|&(e, _)| e).collect();
    let weight: Vec<f64> = pairs
        .iter()
        .map(|&(_, x)| (1.0 - x).max(0.0) + STEP)
        .collect();
    let mut by_number: Vec<Vec<(u32, f64)>> = vec![Vec::new(); g.n() as usize + 1];
    for &((k, f), x) in pairs {
        by_number[k as usize].push((f, x));
    }
    let successors = precedence_successors(g.n(), &edges);
    let on_cycles = may_lie_on_cycles(&successors);
    let count = pairs.len();
    let mut order: Vec<usize> = (0..count).collect();
    order.sort_by(|&a, &b| weight[a].total_cmp(&weight[b]).then(a.cmp(&b)));
    let mut rank = vec![0usize; count];
    for (r, &i) in order.iter().enumerate() {
        rank[i] = r;
    }
    let mut found = Vec::new();
    let mut weighed: std::collections::HashSet<Cut> = std::collections::HashSet::new();
    let mut reach = FixedReach::new(g.n(), node.fixed_pairs());
    let mut dist = vec![f64::INFINITY; count];
    let mut parent = vec![usize::MAX; count];
    let mut touched = Vec::new();
    let mut heap = std::collections::BinaryHeap::new();
    for start in order {
        if !on_cycles[start] || weight[start] >= LIGHT_CYCLE_BUDGET {
            continue;
        }
        for &v in &touched {
            dist[v] = f64::INFINITY;
            parent[v] = usize::MAX;
        }
        touched.clear();
        heap.clear();
        dist[start] = weight[start];
        parent[start] = start;
        touched.push(start);
        heap.push(Light(weight[start], start));
        let (number, factor) = edges[start];
        let mut last = None;
        while let Some(Light(d, u)) = heap.pop() {
            if d > dist[u] {
                continue;
            }
            if successors[u].binary_search(&start).is_ok() {
                last = Some(u);
                break;
            }
            for &v in &successors[u] {
                let through = d + weight[v];
                let usable = rank[v] > rank[start]
                    && edges[v].0 != number
                    && edges[v].1 != factor
                    && on_cycles[v];
                if usable && through < LIGHT_CYCLE_BUDGET && through < dist[v] {
                    if dist[v].is_infinite() {
                        touched.push(v);
                    }
                    dist[v] = through;
                    parent[v] = u;
                    heap.push(Light(through, v));
                }
            }
        }
        let Some(last) = last else { continue };
        let cut = traced_cycle(&edges, &parent, start, last);
        let distinct = cut.numbers.windows(2).all(|w| w[0] < w[1])
            && cut.factors.windows(2).all(|w| w[0] < w[1])
            && cut
                .numbers
                .iter()
                .all(|k| cut.factors.binary_search(k).is_err());
        let load: f64 = cut
            .numbers
            .iter()
            .flat_map(|&k| &by_number[k as usize])
            .filter(|(f, _)| cut.factors.binary_search(f).is_ok())
            .map(|&(_, x)| x)
            .sum();
        let violated = load > cut.most as f64 + 1e-6;
        if distinct
            && violated
            && weighed.insert(cut.clone())
            && cut.is_cluster_within(g, node, &mut reach)
        {
            found.push(cut);
        }
    }
    found
}

/// The cluster-shaped cut of the cycle that closes from `last` back to `start`, traced
/// through `parent` (each pair's predecessor on the path from `start`), S and T sorted.
fn traced_cycle(pairs: &[(u32, u32)], parent: &[usize], start: usize, last: usize) -> Cut {
    let mut u = last;
    let mut members = vec![pairs[u]];
    while u != start {
        u = parent[u];
        members.push(pairs[u]);
    }
    let mut cut = Cut::cluster(
        members.iter().map(|p| p.0).collect(),
        members.iter().map(|p| p.1).collect(),
    );
    cut.numbers.sort_unstable();
    cut.factors.sort_unstable();
    cut
}

/// A heap entry of [`light_cycle_clusters`]: a pair and its distance, lightest first.
#[derive(PartialEq)]
struct Light(f64, usize);

impl Eq for Light {}

impl PartialOrd for Light {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Light {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other.0.total_cmp(&self.0).then(other.1.cmp(&self.1))
    }
}

/// The precedence successors of each pair (numbers up to `n`): the pairs whose number is a
/// multiple of its factor, in increasing index. Pairs may share numbers.
fn precedence_successors(n: u32, pairs: &[(u32, u32)]) -> Vec<Vec<usize>> {
    let mut index: Vec<Vec<usize>> = vec![Vec::new(); n as usize + 1];
    for (i, &(a, _)) in pairs.iter().enumerate() {
        index[a as usize].push(i);
    }
    pairs
        .iter()
        .enumerate()
        .map(|(i, &(_, b))| {
            let mut next = Vec::new();
            if b > 1 {
                let mut m = b;
                while m <= n {
                    next.extend(index[m as usize].iter().copied().filter(|&j| j != i));
                    m += b;
                }
            }
            next.sort_unstable();
            next
        })
        .collect()
}

/// False for nodes that lie on no cycle of the graph `successors`: those peeled off by
/// repeatedly removing nodes without predecessors or without successors left (nodes left
/// may still lie on none, between two cycles).
fn may_lie_on_cycles(successors: &[Vec<usize>]) -> Vec<bool> {
    let count = successors.len();
    let mut predecessors = vec![Vec::new(); count];
    for (i, next) in successors.iter().enumerate() {
        for &j in next {
            predecessors[j].push(i);
        }
    }
    let mut ins: Vec<usize> = predecessors.iter().map(Vec::len).collect();
    let mut outs: Vec<usize> = successors.iter().map(Vec::len).collect();
    let mut kept = vec![true; count];
    let mut peel: Vec<usize> = (0..count)
        .filter(|&i| ins[i] == 0 || outs[i] == 0)
        .collect();
    for &i in &peel {
        kept[i] = false;
    }
    while let Some(i) = peel.pop() {
        for &j in &successors[i] {
            ins[j] -= 1;
            if kept[j] && ins[j] == 0 {
                kept[j] = false;
                peel.push(j);
            }
        }
        for &j in &predecessors[i] {
            outs[j] -= 1;
            if kept[j] && outs[j] == 0 {
                kept[j] = false;
                peel.push(j);
            }
        }
    }
    kept
}

/// The dual LP (module docs) of the live graph of `node` with `cuts`, unsolved.
pub struct DualLp {
    /// The LP.
    pub problem: Problem,
    /// `y_v` per number v (index v; 0 unused).
    pub y: Vec<Variable>,
    /// `z_c` per cut, in the order given.
    pub z: Vec<Variable>,
    /// Each edge row as (big, small, its slack when asked for).
    pub rows: Vec<(u32, u32, Option<Variable>)>,
}

impl DualLp {
    /// Builds the LP; with `slack_cost`, each edge row gets a slack `>= 0` of that cost
    /// ([`super::warm_lp`] drops a row by fixing it).
    pub fn new(g: &Graph, node: &Matching, cuts: &[Cut], slack_cost: Option<f64>) -> Self {
        Self::with_rhs(g, node, cuts, |c| c.most, slack_cost)
    }

    /// [`DualLp::new`] with each cut's right-hand side (the most edges a game has in it)
    /// given by `rhs` instead of |S| - 1 (a measurement of other cut families).
    pub fn with_rhs(
        g: &Graph,
        node: &Matching,
        cuts: &[Cut],
        rhs: impl Fn(&Cut) -> usize,
        slack_cost: Option<f64>,
    ) -> Self {
        let n = g.n();
        let mut problem = Problem::new(OptimizationDirection::Minimize);
        let y: Vec<Variable> = (0..=n)
            .map(|v| {
                let cost = if v == 0 || node.is_fixed(v) { 0.0 } else { 1.0 };
                problem.add_var(cost, (0.0, f64::INFINITY))
            })
            .collect();
        let z: Vec<Variable> = cuts
            .iter()
            .map(|c| problem.add_var(rhs(c) as f64, (0.0, f64::INFINITY)))
            .collect();
        let mut cuts_of: std::collections::HashMap<(u32, u32), Vec<usize>> = Default::default();
        for (i, c) in cuts.iter().enumerate() {
            for e in c.edges(g) {
                cuts_of.entry(e).or_default().push(i);
            }
        }
        let mut rows = Vec::new();
        for big in 2..=n {
            for e in node.live_edges(g, big).filter(|e| e.big == big) {
                let mut row: LinearExpr = [(y[big as usize], 1.0), (y[e.other as usize], 1.0)]
                    .into_iter()
                    .collect();
                for &i in cuts_of.get(&(big, e.other)).into_iter().flatten() {
                    row.add(z[i], 1.0);
                }
                let slack = slack_cost.map(|cost| problem.add_var(cost, (0.0, f64::INFINITY)));
                if let Some(s) = slack {
                    row.add(s, 1.0);
                }
                problem.add_constraint(row, ComparisonOp::Ge, f64::from(big));
                rows.push((big, e.other, slack));
            }
        }
        DualLp {
            problem,
            y,
            z,
            rows,
        }
    }
}

/// The floors of an optimal `z` of the dual LP (module docs) of the live graph of `node`, as
/// penalties; `None` if the LP fails.
fn dual_penalties(g: &Graph, node: &Matching, cuts: &[Cut]) -> Option<Penalties> {
    let lp = DualLp::new(g, node, cuts, None);
    let solution = lp.problem.solve().ok()?.into_solution().ok()?;
    let cuts = cuts
        .iter()
        .zip(&lp.z)
        .filter_map(|(c, &var)| {
            let lambda = (solution[var] + 1e-6).floor() as i32;
            (lambda > 0).then(|| (c.clone(), lambda))
        })
        .collect();
    Some(Penalties { cuts })
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The successors are those of the definition, and every pair on a precedence cycle
        /// (found by a transitive closure) is kept by the peeling.
        #[test]
        fn successors_and_peeling_agree_with_the_definitions(
            numbers in proptest::collection::vec(2u32..120, 0..40),
            factors in proptest::collection::vec(1u32..30, 40),
        ) {
            let pairs: Vec<(u32, u32)> =
                numbers.iter().zip(&factors).map(|(&a, &b)| (a, b)).collect();
            let count = pairs.len();
            let successors = precedence_successors(120, &pairs);
            let mut reach = vec![vec![false; count]; count];
            for i in 0..count {
                let want: Vec<usize> = (0..count)
                    .filter(|&j| j != i && pairs[i].1 > 1 && pairs[j].0.is_multiple_of(pairs[i].1))
                    .collect();
                proptest::prop_assert_eq!(&successors[i], &want);
                for j in want {
                    reach[i][j] = true;
                }
            }
            for k in 0..count {
                for i in 0..count {
                    for j in 0..count {
                        if reach[i][k] && reach[k][j] {
                            reach[i][j] = true;
                        }
                    }
                }
            }
            let kept = may_lie_on_cycles(&successors);
            for i in 0..count {
                proptest::prop_assert!(!reach[i][i] || kept[i], "pair {i} is on a cycle");
            }
        }
    }

    #[test]
    fn clusters_are_recognised_and_other_sets_are_not() {
        let g = Graph::new(30);
        // 6 is both a number and a factor: not a cut.
        let overlapping = Cut::cluster(vec![6, 9], vec![3, 6]);
        assert!(!overlapping.is_cluster(&g));
        // S = {10, 15}, T = {2, 5}: the only bijection is (10, 2), (15, 5) (15 / 2 is not
        // whole); 5 | 10 but 2 does not divide 15, so it is acyclic: not a cluster.
        let acyclic = Cut::cluster(vec![10, 15], vec![2, 5]);
        assert!(!acyclic.is_cluster(&g));
        // S = {6, 10, 15}, T = {2, 3, 5}: the two bijections are (6, 3), (10, 2), (15, 5)
        // (3 | 15, 5 | 10, 2 | 6) and (6, 2), (10, 5), (15, 3) (2 | 10, 5 | 15, 3 | 6): both
        // cycles, so no game has all three numbers on factors among 2, 3 and 5.
        let classic = Cut::cluster(vec![6, 10, 15], vec![2, 3, 5]);
        assert!(classic.is_cluster(&g));
        assert_eq!(classic.edges(&g).len(), 6);
        // The cuts a derivation keeps are clusters with positive penalties.
        let (penalties, _) = derive(200, &[(199, 1)]);
        assert!(!penalties.cuts.is_empty());
        for (cut, lambda) in &penalties.cuts {
            assert!(*lambda > 0 && cut.is_cluster(&Graph::new(200)), "{cut:?}");
        }
    }

    #[test]
    fn penalties_keep_the_bound_above_the_optimum_and_tighten_it() {
        // Published optima (OEIS A019312): N = 60 -> 1137, 120 -> 4593, 200 -> 12648.
        for (n, optimum) in [(60u32, 1137i64), (120, 4593), (200, 12648)] {
            let root = [(super::super::search::largest_prime(n), 1)];
            let mut scratch = Scratch::default();
            let plain = Matching::new(&Graph::new(n), &root, &mut scratch).bound();
            let (penalties, bound) = derive(n, &root);
            let mut g = Graph::new(n);
            apply(&mut g, &penalties).unwrap();
            let m = Matching::new(&g, &root, &mut scratch);
            m.check(&g).unwrap();
            assert_eq!(m.bound(), bound);
            assert!(
                optimum <= bound && bound <= plain,
                "n = {n}: {optimum} {bound} {plain}"
            );
        }
        // At N = 200 the cuts close the whole gap (measured: 12,664 -> 12,648).
        assert_eq!(derive(200, &[(199, 1)]).1, 12648);
    }

    #[test]
    fn certificates_check_independently_and_state_the_derived_bound() {
        // Published optima (OEIS A019312): N = 120 -> 4593, 200 -> 12648.
        for (n, optimum) in [(120u32, 4593i64), (200, 12648)] {
            let cert = certify(n);
            let bound = derive(n, &[(super::super::search::largest_prime(n), 1)]).1;
            assert_eq!(
                super::super::certificate::check(&cert),
                Ok(bound),
                "n = {n}"
            );
            assert!(optimum <= bound);
        }
    }

    #[test]
    fn a_rank_cut_applies_only_from_the_pool_that_proved_it() {
        let n = 400;
        let g = Graph::new(n);
        let root = [(397, 1)];
        let node = Matching::new(&g, &root, &mut Scratch::default());
        let pool = RankPool::at_root(n, 30);
        let cut = pool.cuts()[0].clone();
        let with = |pool: Option<&RankPool>, cut: &Cut| {
            let penalties = Penalties {
                cuts: vec![(cut.clone(), 2)],
            };
            apply_at_with(&mut Graph::new(n), &node, &penalties, pool)
        };
        assert_eq!(with(Some(&pool), &cut), Ok(()));
        assert!(with(None, &cut).unwrap_err().contains("not a valid cut"));
        let tighter = Cut {
            most: cut.most - 1,
            ..cut
        };
        assert!(with(Some(&pool), &tighter)
            .unwrap_err()
            .contains("not a valid cut"));
    }

    #[test]
    fn light_cycles_give_the_clusters_a_fractional_optimum_violates() {
        let g = Graph::new(30);
        let node = Matching::new(&g, &[(29, 1)], &mut Scratch::default());
        let classic = Cut::cluster(vec![6, 10, 15], vec![2, 3, 5]);
        // The cycle (6, 3) -> (15, 5) -> (10, 2) -> (6, 3) at x each, beside the other
        // bijection's pairs at y each (sharing every number with the first).
        let at = |x: f64, y: f64| -> Vec<((u32, u32), f64)> {
            vec![
                ((6, 3), x),
                ((15, 5), x),
                ((10, 2), x),
                ((6, 2), y),
                ((10, 5), y),
                ((15, 3), y),
            ]
        };
        // 3 * 0.8 = 2.4 > |S| - 1 = 2 on the cycle's own edges.
        assert_eq!(
            light_cycle_clusters(&g, &node, &at(0.8, 0.2)),
            vec![classic.clone()]
        );
        // At 1/2 each, every cycle falls 1.5 short, yet the six edges carry 3 > 2: violated.
        assert_eq!(
            light_cycle_clusters(&g, &node, &at(0.5, 0.5)),
            vec![classic]
        );
        // 3 * 0.6 = 1.8 < 2: not violated, however light the cycle.
        assert!(light_cycle_clusters(&g, &node, &at(0.6, 0.0)).is_empty());
        // A light cycle whose pairs share a number, (10, 5) -> (10, 2) -> (10, 5), is no
        // cluster candidate.
        let shared = vec![((10, 5), 1.0), ((10, 2), 1.0)];
        assert!(light_cycle_clusters(&g, &node, &shared).is_empty());
    }

    #[test]
    fn a_cut_that_is_not_a_cluster_is_refused() {
        let mut g = Graph::new(30);
        let acyclic = Penalties {
            cuts: vec![(Cut::cluster(vec![10, 15], vec![2, 5]), 3)],
        };
        assert!(apply(&mut g, &acyclic)
            .unwrap_err()
            .contains("not a valid cut"));
    }
}
