//! The upper bound: a maximum-weight matching on the "principal factor" graph, kept
//! incrementally under the two changes the search makes (fix a matched pair, exclude an edge).
//!
//! The graph has a node per number 1..=N and an edge x - x/p for every prime p dividing x,
//! weighing x (the points x scores when it is selected with x/p as its principal factor).
//! Every game is a matching of this graph (each move crosses out one principal factor that
//! nothing else uses), so the heaviest matching bounds every game from above: this is the
//! seed's "Ginnow-like game". The graph is bipartite (x and x/p differ by one in the number
//! of prime factors counted with multiplicity), which keeps the matching cheap.
//!
//! [`Matching`] holds a primal-dual pair: `mate` and the dual `y >= 0` with
//! `y[u] + y[v] >= w(u, v)` on every live edge, equality on matched edges and `y = 0` on
//! exposed nodes. Then the matching is optimal and its weight is the sum of the duals. A
//! change that exposes a node with positive dual is repaired by `Matching::settle`: grow an
//! alternating tree of tight edges from it, and either augment to an exposed node or lower
//! the tree's duals until its root can be matched or one of its nodes can be let go (the
//! Hungarian method, started from either side).
//!
//! An edge's weight is normally its larger end; [`Graph::penalize`] lowers chosen edges'
//! weights and [`Graph::add_offset`] adds a constant to every bound (the Lagrangian bound of
//! [`super::cuts`]: the heaviest matching under lowered weights plus the penalties' promise
//! is still an upper bound on every game).

use std::sync::Arc;

/// The static graph of an instance: distinct primes and adjacency per number.
#[derive(Debug)]
pub struct Graph {
    n: u32,
    /// Distinct prime factors of each number (index = number).
    primes: Vec<Vec<u32>>,
    /// Incident edges of each number.
    adj: Vec<Vec<Edge>>,
    /// Added to every matching's bound ([`Graph::add_offset`]).
    offset: i64,
    /// Weight units per point: each edge weighs `scale` times its larger end (see
    /// [`Graph::scaled`]).
    scale: i32,
}

/// One edge seen from one of its ends.
#[derive(Clone, Copy, Debug)]
pub struct Edge {
    /// The other end.
    pub other: u32,
    /// The larger end (the selected number), also the edge's weight.
    pub big: u32,
    /// Which prime of `big` the edge divides out (index into its distinct primes).
    pub bit: u8,
    /// The weight the matching maximises: `big` (times the graph's scale), less any
    /// penalty ([`Graph::penalize`]).
    pub weight: i32,
}

impl Graph {
    /// The graph on 1..=n.
    pub fn new(n: u32) -> Graph {
        Graph::scaled(n, 1)
    }

    /// The graph on 1..=n with every weight `scale` times its points: penalties in
    /// `1/scale` points. A matching of it bounds the games by its bound over `scale`
    /// (rounded down, [`Matching::bound`] of a shadow on it). `scale` must be at least 1
    /// and `scale * n` fit an `i32`.
    pub fn scaled(n: u32, scale: i32) -> Graph {
        assert!(
            scale >= 1 && i64::from(scale) * i64::from(n) <= i64::from(i32::MAX),
            "weight scale {scale} out of range for N = {n}"
        );
        let size = n as usize + 1;
        let mut primes: Vec<Vec<u32>> = vec![Vec::new(); size];
        for p in 2..size {
            if primes[p].is_empty() {
                let mut m = p;
                while m < size {
                    primes[m].push(p as u32);
                    m += p;
                }
            }
        }
        let mut adj: Vec<Vec<Edge>> = vec![Vec::new(); size];
        for (big, factors) in primes.iter().enumerate().skip(2) {
            for (bit, &p) in factors.iter().enumerate() {
                let small = big as u32 / p;
                let big = big as u32;
                adj[big as usize].push(Edge {
                    other: small,
                    big,
                    bit: bit as u8,
                    weight: big as i32 * scale,
                });
                adj[small as usize].push(Edge {
                    other: big,
                    big,
                    bit: bit as u8,
                    weight: big as i32 * scale,
                });
            }
        }
        Graph {
            n,
            primes,
            adj,
            offset: 0,
            scale,
        }
    }

    /// Weight units per point ([`Graph::scaled`]).
    pub fn scale(&self) -> i32 {
        self.scale
    }

    /// The edges (big, small) by increasing big, then in the graph's order: the one
    /// numbering of the side LP's columns and the rank pools' edge ids.
    pub fn numbered_edges(&self) -> Vec<(u32, u32)> {
        (2..=self.n)
            .flat_map(|big| {
                self.edges(big)
                    .iter()
                    .filter(move |e| e.big == big)
                    .map(move |e| (big, e.other))
            })
            .collect()
    }

    /// Lowers the weight of the edge (big, small) by `by` (both directions); false if there
    /// is no such edge.
    pub fn penalize(&mut self, big: u32, small: u32, by: i32) -> bool {
        if self.bit_of(big, small).is_none() {
            return false;
        }
        for (at, other) in [(big, small), (small, big)] {
            for e in &mut self.adj[at as usize] {
                if e.other == other {
                    e.weight -= by;
                }
            }
        }
        true
    }

    /// Adds `by` to the bound of every matching of this graph.
    pub fn add_offset(&mut self, by: i64) {
        self.offset += by;
    }

    /// The weight of the edge (big, small) (0 if there is none).
    pub fn weight(&self, big: u32, small: u32) -> i32 {
        self.adj
            .get(big as usize)
            .and_then(|edges| edges.iter().find(|e| e.other == small && e.big == big))
            .map_or(0, |e| e.weight)
    }

    /// N.
    pub fn n(&self) -> u32 {
        self.n
    }

    /// Distinct primes of `x`.
    pub fn primes(&self, x: u32) -> &[u32] {
        &self.primes[x as usize]
    }

    /// Edges at `x`.
    pub fn edges(&self, x: u32) -> &[Edge] {
        &self.adj[x as usize]
    }

    /// The index of prime `big / small` among `big`'s distinct primes, if it is one.
    pub fn bit_of(&self, big: u32, small: u32) -> Option<u8> {
        if small == 0 || big > self.n || !big.is_multiple_of(small) {
            return None;
        }
        let p = big / small;
        self.primes[big as usize]
            .iter()
            .position(|&q| q == p)
            .map(|i| i as u8)
    }
}

/// Per-number state of a search node.
#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    /// Partner in the matching (0 = exposed). Kept on fixed (dead) pairs too.
    mate: u32,
    /// Dual value.
    y: i32,
    /// Excluded edges to this number's principal factors (bit = prime index).
    excluded: u8,
    /// Removed from the graph (part of a fixed pair, or never usable).
    dead: bool,
}

/// Reusable scratch space for `Matching::settle`.
#[derive(Debug, Default)]
pub struct Scratch {
    stamp: Vec<u32>,
    parent: Vec<u32>,
    epoch: u32,
    outer_list: Vec<u32>,
    inner_list: Vec<u32>,
    /// The duals moved so far in this search (see [`Matching::settle`]): a tree number's
    /// dual has moved by `moved - joined[x]` since it joined, applied when the search ends.
    moved: i64,
    /// `moved` when each tree number joined the tree.
    joined: Vec<i64>,
    /// The smallest `y + joined` of the outer numbers (the `moved` at which the first of
    /// them reaches dual 0), and the first outer number (index in `outer_list`) that has it.
    zero_key: i64,
    zero_at: usize,
    /// Numbers outside the tree next to it: the smallest slack of their live edges into the
    /// tree's outer nodes (plus the duals moved so far, see [`Matching::settle`]), and which
    /// outer node (index in `outer_list`) and edge (index in its edge list) first had it.
    near: Vec<Near>,
    /// The numbers `near` describes (tree numbers are dropped as they are met).
    near_list: Vec<u32>,
    /// The numbers of `near_list` nearest the tree (see [`Scratch::nearest`]).
    tight: Vec<u32>,
    /// Tests: settle by rescanning the whole tree after every move of the duals (the
    /// reference [`Matching::settle`] must agree with exactly).
    #[cfg(test)]
    rescan: bool,
}

/// A number next to the alternating tree (see [`Scratch::near`]).
#[derive(Clone, Copy, Debug, Default)]
struct Near {
    /// `epoch` when the entry was last written (older entries are void).
    stamp: u32,
    /// Slack plus the duals moved before it was measured.
    slack: i64,
    /// Index of the outer node in `outer_list`, then of the edge in its edge list.
    via: (u32, u32),
}

impl Scratch {
    fn reset(&mut self, size: usize) {
        if self.stamp.len() != size {
            self.stamp = vec![0; size];
            self.parent = vec![0; size];
            self.near = vec![Near::default(); size];
            self.joined = vec![0; size];
            self.epoch = 0;
        }
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.stamp.iter_mut().for_each(|s| *s = 0);
            self.near.iter_mut().for_each(|n| n.stamp = 0);
            self.epoch = 1;
        }
        self.outer_list.clear();
        self.inner_list.clear();
        self.near_list.clear();
        self.moved = 0;
        self.zero_key = i64::MAX;
        self.zero_at = 0;
    }
    fn in_tree(&self, v: u32) -> bool {
        self.stamp[v as usize] == self.epoch
    }
    /// Records an edge from the outer node at `via.0` to `v` (outside the tree) whose slack
    /// plus the duals moved so far is `slack`; the first edge with the smallest slack wins.
    fn note_near(&mut self, v: u32, slack: i64, via: (u32, u32)) {
        let near = &mut self.near[v as usize];
        if near.stamp != self.epoch {
            *near = Near {
                stamp: self.epoch,
                slack,
                via,
            };
            self.near_list.push(v);
        } else if slack < near.slack {
            near.slack = slack;
            near.via = via;
        }
    }

    /// Adds `x` to the tree's outer numbers (its dual `y` now).
    fn join_outer(&mut self, x: u32, y: i32) {
        self.stamp[x as usize] = self.epoch;
        self.joined[x as usize] = self.moved;
        let key = i64::from(y) + self.moved;
        if key < self.zero_key {
            self.zero_key = key;
            self.zero_at = self.outer_list.len();
        }
        self.outer_list.push(x);
    }

    /// The smallest slack now of an edge from the tree to a number outside it
    /// (`i64::MAX` when there is none); leaves the numbers with that slack in `tight`, in
    /// the order of `near_list`, and drops the tree's numbers from `near_list`.
    fn nearest(&mut self) -> i64 {
        let mut least = i64::MAX;
        self.tight.clear();
        let mut kept = 0;
        for at in 0..self.near_list.len() {
            let v = self.near_list[at];
            if self.in_tree(v) {
                continue;
            }
            self.near_list[kept] = v;
            kept += 1;
            let slack = self.near[v as usize].slack - self.moved;
            if slack < least {
                least = slack;
                self.tight.clear();
            }
            if slack == least {
                self.tight.push(v);
            }
        }
        self.near_list.truncate(kept);
        least
    }
}

/// A maximum-weight matching of the live graph with its optimal duals, plus the pairs fixed
/// so far (removed from the graph, still recorded as mates).
#[derive(Clone, Debug)]
pub struct Matching {
    slots: Vec<Slot>,
    /// The graph's offset plus the weights of the fixed pairs.
    fixed_score: i64,
    /// A second matching of the same node under other weights, kept in step
    /// ([`Matching::with_shadow`]).
    shadow: Option<Box<Shadow>>,
    /// The sum of the live numbers' duals, kept up to date as they move (the bound is read
    /// far more often than it changes).
    live_duals: i64,
    /// Repairs left for later by [`Matching::exclude_above`], in order; empty when the
    /// matching is complete (optimal for its node).
    pending: Vec<Pending>,
    /// An upper bound on the node's games found while repairing (`i64::MAX` when none).
    ceiling: i64,
}

/// A repair of an incomplete [`Matching`], replayed in order by [`Matching::finish`].
#[derive(Clone, Copy, Debug)]
enum Pending {
    /// Settle this number ([`Matching::settle`]).
    Settle(u32),
    /// Exclude this edge (big, small).
    Exclude(u32, u32),
}

/// The shadow of a [`Matching`]: the same node's matching on a reweighted graph.
#[derive(Clone, Debug)]
struct Shadow {
    graph: Arc<Graph>,
    matching: Matching,
}

impl Matching {
    /// The optimal matching of the whole graph of `g`, with `(big, small)` pairs fixed first.
    pub fn new(g: &Graph, fixed: &[(u32, u32)], scratch: &mut Scratch) -> Matching {
        Matching::restricted(g, fixed, &[], scratch)
    }

    /// The optimal matching of the graph of `g` without the numbers in `removed`, with
    /// `(big, small)` pairs fixed first (a neighbourhood of a game: everything outside it
    /// either fixed or removed).
    pub fn restricted(
        g: &Graph,
        fixed: &[(u32, u32)],
        removed: &[u32],
        scratch: &mut Scratch,
    ) -> Matching {
        let size = g.n as usize + 1;
        let mut m = Matching {
            slots: vec![Slot::default(); size],
            fixed_score: g.offset,
            shadow: None,
            live_duals: 0,
            pending: Vec::new(),
            ceiling: i64::MAX,
        };
        m.slots[0].dead = true;
        for &x in removed {
            m.slots[x as usize].dead = true;
        }
        for &(big, small) in fixed {
            m.slots[big as usize].mate = small;
            m.slots[small as usize].mate = big;
            m.slots[big as usize].dead = true;
            m.slots[small as usize].dead = true;
            m.fixed_score += i64::from(g.weight(big, small));
        }
        m.solve(g, scratch);
        m
    }

    /// This matching with a shadow: the same node (fixed pairs, excluded edges, removed
    /// numbers) matched under the weights of `g` (same numbers and edges, other weights),
    /// kept in step by [`Matching::fix`] and [`Matching::exclude`]. [`Matching::bound`] is
    /// then the smaller of the two bounds (both bound every game of the node).
    pub fn with_shadow(mut self, g: Arc<Graph>, scratch: &mut Scratch) -> Matching {
        let matching = self.reweighted(&g, scratch);
        self.shadow = Some(Box::new(Shadow { graph: g, matching }));
        self
    }

    /// The same node (fixed pairs, excluded edges, removed numbers) under the weights of `g`
    /// (the same numbers and edges), solved afresh, without a shadow.
    pub fn reweighted(&self, g: &Graph, scratch: &mut Scratch) -> Matching {
        let mut m = Matching {
            slots: self
                .slots
                .iter()
                .map(|s| Slot {
                    mate: if s.dead { s.mate } else { 0 },
                    y: 0,
                    excluded: s.excluded,
                    dead: s.dead,
                })
                .collect(),
            fixed_score: g.offset,
            shadow: None,
            live_duals: 0,
            pending: Vec::new(),
            ceiling: i64::MAX,
        };
        for (big, slot) in self.slots.iter().enumerate() {
            if slot.dead && slot.mate != 0 && (slot.mate as usize) < big {
                m.fixed_score += i64::from(g.weight(big as u32, slot.mate));
            }
        }
        m.solve(g, scratch);
        m
    }

    /// Starts every live number's dual at its heaviest live edge and settles them all.
    fn solve(&mut self, g: &Graph, scratch: &mut Scratch) {
        let size = self.slots.len();
        for v in 1..size as u32 {
            if self.slots[v as usize].dead {
                continue;
            }
            let top = g
                .edges(v)
                .iter()
                .filter(|e| self.live(e))
                .map(|e| e.weight)
                .max()
                .unwrap_or(0)
                .max(0);
            self.slots[v as usize].y = top;
        }
        self.live_duals = self.sum_live_duals();
        for v in (1..size as u32).rev() {
            self.settle(g, v, scratch);
        }
    }

    fn live(&self, e: &Edge) -> bool {
        let other = &self.slots[e.other as usize];
        !other.dead && self.slots[e.big as usize].excluded & (1 << e.bit) == 0
    }

    /// The shadow's matching ([`Matching::with_shadow`]), if any.
    pub fn shadow(&self) -> Option<&Matching> {
        self.shadow.as_deref().map(|s| &s.matching)
    }

    /// The node's upper bound: [`Matching::matching_bound`], or the shadow's if smaller (of
    /// an incomplete matching, the least upper bound its repairs have shown so far). A
    /// shadow on a scaled graph ([`Graph::scaled`]) bounds the games by its bound over the
    /// scale, rounded down (scores are whole).
    pub fn bound(&self) -> i64 {
        let own = self.matching_bound().min(self.ceiling);
        match &self.shadow {
            Some(s) => own.min(
                s.matching
                    .matching_bound()
                    .div_euclid(i64::from(s.graph.scale())),
            ),
            None => own,
        }
    }

    /// The graph's offset, the fixed pairs' weights and the matching's weight (the bound
    /// of this matching alone, without its shadow's; of an incomplete matching, an upper
    /// bound only).
    pub fn matching_bound(&self) -> i64 {
        debug_assert_eq!(self.live_duals, self.sum_live_duals());
        self.fixed_score + self.live_duals
    }

    /// The live numbers' duals added up afresh.
    fn sum_live_duals(&self) -> i64 {
        self.slots
            .iter()
            .filter(|s| !s.dead)
            .map(|s| i64::from(s.y))
            .sum()
    }

    /// The graph's offset plus the weights of the fixed pairs.
    pub fn fixed_score(&self) -> i64 {
        self.fixed_score
    }

    /// The partner of `x` (0 = none).
    pub fn mate(&self, x: u32) -> u32 {
        self.slots[x as usize].mate
    }

    /// The dual value of `x` (0 for a fixed or removed number).
    pub fn dual(&self, x: u32) -> i64 {
        let s = &self.slots[x as usize];
        if s.dead {
            0
        } else {
            i64::from(s.y)
        }
    }

    /// The live edges at `x` (none when `x` is fixed or removed): the pairs a game of this
    /// node may still use at `x`.
    pub fn live_edges<'a>(&'a self, g: &'a Graph, x: u32) -> impl Iterator<Item = &'a Edge> + 'a {
        let dead = self.slots[x as usize].dead;
        g.edges(x).iter().filter(move |e| !dead && self.live(e))
    }

    /// True when the edge (big, small) of `g` is live at this node: both numbers are free and
    /// the edge is not excluded.
    pub fn is_live(&self, g: &Graph, big: u32, small: u32) -> bool {
        let Some(bit) = g.bit_of(big, small) else {
            return false;
        };
        let (b, s) = (&self.slots[big as usize], &self.slots[small as usize]);
        !b.dead && !s.dead && b.excluded & (1 << bit) == 0
    }

    /// The fixed pairs as (selected, factor): the pairs every game of this node holds.
    pub fn fixed_pairs(&self) -> Vec<(u32, u32)> {
        self.slots
            .iter()
            .enumerate()
            .filter(|(x, s)| s.dead && s.mate != 0 && (s.mate as usize) < *x)
            .map(|(x, s)| (x as u32, s.mate))
            .collect()
    }

    /// True when `x` belongs to a fixed pair (or was removed).
    pub fn is_fixed(&self, x: u32) -> bool {
        self.slots[x as usize].dead
    }

    /// All pairs (fixed and matched) as (selected, factor), in increasing order.
    pub fn pairs(&self) -> Vec<(u32, u32)> {
        self.slots
            .iter()
            .enumerate()
            .filter(|(x, s)| s.mate != 0 && (s.mate as usize) < *x)
            .map(|(x, s)| (x as u32, s.mate))
            .collect()
    }

    /// Fixes the live pair (big, small) of `g`: removes both numbers from the graph for
    /// good. If the pair was matched (and so tight) the rest of the matching stays optimal;
    /// otherwise the two numbers' former mates are exposed and settled again.
    pub fn fix(&mut self, g: &Graph, big: u32, small: u32, scratch: &mut Scratch) {
        self.finish(g, scratch);
        if let Some(s) = self.shadow.as_deref_mut() {
            s.matching.fix(&s.graph, big, small, scratch);
        }
        let (old_big, old_small) = (
            self.slots[big as usize].mate,
            self.slots[small as usize].mate,
        );
        self.slots[big as usize].mate = small;
        self.slots[small as usize].mate = big;
        for x in [big, small] {
            if !self.slots[x as usize].dead {
                self.live_duals -= i64::from(self.slots[x as usize].y);
            }
            self.slots[x as usize].dead = true;
        }
        self.fixed_score += i64::from(g.weight(big, small));
        if old_big != small {
            // Both former mates lose their partner before either is settled (a settle must
            // never walk into a fixed number through a stale mate).
            for other in [old_big, old_small] {
                self.slots[other as usize].mate = 0;
            }
            for other in [old_big, old_small] {
                if other != 0 {
                    self.settle(g, other, scratch);
                }
            }
        }
    }

    /// Excludes the edge (big, small) and restores optimality.
    pub fn exclude(&mut self, g: &Graph, big: u32, small: u32, scratch: &mut Scratch) {
        self.finish(g, scratch);
        let Some(bit) = g.bit_of(big, small) else {
            return;
        };
        if let Some(s) = self.shadow.as_deref_mut() {
            s.matching.exclude(&s.graph, big, small, scratch);
        }
        self.exclude_bit(g, big, small, bit, i64::MIN, scratch);
    }

    /// Excludes the edge (big, small) like [`Matching::exclude`], but stops repairing as
    /// soon as the node's bound is shown to be below `floor`: the matching is then left
    /// incomplete, its [`Matching::bound`] below `floor`, and [`Matching::finish`] completes
    /// it into exactly the matching `exclude` would have made. (Without a shadow; with one,
    /// the repair is always complete.)
    pub fn exclude_above(
        &mut self,
        g: &Graph,
        big: u32,
        small: u32,
        floor: i64,
        scratch: &mut Scratch,
    ) {
        if self.shadow.is_some() {
            return self.exclude(g, big, small, scratch);
        }
        if !self.pending.is_empty() {
            self.pending.push(Pending::Exclude(big, small));
            return;
        }
        let Some(bit) = g.bit_of(big, small) else {
            return;
        };
        self.exclude_bit(g, big, small, bit, floor, scratch);
    }

    /// Excludes the edge (big, small) of `g` (prime index `bit` of `big`) from a complete
    /// matching without a shadow to keep in step, and repairs it, stopping below `floor`
    /// ([`Matching::exclude_above`]; `i64::MIN` repairs it whole).
    fn exclude_bit(
        &mut self,
        g: &Graph,
        big: u32,
        small: u32,
        bit: u8,
        floor: i64,
        scratch: &mut Scratch,
    ) {
        self.slots[big as usize].excluded |= 1 << bit;
        if self.slots[big as usize].mate == small && !self.slots[big as usize].dead {
            self.slots[big as usize].mate = 0;
            self.slots[small as usize].mate = 0;
            for r in [big, small] {
                if !self.pending.is_empty() {
                    self.pending.push(Pending::Settle(r));
                } else if let Some(below) = self.settle_above(g, r, floor, scratch) {
                    self.ceiling = below;
                    self.pending.push(Pending::Settle(r));
                }
            }
        }
    }

    /// True when the matching is optimal for its node (no repair left for later).
    pub fn is_complete(&self) -> bool {
        self.pending.is_empty()
    }

    /// Completes an incomplete matching (see [`Matching::exclude_above`]).
    pub fn finish(&mut self, g: &Graph, scratch: &mut Scratch) {
        if self.pending.is_empty() {
            return;
        }
        self.ceiling = i64::MAX;
        for op in std::mem::take(&mut self.pending) {
            match op {
                Pending::Settle(r) => self.settle(g, r, scratch),
                Pending::Exclude(big, small) => self.exclude(g, big, small, scratch),
            }
        }
    }

    /// Repairs the complementary slackness of `r` (exposed with a positive dual) by one
    /// Hungarian search rooted at `r`.
    ///
    /// The tree grows along tight edges in a fixed order (outer nodes in the order they
    /// joined, each one's edges in graph order). When it cannot grow, the duals move by the
    /// smallest slack, and the edges that became tight join in the order a fresh scan of
    /// the outer nodes would meet them. Each number next to the tree keeps its smallest
    /// slack and the first edge that has it ([`Scratch::note_near`]), so no outer node is
    /// scanned twice; the tree's duals move lazily (each number's by the total moved since
    /// it joined, applied when the search ends). The result is the same matching and duals
    /// as rescanning the whole tree and moving every dual after every move (the search's
    /// paths depend on it).
    fn settle(&mut self, g: &Graph, r: u32, sc: &mut Scratch) {
        let done = self.settle_above(g, r, i64::MIN, sc);
        debug_assert!(done.is_none());
    }

    /// [`Matching::settle`], stopped as soon as the node's bound falls below `floor` (it
    /// only falls as the duals move, and every dual solution on the way is feasible, so each
    /// value is an upper bound): returns that bound, the matching and duals left as they
    /// were before the search.
    fn settle_above(&mut self, g: &Graph, r: u32, floor: i64, sc: &mut Scratch) -> Option<i64> {
        {
            let s = &self.slots[r as usize];
            if s.dead || s.mate != 0 || s.y <= 0 {
                return None;
            }
        }
        #[cfg(test)]
        if sc.rescan {
            tests::settle_by_rescanning(self, g, r, sc);
            return None;
        }
        sc.reset(self.slots.len());
        sc.join_outer(r, self.slots[r as usize].y);
        let below = self.grow(g, r, floor, sc);
        if below.is_none() {
            self.release_duals(sc);
        }
        below
    }

    /// The Hungarian search of [`Matching::settle_above`], with the tree's duals left
    /// unmoved (`sc.moved` says by how much they move; the node's bound falls by as much).
    fn grow(&mut self, g: &Graph, r: u32, floor: i64, sc: &mut Scratch) -> Option<i64> {
        let epoch = sc.epoch;
        let mut scanned = 0usize;
        loop {
            // Grow the tree along tight edges. An outer node is scanned before the duals
            // move again after it joined, so its stored dual is its dual now.
            while scanned < sc.outer_list.len() {
                let at = scanned as u32;
                let o = sc.outer_list[scanned];
                scanned += 1;
                let yo = self.slots[o as usize].y;
                for (index, e) in g.edges(o).iter().enumerate() {
                    let v = e.other;
                    if sc.stamp[v as usize] == epoch || !self.live(e) {
                        continue;
                    }
                    let slack = yo + self.slots[v as usize].y - e.weight;
                    if slack != 0 {
                        sc.note_near(v, i64::from(slack) + sc.moved, (at, index as u32));
                        continue;
                    }
                    if self.attach(sc, o, v, r) {
                        return None;
                    }
                }
            }
            // No augmenting path: move the duals by the smallest slack or outer dual; an
            // outer number whose dual reaches 0 ends the search first.
            let to_zero = sc.zero_key - sc.moved;
            let nearest = sc.nearest();
            if to_zero <= nearest {
                sc.moved = sc.zero_key;
                let o = sc.outer_list[sc.zero_at];
                if o != r {
                    // Let o go: shift the matching along the tree path from r to o.
                    let i = self.slots[o as usize].mate;
                    self.slots[o as usize].mate = 0;
                    let parent = sc.parent[i as usize];
                    self.flip(sc, parent, i, r);
                }
                return None;
            }
            sc.moved += nearest;
            let bound = self.fixed_score + self.live_duals - sc.moved;
            if bound < floor {
                return Some(bound);
            }
            // The edges that became tight, in the order a scan of the tree would meet them.
            let mut tight = std::mem::take(&mut sc.tight);
            tight.sort_unstable_by_key(|&v| sc.near[v as usize].via);
            let augmented = tight.iter().any(|&v| {
                let o = sc.outer_list[sc.near[v as usize].via.0 as usize];
                self.attach(sc, o, v, r)
            });
            sc.tight = tight;
            if augmented {
                return None;
            }
        }
    }

    /// Moves each tree number's dual by what moved since it joined: outer ones down, inner
    /// ones up.
    fn release_duals(&mut self, sc: &Scratch) {
        let mut change = 0i64;
        for &o in &sc.outer_list {
            let by = sc.moved - sc.joined[o as usize];
            self.slots[o as usize].y -= by as i32;
            change -= by;
        }
        for &i in &sc.inner_list {
            let by = sc.moved - sc.joined[i as usize];
            self.slots[i as usize].y += by as i32;
            change += by;
        }
        // The tree's numbers are live.
        self.live_duals += change;
    }

    /// Adds `v` (outside the tree, on a tight edge from the outer node `o`) to the tree:
    /// augments and returns true when `v` is exposed, else makes `v` inner and its mate
    /// outer.
    fn attach(&mut self, sc: &mut Scratch, o: u32, v: u32, r: u32) -> bool {
        let m = self.slots[v as usize].mate;
        if m == 0 {
            self.flip(sc, o, v, r);
            return true;
        }
        sc.stamp[v as usize] = sc.epoch;
        sc.joined[v as usize] = sc.moved;
        sc.parent[v as usize] = o;
        sc.inner_list.push(v);
        sc.join_outer(m, self.slots[m as usize].y);
        false
    }

    /// Matches `o` (an outer tree node) with `v` and flips the tree path from `o` up to the
    /// root `r`, which becomes matched.
    fn flip(&mut self, sc: &Scratch, mut o: u32, mut v: u32, r: u32) {
        loop {
            let next = self.slots[o as usize].mate;
            self.slots[o as usize].mate = v;
            self.slots[v as usize].mate = o;
            if o == r {
                return;
            }
            v = next;
            o = sc.parent[next as usize];
        }
    }

    /// Checks the primal-dual invariants (tests and debug builds).
    pub fn check(&self, g: &Graph) -> Result<(), String> {
        let mut weight = 0i64;
        for x in 1..self.slots.len() as u32 {
            let s = self.slots[x as usize];
            if s.dead {
                continue;
            }
            if s.y < 0 {
                return Err(format!("y[{x}] < 0"));
            }
            if s.mate == 0 && s.y != 0 {
                return Err(format!("{x} exposed with y = {}", s.y));
            }
            for e in g.edges(x) {
                if !self.live(e) {
                    continue;
                }
                let slack = s.y + self.slots[e.other as usize].y - e.weight;
                if slack < 0 {
                    return Err(format!("edge {x}-{} violated", e.other));
                }
                if s.mate == e.other {
                    if slack != 0 {
                        return Err(format!("matched edge {x}-{} not tight", e.other));
                    }
                    if e.big == x {
                        weight += i64::from(e.weight);
                    }
                }
            }
            if s.mate != 0 && self.slots[s.mate as usize].mate != x {
                return Err(format!("mate of {x} inconsistent"));
            }
        }
        if weight + self.fixed_score != self.matching_bound() {
            return Err(format!(
                "weight {} != dual {}",
                weight + self.fixed_score,
                self.matching_bound()
            ));
        }
        match &self.shadow {
            Some(s) => s
                .matching
                .check(&s.graph)
                .map_err(|e| format!("shadow: {e}")),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Hungarian search of [`Matching::settle`] as first written: after every move of
    /// the duals, the whole tree is scanned again for tight edges.
    pub(super) fn settle_by_rescanning(m: &mut Matching, g: &Graph, r: u32, sc: &mut Scratch) {
        sc.reset(m.slots.len());
        let epoch = sc.epoch;
        sc.stamp[r as usize] = epoch;
        sc.outer_list.push(r);
        let mut scanned = 0usize;
        loop {
            while scanned < sc.outer_list.len() {
                let o = sc.outer_list[scanned];
                scanned += 1;
                let yo = m.slots[o as usize].y;
                for e in g.edges(o) {
                    let v = e.other;
                    if sc.stamp[v as usize] == epoch || !m.live(e) {
                        continue;
                    }
                    if yo + m.slots[v as usize].y == e.weight && m.attach(sc, o, v, r) {
                        return;
                    }
                }
            }
            let mut delta = i32::MAX;
            for &o in &sc.outer_list {
                let yo = m.slots[o as usize].y;
                delta = delta.min(yo);
                for e in g.edges(o) {
                    if !sc.in_tree(e.other) && m.live(e) {
                        delta = delta.min(yo + m.slots[e.other as usize].y - e.weight);
                    }
                }
            }
            if move_duals(m, sc, delta, r) {
                return;
            }
            scanned = 0;
        }
    }

    /// Lowers the tree's outer duals by `delta` and raises its inner ones at once; when an
    /// outer node's dual reaches 0, lets it go (or `r` itself stays exposed with dual 0) and
    /// returns true: the search is over.
    fn move_duals(m: &mut Matching, sc: &Scratch, delta: i32, r: u32) -> bool {
        for &o in &sc.outer_list {
            m.slots[o as usize].y -= delta;
        }
        for &i in &sc.inner_list {
            m.slots[i as usize].y += delta;
        }
        m.live_duals -=
            i64::from(delta) * (sc.outer_list.len() as i64 - sc.inner_list.len() as i64);
        let Some(&o) = sc.outer_list.iter().find(|&&o| m.slots[o as usize].y == 0) else {
            return false;
        };
        if o != r {
            let i = m.slots[o as usize].mate;
            m.slots[o as usize].mate = 0;
            let parent = sc.parent[i as usize];
            m.flip(sc, parent, i, r);
        }
        true
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        /// The settle that keeps slacks finds exactly the matching and duals of the one that
        /// rescans the tree (the search's trees, and so its paths, depend on them), under
        /// any sequence of exclusions and fixes.
        #[test]
        fn settle_agrees_with_rescanning_exactly(
            n in 30u32..260,
            ops in proptest::collection::vec((proptest::bool::weighted(0.8), 0usize..10_000), 1..60),
        ) {
            let g = Graph::new(n);
            let mut fast_sc = Scratch::default();
            let mut slow_sc = Scratch { rescan: true, ..Scratch::default() };
            let mut fast = Matching::new(&g, &[], &mut fast_sc);
            let mut slow = Matching::new(&g, &[], &mut slow_sc);
            for (exclude, pick) in ops {
                let live: Vec<(u32, u32)> = (2..=n)
                    .flat_map(|x| fast.live_edges(&g, x).filter(move |e| e.big == x))
                    .map(|e| (e.big, e.other))
                    .collect();
                if live.is_empty() {
                    break;
                }
                let (big, small) = live[pick % live.len()];
                if exclude {
                    fast.exclude(&g, big, small, &mut fast_sc);
                    slow.exclude(&g, big, small, &mut slow_sc);
                } else {
                    fast.fix(&g, big, small, &mut fast_sc);
                    slow.fix(&g, big, small, &mut slow_sc);
                }
                fast.check(&g).unwrap();
                for x in 1..=n {
                    proptest::prop_assert_eq!(fast.mate(x), slow.mate(x), "mate of {}", x);
                    proptest::prop_assert_eq!(fast.dual(x), slow.dual(x), "dual of {}", x);
                }
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        /// Exclusions that stop below a floor leave a bound that is below the floor and above
        /// the node's exact bound, and finishing them gives exactly the matching and duals of
        /// the exclusions done at once.
        #[test]
        fn exclusions_stopped_below_a_floor_finish_exactly(
            n in 30u32..200,
            fixes in proptest::collection::vec(0usize..10_000, 0..12),
            excludes in proptest::collection::vec(0usize..10_000, 1..5),
            below in 0i64..400,
        ) {
            let g = Graph::new(n);
            let mut sc = Scratch::default();
            let mut base = Matching::new(&g, &[], &mut sc);
            // The live edge `pick` (modulo their number) of a matching, if any.
            let live_edge = |m: &Matching, pick: usize| -> Option<(u32, u32)> {
                let edges: Vec<(u32, u32)> = (2..=n)
                    .flat_map(|x| m.live_edges(&g, x).filter(move |e| e.big == x))
                    .map(|e| (e.big, e.other))
                    .collect();
                (!edges.is_empty()).then(|| edges[pick % edges.len()])
            };
            for pick in fixes {
                let Some((big, small)) = live_edge(&base, pick) else {
                    break;
                };
                base.fix(&g, big, small, &mut sc);
            }
            let floor = base.bound() - below;
            let (mut eager, mut lazy) = (base.clone(), base);
            for pick in excludes {
                let Some((big, small)) = live_edge(&eager, pick) else {
                    break;
                };
                eager.exclude(&g, big, small, &mut sc);
                lazy.exclude_above(&g, big, small, floor, &mut sc);
            }
            if !lazy.is_complete() {
                proptest::prop_assert!(lazy.bound() < floor);
                proptest::prop_assert!(lazy.bound() >= eager.bound());
            }
            lazy.finish(&g, &mut sc);
            lazy.check(&g).unwrap();
            proptest::prop_assert_eq!(lazy.bound(), eager.bound());
            for x in 1..=n {
                proptest::prop_assert_eq!(lazy.mate(x), eager.mate(x), "mate of {}", x);
                proptest::prop_assert_eq!(lazy.dual(x), eager.dual(x), "dual of {}", x);
            }
        }
    }

    /// Maximum-weight matching by exhaustive search over the edges (tiny graphs only).
    fn brute(g: &Graph, alive: &[bool], excluded: &[(u32, u32)]) -> i64 {
        let mut edges = Vec::new();
        for big in 2..=g.n() {
            for &p in g.primes(big) {
                let small = big / p;
                if alive[big as usize] && alive[small as usize] && !excluded.contains(&(big, small))
                {
                    edges.push((big, small));
                }
            }
        }
        fn go(edges: &[(u32, u32)], used: &mut Vec<bool>) -> i64 {
            let Some((&(a, b), rest)) = edges.split_first() else {
                return 0;
            };
            let mut best = go(rest, used);
            if !used[a as usize] && !used[b as usize] {
                used[a as usize] = true;
                used[b as usize] = true;
                best = best.max(i64::from(a) + go(rest, used));
                used[a as usize] = false;
                used[b as usize] = false;
            }
            best
        }
        go(&edges, &mut vec![false; g.n() as usize + 1])
    }

    #[test]
    fn matches_brute_force_and_stays_optimal_under_changes() {
        let mut sc = Scratch::default();
        for n in 1..=16u32 {
            let g = Graph::new(n);
            let m = Matching::new(&g, &[], &mut sc);
            m.check(&g).unwrap();
            let alive = vec![true; n as usize + 1];
            assert_eq!(m.bound(), brute(&g, &alive, &[]), "n = {n}");
            // Exclude the matched edges one by one, then fix what remains.
            let mut m2 = m.clone();
            let mut excluded = Vec::new();
            for (a, b) in m.pairs().into_iter().step_by(2) {
                m2.exclude(&g, a, b, &mut sc);
                excluded.push((a, b));
                m2.check(&g).unwrap();
                assert_eq!(m2.bound(), brute(&g, &alive, &excluded), "n = {n}");
            }
            let mut alive2 = alive.clone();
            let mut fixed = 0;
            if let Some(&(a, b)) = m2.pairs().first() {
                m2.fix(&g, a, b, &mut sc);
                alive2[a as usize] = false;
                alive2[b as usize] = false;
                fixed = i64::from(a);
            }
            m2.check(&g).unwrap();
            assert_eq!(m2.bound(), fixed + brute(&g, &alive2, &excluded), "n = {n}");
        }
    }

    /// The heaviest matching of `g`'s live edges under `g`'s own (penalized, scaled)
    /// weights, by exhaustive search, plus its offset.
    fn brute_weighted(g: &Graph, excluded: &[(u32, u32)]) -> i64 {
        let mut edges = Vec::new();
        for big in 2..=g.n() {
            for &p in g.primes(big) {
                if !excluded.contains(&(big, big / p)) {
                    edges.push((big, big / p, i64::from(g.weight(big, big / p))));
                }
            }
        }
        fn go(edges: &[(u32, u32, i64)], used: &mut Vec<bool>) -> i64 {
            let Some((&(a, b, w), rest)) = edges.split_first() else {
                return 0;
            };
            let mut best = go(rest, used);
            if !used[a as usize] && !used[b as usize] {
                used[a as usize] = true;
                used[b as usize] = true;
                best = best.max(w + go(rest, used));
                used[a as usize] = false;
                used[b as usize] = false;
            }
            best
        }
        g.offset + go(&edges, &mut vec![false; g.n() as usize + 1])
    }

    /// A shadow on a scaled graph bounds the node by its heaviest matching over the scale,
    /// rounded down, with penalties in fractions of a point; with every penalty a whole
    /// number of points it bounds it as the unscaled shadow does. Kept in step under
    /// exclusions.
    #[test]
    fn scaled_shadows_bound_in_fractions_of_a_point() {
        let mut sc = Scratch::default();
        let scale = 7;
        let mut seed = 0x9e37_79b9_u64;
        for n in 6..=16u32 {
            let g = Graph::new(n);
            let (mut whole, mut scaled, mut fine) = (
                Graph::new(n),
                Graph::scaled(n, scale),
                Graph::scaled(n, scale),
            );
            for big in 2..=n {
                for &p in g.primes(big) {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    let by = (seed % 4) as i32;
                    let extra = ((seed >> 8) % scale as u64) as i32;
                    whole.penalize(big, big / p, by);
                    scaled.penalize(big, big / p, by * scale);
                    fine.penalize(big, big / p, by * scale + extra);
                }
            }
            whole.add_offset(3);
            scaled.add_offset(3 * i64::from(scale));
            fine.add_offset(3 * i64::from(scale) + 5);
            let node = Matching::new(&g, &[], &mut sc);
            let mut a = node.clone().with_shadow(Arc::new(whole), &mut sc);
            let mut b = node.clone().with_shadow(Arc::new(scaled), &mut sc);
            let mut c = node.clone().with_shadow(Arc::new(fine), &mut sc);
            let mut excluded = Vec::new();
            for (big, small) in node.pairs().into_iter().take(2) {
                for m in [&mut a, &mut b, &mut c] {
                    m.exclude(&g, big, small, &mut sc);
                    m.check(&g).unwrap();
                }
                excluded.push((big, small));
                assert_eq!(a.bound(), b.bound(), "n = {n}");
                let shadow = brute_weighted(&c.shadow.as_ref().unwrap().graph, &excluded);
                let own = c.matching_bound();
                assert_eq!(
                    c.bound(),
                    own.min(shadow.div_euclid(i64::from(scale))),
                    "n = {n}"
                );
            }
        }
    }

    #[test]
    fn fixing_an_unmatched_pair_rematches_the_rest_optimally() {
        let mut sc = Scratch::default();
        for n in 2..=16u32 {
            let g = Graph::new(n);
            let m = Matching::new(&g, &[], &mut sc);
            for big in 2..=n {
                for e in g.edges(big).iter().filter(|e| e.big == big) {
                    let mut forced = m.clone();
                    forced.fix(&g, big, e.other, &mut sc);
                    forced.check(&g).unwrap();
                    let mut alive = vec![true; n as usize + 1];
                    alive[big as usize] = false;
                    alive[e.other as usize] = false;
                    let want = i64::from(big) + brute(&g, &alive, &[]);
                    assert_eq!(forced.bound(), want, "n = {n}, fixed ({big}, {})", e.other);
                }
            }
        }
        // Larger graphs, two pairs forced in turn, against a matching solved from scratch
        // with both fixed (both numbers of a forced pair matched elsewhere is the hard case).
        for n in [40u32, 60, 90] {
            let g = Graph::new(n);
            let m = Matching::new(&g, &[], &mut sc);
            let edges: Vec<(u32, u32)> = (2..=n)
                .flat_map(|big| g.edges(big).iter().filter(move |e| e.big == big))
                .map(|e| (e.big, e.other))
                .collect();
            for (i, &(a, b)) in edges.iter().enumerate().step_by(3) {
                let &(c, d) = &edges[(i * 7 + 5) % edges.len()];
                if [a, b].contains(&c) || [a, b].contains(&d) {
                    continue;
                }
                let mut forced = m.clone();
                forced.fix(&g, a, b, &mut sc);
                forced.fix(&g, c, d, &mut sc);
                forced.check(&g).unwrap();
                let fresh = Matching::new(&g, &[(a, b), (c, d)], &mut sc);
                assert_eq!(
                    forced.bound(),
                    fresh.bound(),
                    "n = {n}: ({a}, {b}), ({c}, {d})"
                );
            }
        }
    }
}
