//! The region bound: the matching bound lowered by what resolving several disjoint
//! precedence cycles must cost, added up.
//!
//! # Why it holds
//!
//! Let a node have fixed pairs F (score f), live graph G and an optimal matching with duals
//! `y >= 0` (`y(u) + y(v) >= w(u, v)` on live edges), so its bound is U = f + sum of y over
//! live numbers. Every game of the node is F plus a matching M of G, and since every edge
//! e = (u, v) of M weighs `y(u) + y(v) - s(e)` with slack `s(e) >= 0`,
//!
//! score = U - sum over e in M of s(e) - sum over live numbers v exposed by M of y(v),
//!
//! a *loss* made of non-negative terms, one per edge of M and one per exposed number. Take
//! disjoint sets of live numbers R_1, ..., R_k (the *regions*) and give each term to at
//! most one region: an exposed number's term to its region; an edge's slack to the region
//! of its larger end if that end lies in one, else to the region of its smaller end, else
//! to none. Then loss >= loss_1 + ... + loss_k, where loss_i sums the terms given to R_i.
//!
//! loss_i depends on M only through A_i, the pairs of M with an end in R_i, and A_i is a
//! valid *local assignment*: a set of live edges, no two sharing a number, each touching
//! R_i, such that F together with A_i has no precedence cycle (a subset of a game's pairs
//! is acyclic when the game's are). So loss_i >= L_i, the least cost of a local assignment
//! for R_i, where the cost counts y(v) for every number of R_i the assignment leaves
//! exposed and s(e) for every edge it uses whose slack goes to R_i by the rule above.
//! Hence every game of the node scores at most U - (L_1 + ... + L_k): a node whose region
//! bound does not beat the incumbent holds no better game and is pruned. (When no local
//! assignment exists, F is cyclic and the node holds no game at all.)
//!
//! Each L_i is found by a depth-first search over the numbers of R_i (exposed, or matched
//! along one of its live edges), cut at a cap: when no assignment costs less than the cap,
//! L_i >= cap is all that is claimed; when the search runs out of steps, L_i >= 0. Both are
//! weaker claims, so the bound stays sound.
//!
//! # Which regions
//!
//! The regions are the numbers of the non-fixed pairs of disjoint precedence cycles of the
//! node's matching (found as strong branching finds its candidates: each without the
//! non-fixed pairs of those before). The matching's pairs of such a cycle cannot all stay,
//! and the duals price every way out locally: re-matching a number elsewhere costs the
//! edge's slack, leaving it single costs its dual. Strong branching's measurements show why
//! this matters: the same few hundred cycles are branched on again and again in disjoint
//! subtrees (at N = 561, 1,234 distinct cycles for 138,613 branchings), each costing a few
//! points, so the tree multiplies their resolutions until their costs add up to the gap.
//! The region bound adds those costs up at once.

use super::matching::{Graph, Matching};
use std::collections::HashMap;

/// Steps (assignments tried) of one region's search; past it the region counts 0.
pub const REGION_STEPS: u32 = 2_000;

/// Reusable state of the region bound for one instance.
#[derive(Debug)]
pub struct RegionBound {
    /// Region index by number (u32::MAX = none).
    region_of: Vec<u32>,
    /// Numbers covered by the assignment being built.
    used: Vec<bool>,
    /// The assignment being built (big, small).
    chosen: Vec<(u32, u32)>,
    /// Fixed pairs with a factor > 1 (the only ones that can lie on a cycle).
    fixed: Vec<(u32, u32)>,
    steps: u32,
    colour: Vec<u8>,
    colour_pairs: Vec<(u32, u32)>,
    /// Regions priced so far, by outcome (measurement): L = 0, 1, 2-3, 4-7, 8-15, >= 16,
    /// reached the cap (the node's excess), out of steps (counted 0).
    pub outcomes: [u64; 8],
}

impl RegionBound {
    /// The state for 1..=n.
    pub fn new(n: u32) -> RegionBound {
        RegionBound {
            region_of: vec![u32::MAX; n as usize + 1],
            used: vec![false; n as usize + 1],
            chosen: Vec::new(),
            fixed: Vec::new(),
            steps: 0,
            colour: Vec::new(),
            colour_pairs: Vec::new(),
            outcomes: [0; 8],
        }
    }

    /// A lower bound on the loss of every game of the node `m` (fixed pairs `fixed`), from
    /// the disjoint `regions` of live numbers; it stops adding once it reaches `need`.
    pub fn loss(
        &mut self,
        g: &Graph,
        m: &Matching,
        fixed: &[(u32, u32)],
        regions: &[Vec<u32>],
        need: i64,
    ) -> i64 {
        self.fixed.clear();
        self.fixed
            .extend(fixed.iter().copied().filter(|&(_, b)| b > 1));
        for (i, r) in regions.iter().enumerate() {
            for &x in r {
                debug_assert_eq!(self.region_of[x as usize], u32::MAX, "regions overlap");
                self.region_of[x as usize] = i as u32;
            }
        }
        let mut total = 0;
        for (i, r) in regions.iter().enumerate() {
            if total >= need {
                break;
            }
            total += self.region_loss(g, m, i as u32, r, need - total);
        }
        for r in regions {
            for &x in r {
                self.region_of[x as usize] = u32::MAX;
            }
        }
        total
    }

    /// L for one region, capped at `cap` (0 when the search runs out of steps).
    fn region_loss(&mut self, g: &Graph, m: &Matching, id: u32, region: &[u32], cap: i64) -> i64 {
        self.steps = 0;
        self.chosen.clear();
        let mut best = cap;
        let complete = self.assign(g, m, id, region, 0, 0, &mut best);
        debug_assert!(self.chosen.is_empty());
        let k = if !complete {
            7
        } else if best >= cap {
            6
        } else {
            match best {
                0 => 0,
                1 => 1,
                2..=3 => 2,
                4..=7 => 3,
                8..=15 => 4,
                _ => 5,
            }
        };
        self.outcomes[k] += 1;
        if complete {
            best
        } else {
            0
        }
    }

    /// Extends the assignment from `region[at]` on; lowers `best` to the cheapest acyclic
    /// assignment found. False when the step budget ran out.
    #[allow(clippy::too_many_arguments)]
    fn assign(
        &mut self,
        g: &Graph,
        m: &Matching,
        id: u32,
        region: &[u32],
        mut at: usize,
        cost: i64,
        best: &mut i64,
    ) -> bool {
        if cost >= *best {
            return true;
        }
        self.steps += 1;
        if self.steps > REGION_STEPS {
            return false;
        }
        while at < region.len() && self.used[region[at] as usize] {
            at += 1;
        }
        let Some(&v) = region.get(at) else {
            if self.acyclic() {
                *best = cost;
            }
            return true;
        };
        self.used[v as usize] = true;
        let yv = m.dual(v);
        let mut complete = true;
        for e in m.live_edges(g, v) {
            let u = e.other;
            if self.used[u as usize] {
                continue;
            }
            let other = self.region_of[u as usize];
            // The edge's slack goes to the region of its larger end, if that is one.
            let charged = other == id || other == u32::MAX || e.big == v;
            let c = if charged {
                yv + m.dual(u) - i64::from(e.weight)
            } else {
                0
            };
            self.used[u as usize] = true;
            let small = if e.big == v { u } else { v };
            self.chosen.push((e.big, small));
            complete &= self.assign(g, m, id, region, at + 1, cost + c, best);
            self.chosen.pop();
            self.used[u as usize] = false;
            if !complete || *best <= cost {
                break;
            }
        }
        if complete && *best > cost {
            complete &= self.assign(g, m, id, region, at + 1, cost + yv, best);
        }
        self.used[v as usize] = false;
        complete
    }

    /// True when the fixed pairs and the assignment have no precedence cycle.
    fn acyclic(&mut self) -> bool {
        let mut all = std::mem::take(&mut self.colour_pairs);
        all.clear();
        all.extend_from_slice(&self.fixed);
        all.extend_from_slice(&self.chosen);
        let ok = is_acyclic(&all, self.fixed.len(), &mut self.colour);
        self.colour_pairs = all;
        ok
    }
}

/// A divisibility test by one divisor without a division (Lemire, Kaser and Kurz, "Faster
/// remainder by direct computation", 2019): `n` is a multiple of `d` exactly when
/// `n * c mod 2^64 < c`, where `c = ceil(2^64 / d)`, for every 32-bit `n` and `d >= 2`.
#[derive(Clone, Copy, Debug)]
pub struct Divisor {
    c: u64,
}

impl Divisor {
    /// The test for `d` (at least 2).
    pub fn new(d: u32) -> Divisor {
        debug_assert!(d >= 2);
        Divisor {
            c: u64::MAX / u64::from(d) + 1,
        }
    }

    /// Whether `n` is a multiple of the divisor.
    pub fn divides(self, n: u32) -> bool {
        u64::from(n).wrapping_mul(self.c) < self.c
    }
}

/// True when no precedence cycle (i -> j when i's factor divides j's number) of `pairs`
/// (big, small) runs through a pair from index `from` on; `colour` is scratch space. Callers
/// put the fixed pairs first: a cycle of fixed pairs alone is not looked for, which only
/// makes them claim less (a node whose fixed pairs are cyclic holds no game at all).
pub fn is_acyclic(pairs: &[(u32, u32)], from: usize, colour: &mut Vec<u8>) -> bool {
    let count = pairs.len();
    colour.clear();
    colour.resize(count, 0);
    let mut stack: Vec<(usize, usize)> = Vec::new();
    // Only cycles through the pairs from `from` on are looked for (see the caller).
    for root in from..count {
        if colour[root] != 0 {
            continue;
        }
        colour[root] = 1;
        stack.push((root, 0));
        while let Some(&mut (i, ref mut next)) = stack.last_mut() {
            let b = pairs[i].1;
            let mut step = None;
            if b > 1 {
                let divides = Divisor::new(b);
                while *next < count {
                    let j = *next;
                    *next += 1;
                    if j != i && divides.divides(pairs[j].0) {
                        step = Some(j);
                        break;
                    }
                }
            }
            match step {
                Some(j) if colour[j] == 1 => return false,
                Some(j) if colour[j] == 0 => {
                    colour[j] = 1;
                    stack.push((j, 0));
                }
                Some(_) => {}
                None => {
                    colour[i] = 2;
                    stack.pop();
                }
            }
        }
    }
    true
}

/// True when one edge from each of `options`, no two sharing a number, can be added to
/// `chosen` (whose first `fixed` pairs are the fixed ones, see [`is_acyclic`]) without a
/// precedence cycle (`used`, `colour`: scratch).
pub fn any_acyclic_assignment(
    options: &[Vec<(u32, u32)>],
    chosen: &mut Vec<(u32, u32)>,
    fixed: usize,
    used: &mut Vec<u32>,
    colour: &mut Vec<u8>,
) -> bool {
    is_acyclic(chosen, fixed, colour) && extends_acyclic(options, chosen, used, colour)
}

/// [`any_acyclic_assignment`] once `chosen` is known to be acyclic: a cycle that an added
/// edge closes passes through it, so only the cycles reachable from it are looked for.
fn extends_acyclic(
    options: &[Vec<(u32, u32)>],
    chosen: &mut Vec<(u32, u32)>,
    used: &mut Vec<u32>,
    colour: &mut Vec<u8>,
) -> bool {
    let Some((first, rest)) = options.split_first() else {
        return true;
    };
    for &(a, b) in first {
        if used.contains(&a) || used.contains(&b) {
            continue;
        }
        chosen.push((a, b));
        used.extend([a, b]);
        let ok = is_acyclic(chosen, chosen.len() - 1, colour)
            && extends_acyclic(rest, chosen, used, colour);
        chosen.pop();
        used.truncate(used.len() - 2);
        if ok {
            return true;
        }
    }
    false
}

/// What a node's fixed pairs add to the precedence cycles of pairs chosen beside them
/// (the same answers as [`any_acyclic_assignment`], without walking the fixed pairs again
/// for every assignment tried): for a factor `b`, the numbers that a chosen pair with
/// factor `b` reaches through fixed pairs, and whether it reaches a cycle of fixed pairs.
/// Worked out once per factor and kept, so one value serves every test at one node.
pub struct FixedReach {
    fixed: Vec<(u32, u32)>,
    words: usize,
    through: HashMap<u32, Through>,
    /// Scratch for the walks: colour per fixed pair, and the walk's stack.
    colour: Vec<u8>,
    stack: Vec<(usize, usize)>,
}

/// A pair chosen beside the fixed pairs, with what its factor reaches through them.
struct Chosen<'a> {
    a: u32,
    b: u32,
    through: &'a Through,
}

impl Chosen<'_> {
    /// Whether a chosen pair numbered `a` follows this one, directly or through fixed
    /// pairs (`same`: it is this pair, which follows itself only through fixed pairs).
    fn leads_to(&self, a: u32, same: bool) -> bool {
        self.b > 1
            && ((!same && a.is_multiple_of(self.b))
                || self.through.numbers[a as usize / 64] >> (a % 64) & 1 == 1)
    }
}

/// [`FixedReach::any_acyclic_assignment`] once `chosen` is: one edge of each option in
/// turn, kept when the chosen pairs stay acyclic beside the fixed ones.
fn extend_acyclic<'a>(options: &'a [Vec<Chosen<'a>>], chosen: &mut Vec<&'a Chosen<'a>>) -> bool {
    let Some((first, rest)) = options.split_first() else {
        return true;
    };
    for edge in first {
        if chosen
            .iter()
            .any(|c| c.a == edge.a || c.a == edge.b || c.b == edge.a || c.b == edge.b)
        {
            continue;
        }
        chosen.push(edge);
        let ok = !closes_cycle(chosen) && extend_acyclic(rest, chosen);
        chosen.pop();
        if ok {
            return true;
        }
    }
    false
}

/// Whether the last of `chosen` (the others acyclic beside the fixed pairs, at most 64)
/// lies on a cycle or reaches one: any new cycle passes through it.
fn closes_cycle(chosen: &[&Chosen]) -> bool {
    let last = chosen.len() - 1;
    if chosen[last].through.cycle {
        return true;
    }
    // Depth-first over the chosen pairs from the last one, back to it.
    let mut seen = 1u64 << last;
    let mut stack = 1u64 << last;
    while stack != 0 {
        let i = stack.trailing_zeros() as usize;
        stack &= stack - 1;
        for (j, c) in chosen.iter().enumerate() {
            if chosen[i].leads_to(c.a, j == i) {
                if j == last {
                    return true;
                }
                if seen >> j & 1 == 0 {
                    seen |= 1 << j;
                    stack |= 1 << j;
                }
            }
        }
    }
    false
}

/// What a pair with one factor reaches through the fixed pairs.
struct Through {
    /// Bit x: some fixed pair reached has a factor dividing x (a pair numbered x follows).
    numbers: Vec<u64>,
    /// A cycle of fixed pairs is reached.
    cycle: bool,
}

impl FixedReach {
    /// The reach of the `fixed` pairs (numbers up to `n`).
    pub fn new(n: u32, fixed: Vec<(u32, u32)>) -> FixedReach {
        FixedReach {
            words: (n as usize + 1).div_ceil(64),
            fixed,
            through: HashMap::new(),
            colour: Vec::new(),
            stack: Vec::new(),
        }
    }

    /// True when one edge from each of `options`, no two sharing a number, can be chosen
    /// beside the fixed pairs without a precedence cycle through a chosen pair (as
    /// [`any_acyclic_assignment`] with the fixed pairs first).
    pub fn any_acyclic_assignment(&mut self, options: &[Vec<(u32, u32)>]) -> bool {
        if options.len() > 64 {
            // Beyond the walk's bit masks: the general test.
            let mut chosen = self.fixed.clone();
            let fixed = chosen.len();
            return any_acyclic_assignment(
                options,
                &mut chosen,
                fixed,
                &mut Vec::new(),
                &mut Vec::new(),
            );
        }
        for &(_, b) in options.iter().flatten() {
            self.learn(b);
        }
        // Each option edge with what its factor reaches.
        let options: Vec<Vec<Chosen>> = options
            .iter()
            .map(|o| {
                o.iter()
                    .map(|&(a, b)| Chosen {
                        a,
                        b,
                        through: &self.through[&b],
                    })
                    .collect()
            })
            .collect();
        let mut chosen = Vec::with_capacity(options.len());
        extend_acyclic(&options, &mut chosen)
    }

    /// Works out what a pair with factor `b` reaches through the fixed pairs, once.
    fn learn(&mut self, b: u32) {
        if self.through.contains_key(&b) {
            return;
        }
        let mut numbers = vec![0u64; self.words];
        let mut cycle = false;
        let count = self.fixed.len();
        self.colour.clear();
        self.colour.resize(count, 0);
        if b > 1 {
            let divides = Divisor::new(b);
            'roots: for root in 0..count {
                if self.colour[root] != 0 || !divides.divides(self.fixed[root].0) {
                    continue;
                }
                self.colour[root] = 1;
                self.stack.push((root, 0));
                while let Some(&mut (i, ref mut next)) = self.stack.last_mut() {
                    let f = self.fixed[i].1;
                    let mut step = None;
                    if f > 1 {
                        let divides = Divisor::new(f);
                        while *next < count {
                            let j = *next;
                            *next += 1;
                            if j != i && divides.divides(self.fixed[j].0) {
                                step = Some(j);
                                break;
                            }
                        }
                    }
                    match step {
                        Some(j) if self.colour[j] == 1 => {
                            cycle = true;
                            break 'roots;
                        }
                        Some(j) if self.colour[j] == 0 => {
                            self.colour[j] = 1;
                            self.stack.push((j, 0));
                        }
                        Some(_) => {}
                        None => {
                            self.colour[i] = 2;
                            self.stack.pop();
                            if f > 1 {
                                let mut x = f;
                                while (x as usize) < self.words * 64 {
                                    numbers[x as usize / 64] |= 1 << (x % 64);
                                    x += f;
                                }
                            }
                        }
                    }
                }
            }
            self.stack.clear();
        }
        self.through.insert(b, Through { numbers, cycle });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The division-free test agrees with the remainder.
        #[test]
        fn divisor_agrees_with_the_remainder(d in 2u32.., n in any::<u32>(), small in 0u32..5000) {
            prop_assert_eq!(Divisor::new(d).divides(n), n % d == 0);
            let d = d % 5000 + 2;
            prop_assert_eq!(Divisor::new(d).divides(small), small % d == 0);
            prop_assert!(Divisor::new(d).divides(small * d));
            // Just off a multiple, where an off-by-one in the test would show.
            prop_assert!(!Divisor::new(d).divides(small * d + 1));
            prop_assert!(small == 0 || !Divisor::new(d).divides(small * d - 1));
        }

        /// [`is_acyclic`] agrees with a transitive closure: false exactly when a cycle is
        /// reachable from a pair after the fixed ones.
        #[test]
        fn the_cycle_test_agrees_with_a_closure(
            fixed in pairs(24),
            chosen in pairs(4),
        ) {
            let all: Vec<(u32, u32)> = fixed.iter().chain(&chosen).copied().collect();
            prop_assert_eq!(
                is_acyclic(&all, fixed.len(), &mut Vec::new()),
                acyclic_by_closure(&all, fixed.len())
            );
        }

        /// [`any_acyclic_assignment`] agrees with trying every assignment against the
        /// closure.
        #[test]
        fn assignments_agree_with_trying_them_all(
            fixed in pairs(16),
            options in proptest::collection::vec(pairs(4), 0..5),
        ) {
            let want = every_assignment(&options, &mut fixed.clone(), fixed.len());
            let mut chosen = fixed.clone();
            let got = any_acyclic_assignment(
                &options, &mut chosen, fixed.len(), &mut Vec::new(), &mut Vec::new());
            prop_assert_eq!(got, want);
            prop_assert_eq!(chosen, fixed.clone());
            let mut reach = FixedReach::new(110, fixed);
            prop_assert_eq!(reach.any_acyclic_assignment(&options), want);
            // Kept reaches answer again the same.
            prop_assert_eq!(reach.any_acyclic_assignment(&options), want);
        }
    }

    /// Up to `most` pairs (number, factor): numbers with small factors, and primes above
    /// every factor (a cycle reached from one of those runs among the pairs before it).
    fn pairs(most: usize) -> impl Strategy<Value = Vec<(u32, u32)>> {
        proptest::collection::vec(
            (
                prop_oneof![2u32..90, proptest::sample::select(vec![97u32, 101, 103])],
                1u32..16,
            ),
            0..most,
        )
    }

    /// True when no precedence cycle of `all` is reachable from a pair from `from` on, by a
    /// transitive closure.
    fn acyclic_by_closure(all: &[(u32, u32)], from: usize) -> bool {
        let count = all.len();
        // reach[i][j]: a path of one or more precedence edges from i to j.
        let mut reach = vec![vec![false; count]; count];
        for i in 0..count {
            for j in 0..count {
                reach[i][j] = i != j && all[i].1 > 1 && all[j].0.is_multiple_of(all[i].1);
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
        !(from..count).any(|root| (0..count).any(|c| (c == root || reach[root][c]) && reach[c][c]))
    }

    /// Whether some choice of one edge per option, no two sharing a number, keeps `chosen`
    /// (its first `fixed` pairs fixed) acyclic by [`acyclic_by_closure`].
    fn every_assignment(
        options: &[Vec<(u32, u32)>],
        chosen: &mut Vec<(u32, u32)>,
        fixed: usize,
    ) -> bool {
        let Some((first, rest)) = options.split_first() else {
            return acyclic_by_closure(chosen, fixed);
        };
        first.iter().any(|&(a, b)| {
            let taken = chosen[fixed..]
                .iter()
                .any(|&(x, y)| [x, y].contains(&a) || [x, y].contains(&b));
            if taken {
                return false;
            }
            chosen.push((a, b));
            let ok = every_assignment(rest, chosen, fixed);
            chosen.pop();
            ok
        })
    }
}
