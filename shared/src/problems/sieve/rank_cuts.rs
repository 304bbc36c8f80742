//! Rank cuts: a family of cuts stronger than clusters, proven once per N and then shared by
//! every node of every unit.
//!
//! # The cuts
//!
//! For disjoint sets S of numbers and T of factors, a game's pairs from S into T share no
//! number, and together they are acyclic. So a game has at most r(S, T) edges from S into
//! T, where r(S, T), the *rank*, is the size of the largest acyclic assignment of numbers of
//! S to distinct factors of T along edges (with the root's fixed pair). A cluster is the
//! case |S| = |T|, r = |S| - 1. The union of two clusters has rank at most |S| - 2 when
//! the two stay disjoint, and often exactly that, but its cut also covers the edges
//! *between* the two (from one's numbers into the other's factors), which the two cluster
//! cuts leave free: measured at N = 741 and 785, such unions lower the root's cut LP by
//! about 30% of its gap to the optimum (BENCHMARKS.md "Rank cuts at the root"). Only
//! unions with an edge between their parts are kept: without one, the union's cut is at
//! best the sum of the parts' (785: 673 such unions of 22,328 with rank |S| - 2).
//!
//! # Proven once
//!
//! A rank is found by a search over assignments ([`rank_of`]) that allows d = 0, 1, 2, ...
//! numbers to go unassigned: the first d with an acyclic assignment gives r = |S| - d. That
//! search is far too slow to repeat at every node (tens of milliseconds a cut), so
//! [`RankPool::unions`] proves each cut once, for the whole graph with the root's fixed
//! pair, and a node uses a cut only as a member of the pool that proved it: every game of
//! every node is a game of the root, so the cut holds for it. A node uses a cut only while
//! none of its numbers and factors is fixed there (then all of a game's edges from S into T
//! are live edges of the node).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use rayon::prelude::*;

use super::cuts::Cut;
use super::matching::{Graph, Matching, Scratch};
use super::regions::is_acyclic;

/// Rounds of cluster finding at the root ([`RankPool::at_root`]).
const ROOT_ROUNDS: usize = 40;

/// Most clusters in a union ([`RankPool::unions`]). (Three, at 785 with unions of at
/// most 30 numbers: the pool had not been built after 16 minutes of both cores.)
const MAX_CLUSTERS: usize = 2;

/// Steps a rank search may take before it gives up (the cut is then not kept).
const RANK_BUDGET: u64 = 2_000_000;

/// The rank cuts proven for one N (module docs).
#[derive(Debug, Default)]
pub struct RankPool {
    cuts: Vec<Cut>,
    /// Each cut's edges as indices of [`edge_index`].
    edge_ids: Vec<Vec<u32>>,
    /// The numbering of [`edge_index`], shared by the pools grown from one another.
    index: Arc<HashMap<(u32, u32), u32>>,
    proven: HashSet<Cut>,
    /// Each cut's S and T.
    sets: HashSet<(Vec<u32>, Vec<u32>)>,
}

/// The graph's edges (big, small) by their number in [`Graph::numbered_edges`] (the
/// numbering of the side LP's columns).
pub fn edge_index(g: &Graph) -> HashMap<(u32, u32), u32> {
    g.numbered_edges()
        .into_iter()
        .enumerate()
        .map(|(i, e)| (e, i as u32))
        .collect()
}

impl RankPool {
    /// [`RankPool::unions`] of the clusters the root's cut rounds find for N = `n` (with the
    /// search's root pair fixed).
    pub fn at_root(n: u32, max_union: usize) -> Self {
        let g = Graph::new(n);
        let root = super::search::Searcher::root_pairs(n);
        let node = Matching::new(&g, &root, &mut Scratch::default());
        let (_, _, clusters) = super::cuts::derive_all_at(&g, &node, Vec::new(), ROOT_ROUNDS);
        Self::unions(&g, &root, &clusters, max_union)
    }

    /// The unions of up to `MAX_CLUSTERS` (2) of `clusters` (clusters of `g`'s whole graph),
    /// connected by edges between them, pairwise disjoint (S against T) and of at most
    /// `max_union` numbers, each with its rank, kept when the rank is at least the number
    /// of parts below |S| (else the parts' cluster cuts say as much). `fixed`: the root's
    /// fixed pairs. The ranks are searched in parallel on the current rayon pool; a search
    /// past its step budget keeps nothing.
    pub fn unions(g: &Graph, fixed: &[(u32, u32)], clusters: &[Cut], max_union: usize) -> Self {
        Self::unions_with(g, fixed, &|_, _| true, clusters, max_union)
    }

    /// The cuts of `candidates` (sets S and T, each the union of two clusters at `node`)
    /// whose rank for the games of `node` (its fixed pairs, over its live edges) is at
    /// least 2 below |S|, each with that rank: they hold in its subtree only. A rank search
    /// past `budget` steps keeps nothing.
    pub fn proven_at(
        g: &Graph,
        node: &Matching,
        candidates: &[(Vec<u32>, Vec<u32>)],
        budget: u64,
    ) -> Self {
        let fixed = node.fixed_pairs();
        let live = |k, b| node.is_live(g, k, b);
        // In turn: a node's few candidates are not worth waking other threads.
        let cuts = candidates
            .iter()
            .filter_map(|(s, t)| {
                let most = s.len().min(t.len()).checked_sub(2)?;
                RankSearch::new(g, s, t, &fixed, &live, budget)
                    .rank_at_most(most)?
                    .then(|| Cut {
                        numbers: s.clone(),
                        factors: t.clone(),
                        most,
                    })
            })
            .collect();
        Self::from_proven(g, cuts)
    }

    /// This pool with `other`'s cuts added.
    pub fn merged(&self, g: &Graph, other: &RankPool) -> Self {
        let mut pool = RankPool {
            cuts: self.cuts.clone(),
            edge_ids: self.edge_ids.clone(),
            index: Arc::clone(&self.index),
            proven: self.proven.clone(),
            sets: self.sets.clone(),
        };
        for c in &other.cuts {
            pool.push(g, c.clone());
        }
        pool
    }

    /// Adds `cut` (proven by the caller) unless the pool has it.
    fn push(&mut self, g: &Graph, cut: Cut) {
        if self.proven.contains(&cut) {
            return;
        }
        self.edge_ids
            .push(cut.edges(g).iter().map(|e| self.index[e]).collect());
        self.sets.insert((cut.numbers.clone(), cut.factors.clone()));
        self.proven.insert(cut.clone());
        self.cuts.push(cut);
    }

    /// True when the pool has a cut on the sets S and T (whatever its bound), or was told
    /// they were tried ([`RankPool::tried`]).
    pub fn has_sets(&self, s: &[u32], t: &[u32]) -> bool {
        self.sets.contains(&(s.to_vec(), t.to_vec()))
    }

    /// Marks the sets of `candidates` as tried: [`RankPool::has_sets`] is then true for them.
    pub fn tried(&mut self, candidates: Vec<(Vec<u32>, Vec<u32>)>) {
        self.sets.extend(candidates);
    }

    /// [`RankPool::unions`] over the edges `live` accepts.
    fn unions_with(
        g: &Graph,
        fixed: &[(u32, u32)],
        live: &(dyn Fn(u32, u32) -> bool + Sync),
        clusters: &[Cut],
        max_union: usize,
    ) -> Self {
        // Two clusters are linked when their union stays disjoint (S against T) and some
        // edge runs between them: without one, the union's cut is at best the sum of theirs.
        let crossing = |x: &Cut, y: &Cut| {
            x.numbers.iter().any(|&k| {
                y.factors
                    .iter()
                    .any(|&f| g.bit_of(k, f).is_some() && live(k, f))
            })
        };
        let disjoint = |x: &Cut, y: &Cut| {
            x.numbers.iter().all(|k| !y.factors.contains(k))
                && y.numbers.iter().all(|k| !x.factors.contains(k))
        };
        let linked: Vec<Vec<usize>> = (0..clusters.len())
            .map(|i| {
                (0..clusters.len())
                    .filter(|&j| {
                        let (a, b) = (&clusters[i], &clusters[j]);
                        j != i && disjoint(a, b) && (crossing(a, b) || crossing(b, a))
                    })
                    .collect()
            })
            .collect();
        // Connected sets of up to MAX_CLUSTERS linked clusters, pairwise disjoint.
        let mut sets: BTreeSet<Vec<usize>> = BTreeSet::new();
        let mut layer: BTreeSet<Vec<usize>> = (0..clusters.len()).map(|i| vec![i]).collect();
        for _ in 1..MAX_CLUSTERS {
            let mut next = BTreeSet::new();
            for set in &layer {
                for &i in set {
                    for &j in &linked[i] {
                        if set.contains(&j)
                            || !set.iter().all(|&m| disjoint(&clusters[m], &clusters[j]))
                        {
                            continue;
                        }
                        let mut grown = set.clone();
                        grown.push(j);
                        grown.sort_unstable();
                        let size: usize = grown.iter().map(|&m| clusters[m].numbers.len()).sum();
                        if size <= max_union {
                            next.insert(grown);
                        }
                    }
                }
            }
            sets.extend(next.iter().cloned());
            layer = next;
        }
        // Each union once (two sets of clusters can make the same S and T), with its
        // fewest parts.
        let mut unions: BTreeMap<(Vec<u32>, Vec<u32>), usize> = BTreeMap::new();
        for set in sets {
            let s: BTreeSet<u32> = set
                .iter()
                .flat_map(|&m| clusters[m].numbers.iter().copied())
                .collect();
            let t: BTreeSet<u32> = set
                .iter()
                .flat_map(|&m| clusters[m].factors.iter().copied())
                .collect();
            let parts = unions
                .entry((s.into_iter().collect(), t.into_iter().collect()))
                .or_insert(set.len());
            *parts = (*parts).min(set.len());
        }
        let candidates: Vec<(Vec<u32>, Vec<u32>, usize)> = unions
            .into_iter()
            .map(|((s, t), parts)| (s, t, parts))
            .collect();
        Self::from_proven(g, prove(g, fixed, live, candidates, RANK_BUDGET))
    }

    /// A pool of cuts whose bounds the caller has proven (each `most` at least the rank).
    fn from_proven(g: &Graph, cuts: Vec<Cut>) -> Self {
        let mut pool = RankPool {
            index: Arc::new(edge_index(g)),
            ..RankPool::default()
        };
        for cut in cuts {
            pool.push(g, cut);
        }
        pool
    }

    /// The pool's cuts.
    pub fn cuts(&self) -> &[Cut] {
        &self.cuts
    }

    /// True when the pool proved `cut`.
    pub fn contains(&self, cut: &Cut) -> bool {
        self.proven.contains(cut)
    }

    /// True when `cut` holds for every game of `node`: it is in the pool and none of its
    /// numbers and factors is fixed at the node.
    pub fn holds_at(&self, cut: &Cut, node: &Matching) -> bool {
        self.contains(cut)
            && cut
                .numbers
                .iter()
                .chain(&cut.factors)
                .all(|&v| !node.is_fixed(v))
    }

    /// The pool's cuts that hold at `node` and that the edge values `x` (by [`edge_index`])
    /// violate by more than `tolerance`, most violated first.
    pub fn violated_at(&self, node: &Matching, x: &[f64], tolerance: f64) -> Vec<Cut> {
        if x.len() != self.index.len() {
            // Values of another graph: nothing to compare.
            return Vec::new();
        }
        let mut found: Vec<(f64, &Cut)> = self
            .cuts
            .iter()
            .zip(&self.edge_ids)
            .filter_map(|(c, ids)| {
                let load: f64 = ids.iter().map(|&i| x[i as usize]).sum();
                let excess = load - c.most as f64;
                (excess > tolerance && self.holds_at(c, node)).then_some((excess, c))
            })
            .collect();
        found.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
        found.into_iter().map(|(_, c)| c.clone()).collect()
    }
}

/// The cuts of `candidates` (S, T and how many clusters they join) whose rank (with `fixed`
/// first, over the edges `live` accepts) is at least the number of parts below |S| (else
/// the parts' cluster cuts say as much), searched in parallel on the current rayon pool.
fn prove(
    g: &Graph,
    fixed: &[(u32, u32)],
    live: &(dyn Fn(u32, u32) -> bool + Sync),
    candidates: Vec<(Vec<u32>, Vec<u32>, usize)>,
    budget: u64,
) -> Vec<Cut> {
    candidates
        .into_par_iter()
        .filter_map(|(s, t, parts)| {
            let most = RankSearch::new(g, &s, &t, fixed, live, budget).rank()?;
            (most + parts <= s.len().min(t.len())).then_some(Cut {
                numbers: s,
                factors: t,
                most,
            })
        })
        .collect()
}

/// The rank r(S, T) (module docs) with `fixed` pairs first, or `None` past `budget` steps.
pub fn rank_of(
    g: &Graph,
    s: &[u32],
    t: &[u32],
    fixed: &[(u32, u32)],
    budget: u64,
) -> Option<usize> {
    RankSearch::new(g, s, t, fixed, &|_, _| true, budget).rank()
}

/// The pairs of `fixed` that can lie on a precedence cycle through pairs from S into T
/// (i -> j when i's factor, above 1, divides j's number): those reached from a factor of T
/// through fixed pairs and reaching a number of S through fixed pairs. (On such a cycle,
/// each fixed pair follows a pair into T through fixed pairs only, and leads the same way
/// to the next pair from S.) The others cannot close a cycle, so the search leaves them out.
fn relevant_fixed(fixed: &[(u32, u32)], s: &[u32], t: &[u32]) -> Vec<(u32, u32)> {
    let precedes = |b: u32, k: u32| b > 1 && k.is_multiple_of(b);
    let closure = |mut marked: Vec<bool>, step: &dyn Fn(usize, usize) -> bool| {
        let mut changed = true;
        while changed {
            changed = false;
            for j in 0..fixed.len() {
                if !marked[j] && (0..fixed.len()).any(|i| marked[i] && step(i, j)) {
                    marked[j] = true;
                    changed = true;
                }
            }
        }
        marked
    };
    let reached = closure(
        fixed
            .iter()
            .map(|&(k, _)| t.iter().any(|&b| precedes(b, k)))
            .collect(),
        &|i, j| precedes(fixed[i].1, fixed[j].0),
    );
    let reaching = closure(
        fixed
            .iter()
            .map(|&(_, b)| s.iter().any(|&k| precedes(b, k)))
            .collect(),
        &|i, j| precedes(fixed[j].1, fixed[i].0),
    );
    fixed
        .iter()
        .zip(reached.iter().zip(&reaching))
        .filter(|(_, (&a, &b))| a && b)
        .map(|(&p, _)| p)
        .collect()
}

/// The depth-first search of [`rank_of`].
struct RankSearch {
    options: Vec<Vec<(u32, u32)>>,
    /// |T|.
    factors: usize,
    chosen: Vec<(u32, u32)>,
    fixed: usize,
    colour: Vec<u8>,
    steps: u64,
    budget: u64,
}

impl RankSearch {
    /// The search for assignments of `s` into `t` along the edges `live` accepts.
    fn new(
        g: &Graph,
        s: &[u32],
        t: &[u32],
        fixed: &[(u32, u32)],
        live: &(dyn Fn(u32, u32) -> bool + Sync),
        budget: u64,
    ) -> Self {
        let options = s
            .iter()
            .map(|&k| {
                t.iter()
                    .filter(|&&b| g.bit_of(k, b).is_some() && live(k, b))
                    .map(|&b| (k, b))
                    .collect()
            })
            .collect();
        let fixed = relevant_fixed(fixed, s, t);
        RankSearch {
            options,
            factors: t.len(),
            fixed: fixed.len(),
            chosen: fixed,
            colour: Vec::new(),
            steps: 0,
            budget,
        }
    }

    /// The rank r(S, T) (with the fixed pairs first, over the live edges), or `None` past
    /// the budget.
    fn rank(&mut self) -> Option<usize> {
        if !self.fixed_admit_a_game() {
            // No game holds the fixed pairs: every bound holds vacuously, 0 included.
            return Some(0);
        }
        let numbers = self.options.len();
        for skips in numbers.saturating_sub(self.factors)..=numbers {
            if self.fits(0, skips)? {
                return Some(numbers - skips);
            }
        }
        Some(0)
    }

    /// Whether the rank is at most `most` (one search: can more than `most` numbers be
    /// assigned?), or `None` past the budget.
    fn rank_at_most(&mut self, most: usize) -> Option<bool> {
        let numbers = self.options.len();
        if !self.fixed_admit_a_game() || most >= numbers {
            return Some(true);
        }
        // More than `most` assigned: at most |S| - most - 1 left out.
        Some(!self.fits(0, numbers - most - 1)?)
    }

    /// Whether the fixed pairs the search keeps are acyclic (some game holds them).
    fn fixed_admit_a_game(&mut self) -> bool {
        is_acyclic(&self.chosen, 0, &mut self.colour)
    }

    /// Whether the numbers from `at` on can be assigned acyclically with at most `skips`
    /// of them left out (`None` past the budget).
    fn fits(&mut self, at: usize, skips: usize) -> Option<bool> {
        self.steps += 1;
        if self.steps > self.budget {
            return None;
        }
        if at == self.options.len() {
            return Some(true);
        }
        for i in 0..self.options[at].len() {
            let (a, b) = self.options[at][i];
            if self.chosen[self.fixed..].iter().any(|&(_, x)| x == b) {
                continue;
            }
            self.chosen.push((a, b));
            let found = if is_acyclic(&self.chosen, self.chosen.len() - 1, &mut self.colour) {
                self.fits(at + 1, skips)?
            } else {
                false
            };
            self.chosen.pop();
            if found {
                return Some(true);
            }
        }
        if skips > 0 {
            return self.fits(at + 1, skips - 1);
        }
        Some(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rank by brute force: every subset of edges from S into T (that `live` accepts),
    /// no two sharing a number, acyclic with the fixed pairs (all of them).
    fn rank_by_subsets(
        g: &Graph,
        s: &[u32],
        t: &[u32],
        fixed: &[(u32, u32)],
        live: &dyn Fn(u32, u32) -> bool,
    ) -> usize {
        let edges: Vec<(u32, u32)> = s
            .iter()
            .flat_map(|&k| {
                t.iter()
                    .filter(move |&&b| g.bit_of(k, b).is_some() && live(k, b))
                    .map(move |&b| (k, b))
            })
            .collect();
        let mut best = 0;
        for mask in 0u32..(1 << edges.len()) {
            let chosen: Vec<(u32, u32)> = (0..edges.len())
                .filter(|i| mask >> i & 1 == 1)
                .map(|i| edges[i])
                .collect();
            let mut numbers: Vec<u32> = chosen.iter().flat_map(|&(a, b)| [a, b]).collect();
            numbers.sort_unstable();
            numbers.dedup();
            if numbers.len() != 2 * chosen.len() || chosen.len() <= best {
                continue;
            }
            let mut all = fixed.to_vec();
            all.extend(&chosen);
            if is_acyclic(&all, 0, &mut Vec::new()) {
                best = chosen.len();
            }
        }
        best
    }

    #[test]
    fn ranks_agree_with_trying_every_subset() {
        let g = Graph::new(60);
        let fixed = [(59, 1)];
        // The classic cluster {6, 10, 15} / {2, 3, 5} has rank 2; two disjoint copies of
        // the pattern (x 7 for the second) and mixed sets besides.
        let sets: [(&[u32], &[u32]); 5] = [
            (&[6, 10, 15], &[2, 3, 5]),
            (&[6, 10, 15, 42], &[2, 3, 5, 14, 21]),
            (&[12, 20, 30, 45], &[4, 6, 9, 10, 15]),
            (&[10, 15], &[2, 5]),
            (&[6, 10, 15, 35, 55], &[2, 3, 5, 7, 11]),
        ];
        for (s, t) in sets {
            let want = rank_by_subsets(&g, s, t, &fixed, &|_, _| true);
            assert_eq!(
                rank_of(&g, s, t, &fixed, u64::MAX),
                Some(want),
                "{s:?} {t:?}"
            );
        }
        assert_eq!(
            rank_of(&g, &[6, 10, 15], &[2, 3, 5], &fixed, u64::MAX),
            Some(2)
        );
    }

    /// At a node: fixed pairs that close cycles with S and T (and others that cannot),
    /// some edges dead. The ranks, and the one-search bound of the tree's cuts, agree
    /// with trying every subset against every fixed pair.
    #[test]
    fn ranks_at_a_node_agree_with_trying_every_subset() {
        let g = Graph::new(90);
        // Fixed pairs that meet the sets below, and (89, 1), which precedes nothing.
        let fixed = [(89, 1), (21, 7), (35, 5), (77, 11), (26, 13)];
        let dead = [(30, 15), (45, 9)];
        let live = |k: u32, b: u32| !dead.contains(&(k, b));
        let sets: [(&[u32], &[u32]); 4] = [
            (&[6, 10, 15], &[2, 3, 5]),
            (&[12, 20, 30, 45], &[4, 6, 9, 10, 15]),
            (&[6, 10, 15, 42, 14], &[2, 3, 5, 14, 6]),
            (&[18, 12, 50, 75], &[6, 9, 25, 4]),
        ];
        for (s, t) in sets {
            let want = rank_by_subsets(&g, s, t, &fixed, &live);
            assert_eq!(
                RankSearch::new(&g, s, t, &fixed, &live, u64::MAX).rank(),
                Some(want),
                "{s:?} {t:?}"
            );
            for most in 0..=s.len() {
                assert_eq!(
                    RankSearch::new(&g, s, t, &fixed, &live, u64::MAX).rank_at_most(most),
                    Some(want <= most),
                    "{s:?} {t:?} at most {most}"
                );
            }
        }
        // The fixed pairs the search keeps: those that can sit on a cycle with the sets.
        let kept = relevant_fixed(&fixed, &[6, 10, 15], &[2, 3, 5]);
        assert!(
            !kept.contains(&(89, 1)) && kept.contains(&(35, 5)),
            "{kept:?}"
        );
    }

    #[test]
    fn the_pool_keeps_proven_unions_and_no_other_cut_holds() {
        let n = 400;
        let g = Graph::new(n);
        let fixed = [(397, 1)];
        let node = Matching::new(&g, &fixed, &mut Scratch::default());
        let (_, _, clusters) = super::super::cuts::derive_all_at(&g, &node, Vec::new(), 40);
        let pool = RankPool::unions(&g, &fixed, &clusters, 12);
        assert!(
            !pool.cuts().is_empty(),
            "N = 200 has rank cuts (7 measured)"
        );
        for cut in pool.cuts() {
            assert!(cut.most + 2 <= cut.numbers.len() && cut.numbers.len() <= 30);
            assert_eq!(
                rank_of(&g, &cut.numbers, &cut.factors, &fixed, u64::MAX),
                Some(cut.most),
                "{cut:?}"
            );
            assert!(pool.holds_at(cut, &node));
        }
        // A cut the pool did not prove does not hold, whatever its bound.
        let stranger = Cut {
            numbers: vec![6, 10, 15],
            factors: vec![2, 3, 5],
            most: 1,
        };
        assert!(!pool.holds_at(&stranger, &node));
    }
}
