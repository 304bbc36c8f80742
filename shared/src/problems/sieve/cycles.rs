//! Precedence cycles among a search node's pairs, found on bit sets of numbers.
//!
//! Pair i = (a, b) must precede another pair j = (a', b') when b divides a' (see
//! [`super::search`]).
//! The successors of a pair are then the multiples of its factor among the pairs' numbers:
//! one row of precomputed multiples ANDed with the node's set of numbers, a few machine
//! words, instead of lists walked and stored per node. Everything here works on numbers
//! (a pair is named by its selected number, which no other pair has) and visits successors
//! in increasing order of their numbers, so the cycles found are those the lists found.

use std::collections::VecDeque;

/// No index yet (Tarjan's algorithm).
const NONE: u32 = u32::MAX;

/// Bit words covering the numbers 0..=n.
fn words_for(n: u32) -> usize {
    (n as usize + 1).div_ceil(64)
}

fn has(set: &[u64], x: u32) -> bool {
    set[x as usize / 64] >> (x % 64) & 1 == 1
}

fn insert(set: &mut [u64], x: u32) {
    set[x as usize / 64] |= 1 << (x % 64);
}

fn remove(set: &mut [u64], x: u32) {
    set[x as usize / 64] &= !(1 << (x % 64));
}

/// The least x >= `from` in `a` ∩ `b` \ `not`, if any.
fn next_in(a: &[u64], b: &[u64], not: &[u64], from: u32) -> Option<u32> {
    let mut w = from as usize / 64;
    if w >= a.len() {
        return None;
    }
    let mut word = a[w] & b[w] & !not[w] & (u64::MAX << (from % 64));
    loop {
        if word != 0 {
            return Some((w * 64) as u32 + word.trailing_zeros());
        }
        w += 1;
        if w >= a.len() {
            return None;
        }
        word = a[w] & b[w] & !not[w];
    }
}

/// A cycle's cost: its non-fixed pairs (numbers in `unfixed`).
fn cost(unfixed: &[u64], cycle: &[u32]) -> u32 {
    cycle.iter().filter(|&&a| has(unfixed, a)).count() as u32
}

/// Factors up to this have their multiples in a bit row; the multiples of larger ones (at
/// most n / 65 of them, fewer than a row's words) are walked.
const ROW_FACTORS: u32 = 64;

/// The successors of a pair by its factor b: the multiples of b from 2b to n.
struct Multiples {
    n: u32,
    words: usize,
    /// Row b (words `b * words ..`) for b <= [`ROW_FACTORS`] (empty for b <= 1).
    rows: Vec<u64>,
}

impl Multiples {
    fn new(n: u32) -> Multiples {
        let words = words_for(n);
        let top = ROW_FACTORS.min(n);
        let mut rows = vec![0u64; (top as usize + 1) * words];
        for b in 2..=top {
            let row = &mut rows[b as usize * words..(b as usize + 1) * words];
            let mut m = 2 * b;
            while m <= n {
                insert(row, m);
                m += b;
            }
        }
        Multiples { n, words, rows }
    }

    fn row(&self, b: u32) -> &[u64] {
        &self.rows[b as usize * self.words..(b as usize + 1) * self.words]
    }

    /// The least multiple x >= `from` of `b` (2b <= x <= n) in `a` \ `not`, if any.
    fn next(&self, b: u32, a: &[u64], not: &[u64], from: u32) -> Option<u32> {
        if b <= 1 {
            None
        } else if b <= ROW_FACTORS {
            next_in(self.row(b), a, not, from)
        } else {
            let mut m = from.max(2 * b).div_ceil(b) * b;
            while m <= self.n {
                if has(a, m) && !has(not, m) {
                    return Some(m);
                }
                m += b;
            }
            None
        }
    }

    /// Calls `each` on the multiples of `b` (2b <= x <= n) in `a` ∩ `c`, in increasing order.
    fn for_each_in(&self, b: u32, a: &[u64], c: &[u64], mut each: impl FnMut(u32)) {
        if b <= 1 {
        } else if b <= ROW_FACTORS {
            for (k, ((&r, &x), &y)) in self.row(b).iter().zip(a).zip(c).enumerate() {
                let mut word = r & x & y;
                while word != 0 {
                    each((k * 64) as u32 + word.trailing_zeros());
                    word &= word - 1;
                }
            }
        } else {
            let mut m = 2 * b;
            while m <= self.n {
                if has(a, m) && has(c, m) {
                    each(m);
                }
                m += b;
            }
        }
    }
}

/// A node's pairs and its disjoint precedence cycles, found one at a time, each without the
/// non-fixed pairs of those before it ([`Cycles::take_out`], [`CycleFinder::find`]).
pub(super) struct Cycles {
    /// The cycles found so far (their non-fixed pairs, in branching order).
    pub found: Vec<Vec<(u32, u32)>>,
    /// The node's pairs (fixed and matched), in increasing order.
    pub pairs: Vec<(u32, u32)>,
    /// No further cycle.
    pub exhausted: bool,
    /// The number sets and labels, built on the first search.
    layout: Option<Layout>,
}

/// What the searches of one node know, by number.
struct Layout {
    /// Each pair's factor by its number (0: no pair).
    factor: Vec<u32>,
    /// The numbers of all pairs.
    numbers: Vec<u64>,
    /// The numbers of the pairs the next cycle is looked for among (the pairs to branch on of
    /// the cycles found so far are out).
    left: Vec<u64>,
    /// The numbers from which an earlier search among a superset of `left` found no cycle
    /// reachable (taking pairs out of `left` creates none, so they stay done).
    done: Vec<u64>,
    /// The numbers of the pairs that are not fixed (a cycle's cost counts these).
    unfixed: Vec<u64>,
    /// Each pair's strongly connected component (by number; labelled when a cycle is first
    /// refined): a cycle stays within one.
    component: Vec<u32>,
    /// The numbers of one component, and which (the last one a search needed).
    members: Option<(u32, Vec<u64>)>,
}

impl Cycles {
    /// No cycle found yet among `pairs`.
    pub fn new(pairs: Vec<(u32, u32)>) -> Cycles {
        Cycles {
            found: Vec::new(),
            pairs,
            exhausted: false,
            layout: None,
        }
    }

    /// Takes a found cycle's pairs out of the pairs later cycles are looked for among.
    pub fn take_out(&mut self, pairs: &[(u32, u32)]) {
        if let Some(layout) = self.layout.as_mut() {
            for &(a, _) in pairs {
                remove(&mut layout.left, a);
            }
        }
    }

    /// Forgets what earlier searches proved acyclic (the next search starts from scratch).
    #[cfg(test)]
    pub fn forget_done(&mut self) {
        if let Some(layout) = self.layout.as_mut() {
            layout.done.iter_mut().for_each(|w| *w = 0);
        }
    }
}

/// Finds precedence cycles among pairs: i -> j when i's factor divides j's number.
pub(super) struct CycleFinder {
    n: u32,
    words: usize,
    /// The pairs' successors by factor.
    multiples: Multiples,
    /// The depth-first search's path: (number, the least successor not yet tried).
    stack: Vec<(u32, u32)>,
    /// The numbers on the path.
    grey: Vec<u64>,
    /// Tarjan's indices and low links by number (of the numbers visited).
    index: Vec<u32>,
    low: Vec<u32>,
    /// Breadth-first search: distance and parent by number, valid where `stamp` = `epoch`.
    dist: Vec<u32>,
    parent: Vec<u32>,
    stamp: Vec<u32>,
    epoch: u32,
    deque: VecDeque<u32>,
}

impl CycleFinder {
    /// A finder for the numbers 1..=n.
    pub fn new(n: u32) -> CycleFinder {
        let words = words_for(n);
        let multiples = Multiples::new(n);
        let size = n as usize + 1;
        CycleFinder {
            n,
            words,
            multiples,
            stack: Vec::new(),
            grey: vec![0; words],
            index: vec![0; size],
            low: vec![0; size],
            dist: vec![0; size],
            parent: vec![0; size],
            stamp: vec![0; size],
            epoch: 0,
            deque: VecDeque::new(),
        }
    }

    /// Builds `cycles`' layout on its first search.
    fn lay_out(&mut self, cycles: &mut Cycles, fixed: &dyn Fn(u32) -> bool) {
        if cycles.layout.is_some() {
            return;
        }
        let mut layout = Layout {
            factor: vec![0; self.n as usize + 1],
            numbers: vec![0; self.words],
            left: Vec::new(),
            done: vec![0; self.words],
            unfixed: vec![0; self.words],
            component: vec![NONE; self.n as usize + 1],
            members: None,
        };
        for &(a, b) in &cycles.pairs {
            layout.factor[a as usize] = b;
            insert(&mut layout.numbers, a);
            if !fixed(a) {
                insert(&mut layout.unfixed, a);
            }
        }
        layout.left = layout.numbers.clone();
        cycles.layout = Some(layout);
    }

    /// Labels the strongly connected components of all the pairs (Tarjan's algorithm,
    /// without recursion). A number's unvisited successors are taken one at a time; its
    /// successors still on the stack lower its link all at once when it is done (a number
    /// pushed before it stays on the stack until it is done, so these are the same as when
    /// each edge is looked at in turn).
    fn label_components(&mut self, layout: &mut Layout) {
        let words = self.words;
        let mut visited = vec![0u64; words];
        let mut on_stack = vec![0u64; words];
        let mut stack: Vec<u32> = Vec::new();
        let mut calls: Vec<(u32, u32)> = Vec::new();
        let (mut next_index, mut next_component) = (0u32, 0u32);
        let mut root = 0;
        while let Some(r) = next_in(&layout.numbers, &layout.numbers, &visited, root) {
            root = r + 1;
            // The number to visit next: the root, then each unvisited successor in turn.
            let mut reached = Some(r);
            loop {
                if let Some(w) = reached.take() {
                    self.index[w as usize] = next_index;
                    self.low[w as usize] = next_index;
                    next_index += 1;
                    insert(&mut visited, w);
                    insert(&mut on_stack, w);
                    stack.push(w);
                    calls.push((w, 0));
                }
                let Some(&mut (v, ref mut from)) = calls.last_mut() else {
                    break;
                };
                let b = layout.factor[v as usize];
                if let Some(w) = self.multiples.next(b, &layout.numbers, &visited, *from) {
                    *from = w + 1;
                    reached = Some(w);
                    continue;
                }
                // Done with v: its successors on the stack (itself among them, harmlessly:
                // a pair's number is a multiple of its factor).
                let mut low = self.low[v as usize];
                let index = &self.index;
                self.multiples
                    .for_each_in(b, &on_stack, &layout.numbers, |w| {
                        low = low.min(index[w as usize]);
                    });
                self.low[v as usize] = low;
                calls.pop();
                if let Some(&(parent, _)) = calls.last() {
                    let low = self.low[parent as usize].min(low);
                    self.low[parent as usize] = low;
                }
                if low == self.index[v as usize] {
                    while let Some(w) = stack.pop() {
                        remove(&mut on_stack, w);
                        layout.component[w as usize] = next_component;
                        if w == v {
                            break;
                        }
                    }
                    next_component += 1;
                }
            }
        }
    }

    /// Makes `layout.members` the component of `x` (labelling the components first if they
    /// are not yet).
    fn gather_component(&mut self, layout: &mut Layout, x: u32) {
        if layout.component[x as usize] == NONE {
            self.label_components(layout);
        }
        let component = layout.component[x as usize];
        if layout.members.as_ref().is_some_and(|m| m.0 == component) {
            return;
        }
        let mut members = vec![0u64; self.words];
        for (k, &word) in layout.numbers.iter().enumerate() {
            let mut word = word;
            while word != 0 {
                let y = (k * 64) as u32 + word.trailing_zeros();
                word &= word - 1;
                if layout.component[y as usize] == component {
                    insert(&mut members, y);
                }
            }
        }
        layout.members = Some((component, members));
    }

    /// The next cycle among the pairs `cycles` has left, as pairs in precedence order
    /// (`fixed` tells the node's fixed pairs by number), if there is one. The search is
    /// depth-first from each number in increasing order, successors in increasing order;
    /// the cycle is then replaced by the cheapest one
    /// (fewest non-fixed pairs) through one of its pairs.
    pub fn find(
        &mut self,
        cycles: &mut Cycles,
        fixed: &dyn Fn(u32) -> bool,
    ) -> Option<Vec<(u32, u32)>> {
        self.lay_out(cycles, fixed);
        let layout = cycles.layout.as_mut().expect("laid out");
        self.grey.iter_mut().for_each(|w| *w = 0);
        let mut found: Option<Vec<u32>> = None;
        let mut root = 0;
        'roots: while let Some(r) = next_in(&layout.left, &layout.left, &layout.done, root) {
            root = r + 1;
            if layout.factor[r as usize] <= 1 {
                continue;
            }
            self.stack.clear();
            insert(&mut self.grey, r);
            self.stack.push((r, 0));
            while let Some(&mut (i, ref mut from)) = self.stack.last_mut() {
                let b = layout.factor[i as usize];
                match self.multiples.next(b, &layout.left, &layout.done, *from) {
                    // A pair's own number is a multiple of its factor: no edge.
                    Some(j) if j == i => *from = j + 1,
                    Some(j) => {
                        *from = j + 1;
                        if has(&self.grey, j) {
                            let at = self
                                .stack
                                .iter()
                                .position(|&(k, _)| k == j)
                                .expect("grey is on the stack");
                            found = Some(self.stack[at..].iter().map(|&(k, _)| k).collect());
                            break 'roots;
                        }
                        insert(&mut self.grey, j);
                        self.stack.push((j, 0));
                    }
                    None => {
                        insert(&mut layout.done, i);
                        remove(&mut self.grey, i);
                        self.stack.pop();
                    }
                }
            }
        }
        let mut cycle = found?;
        let mut best = cost(&layout.unfixed, &cycle);
        if best > 1 {
            self.gather_component(layout, cycle[0]);
        }
        // Branch on the cycle with the fewest pairs to branch on: among the cycles through
        // the pairs of the one found, the best by a 0-1 search (fixed pairs cost nothing).
        for start in cycle.clone() {
            if best <= 1 {
                break;
            }
            if let Some(c) = self.cheapest_through(start, layout, best) {
                let cost = cost(&layout.unfixed, &c);
                if cost < best {
                    (best, cycle) = (cost, c);
                }
            }
        }
        Some(
            cycle
                .into_iter()
                .map(|a| (a, layout.factor[a as usize]))
                .collect(),
        )
    }

    /// The cycle through `start` with the fewest non-fixed pairs (0-1 breadth-first search
    /// over the precedence edges among the pairs left, a non-fixed pair costing 1 and a
    /// fixed one 0). Only cycles cheaper than `below` are looked for: numbers at that
    /// distance are not expanded, which leaves the distances and parents of the nearer ones
    /// as they were.
    fn cheapest_through(&mut self, start: u32, layout: &Layout, below: u32) -> Option<Vec<u32>> {
        // Outside start's component no path leads back to it (and nothing there changes the
        // distances or the order inside it).
        let (_, members) = layout.members.as_ref().expect("the cycle's component");
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.stamp.iter_mut().for_each(|s| *s = 0);
            self.epoch = 1;
        }
        let epoch = self.epoch;
        self.deque.clear();
        // Distances count the non-fixed pairs entered; `start` is reached again at the end.
        self.deque.push_back(start);
        self.stamp[start as usize] = epoch;
        self.dist[start as usize] = 0;
        let mut closing: Option<(u32, u32)> = None;
        while let Some(i) = self.deque.pop_front() {
            let d = self.dist[i as usize];
            if d >= closing.map_or(below, |(c, _)| c.min(below)) {
                continue;
            }
            let CycleFinder {
                multiples,
                stamp,
                dist,
                parent,
                deque,
                ..
            } = self;
            multiples.for_each_in(layout.factor[i as usize], &layout.left, members, |j| {
                // A pair's own number is a multiple of its factor: no edge.
                if j == i {
                    return;
                }
                let nd = d + u32::from(has(&layout.unfixed, j));
                if j == start {
                    if nd < below && closing.is_none_or(|(c, _)| nd < c) {
                        closing = Some((nd, i));
                    }
                    return;
                }
                if stamp[j as usize] != epoch || nd < dist[j as usize] {
                    stamp[j as usize] = epoch;
                    dist[j as usize] = nd;
                    parent[j as usize] = i;
                    if nd == d {
                        deque.push_front(j);
                    } else {
                        deque.push_back(j);
                    }
                }
            });
        }
        let (_, last) = closing?;
        let mut cycle = vec![last];
        let mut at = last;
        while at != start {
            at = self.parent[at as usize];
            cycle.push(at);
        }
        cycle.reverse();
        Some(cycle)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A random matching-like pairing of 1..=n (distinct numbers, distinct factors, each
    /// factor a proper divisor of its number), in increasing order, and which pairs are
    /// fixed.
    fn random_pairs(n: u32, seed: u64) -> (Vec<(u32, u32)>, Vec<u32>) {
        let mut state = seed | 1;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut used = vec![false; n as usize + 1];
        let mut pairs = Vec::new();
        let mut order: Vec<u32> = (2..=n).collect();
        for i in (1..order.len()).rev() {
            order.swap(i, (next() % (i as u64 + 1)) as usize);
        }
        for a in order {
            let divisors: Vec<u32> = (1..a)
                .filter(|d| a.is_multiple_of(*d) && !used[*d as usize])
                .collect();
            if used[a as usize] || divisors.is_empty() || next() % 4 == 0 {
                continue;
            }
            let b = divisors[(next() % divisors.len() as u64) as usize];
            used[a as usize] = true;
            used[b as usize] = true;
            pairs.push((a, b));
        }
        pairs.sort_unstable();
        let fixed = pairs
            .iter()
            .map(|p| p.0)
            .filter(|_| next() % 3 == 0)
            .collect();
        (pairs, fixed)
    }

    /// The precedence successors of each pair, by index: listed plainly.
    fn successor_lists(pairs: &[(u32, u32)]) -> Vec<Vec<usize>> {
        pairs
            .iter()
            .enumerate()
            .map(|(i, &(_, b))| {
                (0..pairs.len())
                    .filter(|&j| j != i && b > 1 && pairs[j].0.is_multiple_of(b))
                    .collect()
            })
            .collect()
    }

    /// The search [`CycleFinder::find`] stands for, on plain lists and without components:
    /// depth-first from each pair in order for a cycle among the pairs `left`, then the
    /// cheapest cycle through each of its pairs by a 0-1 breadth-first search.
    fn plain_find(
        pairs: &[(u32, u32)],
        lists: &[Vec<usize>],
        left: &[bool],
        fixed: &[u32],
    ) -> Option<Vec<(u32, u32)>> {
        let count = pairs.len();
        let mut colour = vec![0u8; count];
        let mut found = None;
        'roots: for root in 0..count {
            if !left[root] || colour[root] != 0 || pairs[root].1 <= 1 {
                continue;
            }
            colour[root] = 1;
            let mut stack = vec![(root, 0usize)];
            while let Some(&mut (i, ref mut at)) = stack.last_mut() {
                let next = lists[i][*at..].iter().position(|&j| left[j]);
                match next.map(|k| (*at + k, lists[i][*at + k])) {
                    Some((k, j)) => {
                        *at = k + 1;
                        if colour[j] == 1 {
                            let from = stack.iter().position(|&(x, _)| x == j).unwrap();
                            found = Some(stack[from..].iter().map(|&(x, _)| x).collect::<Vec<_>>());
                            break 'roots;
                        }
                        if colour[j] == 0 {
                            colour[j] = 1;
                            stack.push((j, 0));
                        }
                    }
                    None => {
                        colour[i] = 2;
                        stack.pop();
                    }
                }
            }
        }
        let cycle: Vec<usize> = found?;
        let costs: Vec<u32> = pairs
            .iter()
            .map(|p| u32::from(!fixed.contains(&p.0)))
            .collect();
        let cost_of = |c: &[usize]| c.iter().map(|&i| costs[i]).sum::<u32>();
        let mut best = (cost_of(&cycle), cycle.clone());
        for &start in &cycle {
            if best.0 <= 1 {
                break;
            }
            let below = best.0;
            let (mut dist, mut parent) = (vec![u32::MAX; count], vec![usize::MAX; count]);
            let mut deque = VecDeque::from([start]);
            dist[start] = 0;
            let mut closing: Option<(u32, usize)> = None;
            while let Some(i) = deque.pop_front() {
                let d = dist[i];
                if d >= closing.map_or(below, |(c, _)| c.min(below)) {
                    continue;
                }
                for &j in lists[i].iter().filter(|&&j| left[j]) {
                    let nd = d + costs[j];
                    if j == start {
                        if nd < below && closing.is_none_or(|(c, _)| nd < c) {
                            closing = Some((nd, i));
                        }
                    } else if nd < dist[j] {
                        dist[j] = nd;
                        parent[j] = i;
                        if costs[j] == 0 {
                            deque.push_front(j);
                        } else {
                            deque.push_back(j);
                        }
                    }
                }
            }
            if let Some((_, last)) = closing {
                let mut c = vec![last];
                while *c.last().unwrap() != start {
                    c.push(parent[*c.last().unwrap()]);
                }
                c.reverse();
                if cost_of(&c) < best.0 {
                    best = (cost_of(&c), c);
                }
            }
        }
        Some(best.1.into_iter().map(|i| pairs[i]).collect())
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// Successive cycles, each found among the pairs the ones before left (their
        /// non-fixed pairs taken out, as the search does), are those of the plain search.
        #[test]
        fn cycles_are_those_of_the_plain_search(n in 10u32..160, seed in proptest::prelude::any::<u64>()) {
            let (pairs, fixed) = random_pairs(n, seed);
            let lists = successor_lists(&pairs);
            let mut finder = CycleFinder::new(n);
            let mut cycles = Cycles::new(pairs.clone());
            let mut left = vec![true; pairs.len()];
            let is_fixed = |a: u32| fixed.contains(&a);
            for _ in 0..pairs.len() {
                let want = plain_find(&pairs, &lists, &left, &fixed);
                let got = finder.find(&mut cycles, &is_fixed);
                proptest::prop_assert_eq!(&got, &want, "n = {}, pairs {:?}", n, pairs);
                let Some(cycle) = want else { break };
                let out: Vec<(u32, u32)> = cycle.into_iter().filter(|p| !is_fixed(p.0)).collect();
                if out.is_empty() {
                    break;
                }
                for p in &out {
                    left[pairs.binary_search(p).unwrap()] = false;
                }
                cycles.take_out(&out);
            }
        }

        /// Two pairs share a component exactly when each reaches the other.
        #[test]
        fn components_are_the_strongly_connected_ones(n in 10u32..120, seed in proptest::prelude::any::<u64>()) {
            let (pairs, _) = random_pairs(n, seed);
            let lists = successor_lists(&pairs);
            let reach: Vec<Vec<bool>> = (0..pairs.len())
                .map(|s| {
                    let mut seen = vec![false; pairs.len()];
                    let mut todo = vec![s];
                    seen[s] = true;
                    while let Some(i) = todo.pop() {
                        for &j in &lists[i] {
                            if !seen[j] {
                                seen[j] = true;
                                todo.push(j);
                            }
                        }
                    }
                    seen
                })
                .collect();
            let mut finder = CycleFinder::new(n);
            let mut cycles = Cycles::new(pairs.clone());
            finder.lay_out(&mut cycles, &|_| false);
            let mut layout = cycles.layout.take().unwrap();
            finder.label_components(&mut layout);
            for (i, &(a, _)) in pairs.iter().enumerate() {
                for (j, &(c, _)) in pairs.iter().enumerate() {
                    let same = layout.component[a as usize] == layout.component[c as usize];
                    proptest::prop_assert_eq!(same, reach[i][j] && reach[j][i], "{:?} {:?}", pairs[i], pairs[j]);
                }
            }
        }
    }
}
