//! Pepperdine's backward search (see the parent module's docs, "Backward search"): the game
//! run in reverse from its last deck `1 ? ... ?`. A node is a deck of known and unknown cards
//! with its depth (the flips its decks take); child `k >= 2` un-flips position k (card k, or an
//! unknown card that becomes k when k is unused), child 1 is the leaf "this deck is the start".

use super::simd::{self, Deck};
use super::{
    above, below, bit, next_permutation, relation, Observer, Rel, SearchEnd, SearchStats,
    MAX_LEAF_DECKS, NO_BOUND, UNKNOWN,
};

/// Entries of the backward DFS stack (a power of two): paths are as long as the games, at
/// most 2 f(n-1) + 2 (see [`max_depth`]).
pub(super) const BSTACK: usize = 512;

/// The longest backward path: until card n is un-flipped every un-flip is at most n - 1, so
/// the depth is at most f(n-1) (the top n - 1 positions play an (n-1)-card game); after it,
/// at most f(n-1) more (the frozen-tail bound with s <= n - 1); plus the un-flip and the leaf.
pub(super) fn max_depth(n: usize, tail: &[u32; 64]) -> u64 {
    if n < 2 {
        return 1;
    }
    2 * u64::from(tail[n - 1]) + 2
}

/// A node of the backward tree in plain bytes (used off the hot path).
#[derive(Clone, Debug)]
pub(super) struct Node {
    /// Position i holds a card value or `UNKNOWN` (bytes from n on are 0).
    pub(super) deck: [u8; 32],
    pub(super) n: usize,
    /// Flips every deck of the node takes (its depth).
    pub(super) flips: u32,
    /// Values not on any known card (bit v; 1 is always used).
    pub(super) unused: u64,
    /// Smallest `flips + tail[s]` on the way (the most the node's leaves can reach).
    pub(super) cap: u32,
}

/// One child of a byte-level node.
pub(super) enum Step {
    Leaf(Node),
    Branch(Node),
}

impl Node {
    pub(super) fn root(n: usize) -> Node {
        let mut deck = [0u8; 32];
        deck[0] = 1;
        for b in deck.iter_mut().take(n).skip(1) {
            *b = UNKNOWN;
        }
        Node {
            deck,
            n,
            flips: 0,
            unused: below(n as u32 + 1) & !3,
            cap: NO_BOUND,
        }
    }

    /// The children (bit v = child v): the legal un-flips, and the leaf (bit 1).
    pub(super) fn children(&self) -> u64 {
        let mut out = 2;
        for k in 2..=self.n {
            let c = self.deck[k - 1];
            if c as usize == k || (c == UNKNOWN && self.unused & bit(k as u32) != 0) {
                out |= bit(k as u32);
            }
        }
        out
    }

    /// The child `v`, which must be one of [`Node::children`].
    pub(super) fn child(&self, v: u8, tail: &[u32; 64]) -> Step {
        let mut c = self.clone();
        if v == 1 {
            return Step::Leaf(c);
        }
        let k = v as usize;
        c.deck[k - 1] = v;
        c.deck[..k].reverse();
        c.unused &= !bit(k as u32);
        c.flips += 1;
        let s = top_bit(c.children() & !3);
        c.cap = c.cap.min(c.flips + tail[s as usize & 63]);
        Step::Branch(c)
    }

    /// The concrete decks of a leaf: unknown cards get the unused values in every order
    /// (`all`) or in increasing order only.
    fn fillings(&self, all: bool, skip_fixed: bool, mut each: impl FnMut(&[u8])) -> u64 {
        let n = self.n;
        let free: Vec<usize> = (0..n).filter(|&i| self.deck[i] == UNKNOWN).collect();
        let mut perm: Vec<u8> = (2..=n as u8)
            .filter(|&v| self.unused & bit(v as u32) != 0)
            .collect();
        let mut deck: Vec<u8> = self.deck[..n].to_vec();
        let mut count = 0;
        loop {
            for (&i, &v) in free.iter().zip(&perm) {
                deck[i] = v;
            }
            let fixed = deck
                .iter()
                .enumerate()
                .any(|(i, &v)| v >= 2 && v as usize == i + 1);
            if !(skip_fixed && fixed) {
                each(&deck);
                count += 1;
            }
            if !all || !next_permutation(&mut perm) {
                break;
            }
        }
        count
    }
}

/// Index of the highest set bit (0 for none).
#[inline(always)]
fn top_bit(x: u64) -> u32 {
    63 - (x | 1).leading_zeros()
}

/// The node named by `path` (the root for an empty path), checked to exist.
pub(super) fn replay(n: usize, tail: &[u32; 64], path: &[u8]) -> Result<(Node, bool), String> {
    let mut node = Node::root(n);
    for (i, &v) in path.iter().enumerate() {
        if v == 0 || v as usize > n || node.children() & bit(v as u32) == 0 {
            return Err(format!(
                "prefix {path:?} is not a node: un-flip {v} at index {i} is not legal"
            ));
        }
        match node.child(v, tail) {
            Step::Leaf(leaf) => {
                if i + 1 != path.len() {
                    return Err(format!("prefix {path:?} continues past a leaf"));
                }
                return Ok((leaf, true));
            }
            Step::Branch(b) => node = b,
        }
    }
    Ok((node, false))
}

/// Lists prefixes of length `depth` after `after` (see `Searcher::prefixes_after`).
pub(super) fn enumerate(
    tail: &[u32; 64],
    node: &Node,
    path: &mut Vec<u8>,
    depth: usize,
    after: Option<&[u8]>,
    max: usize,
    out: &mut Vec<Vec<u8>>,
) -> bool {
    if path.len() >= depth {
        return super::push_prefix(path, after, max, out);
    }
    let mut todo = node.children();
    while todo != 0 {
        let v = todo.trailing_zeros() as u8;
        todo &= todo - 1;
        path.push(v);
        let keep_going = match after.map(|a| relation(path, a)) {
            Some(Rel::Before) => true,
            _ => match node.child(v, tail) {
                Step::Leaf(_) => super::push_prefix(path, after, max, out),
                Step::Branch(child) => enumerate(tail, &child, path, depth, after, max, out),
            },
        };
        path.pop();
        if !keep_going {
            return false;
        }
    }
    true
}

#[cfg(test)]
/// The backward path of a concrete deck (its flips' sizes, last first, then 1) and its flip
/// count: the leaf of the backward tree whose decks include this one.
pub fn leaf_path(deck: &[u8]) -> Result<(Vec<u8>, u64), String> {
    super::check_permutation(deck)?;
    let mut d = deck.to_vec();
    let mut sizes = Vec::new();
    while d[0] != 1 {
        let k = d[0] as usize;
        sizes.push(d[0]);
        d[..k].reverse();
    }
    let flips = sizes.len() as u64;
    sizes.reverse();
    sizes.push(1);
    Ok((sizes, flips))
}

/// One level of the explicit DFS stack: a branch node.
#[derive(Clone, Copy)]
struct Level<D> {
    deck: D,
    flips: u32,
    unused: u64,
    /// Children still to try (unconstrained by resume or limit).
    todo: u64,
    /// The child on the limit path, tried last (0 = none).
    lim: u8,
}

/// Legal un-flips of a SIMD deck (bit k = un-flip position k, k >= 2).
#[inline(always)]
fn legal<D: Deck>(deck: D, unused: u64, positions: u64) -> u64 {
    ((deck.matches() | (deck.unknowns() & (unused >> 1))) << 1) & positions
}

/// The children worth trying at a node with legal un-flips `moves`: those, and the leaf when
/// the flips reach the goal (and, when skipping fixed points, no known card k >= 2 is at
/// position k).
#[inline(always)]
fn children<D: Deck>(deck: D, moves: u64, flips: u32, need: u32, skip: bool, pos: u64) -> u64 {
    let fixed = skip && (deck.matches() << 1) & pos != 0;
    let leaf = if flips >= need && !fixed { 2 } else { 0 };
    moves | leaf
}

/// The child un-flipping position `k` (k >= 2) of a node with `flips` flips: its deck, unused
/// values and children, or `None` when the bound prunes it (see the module docs: the child's
/// highest legal position s caps what its leaves reach at `flips + 1 + f(s)`, one less when the
/// un-flip dropped s below k and another card of positions 2..=s can never reach the top).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn branch<D: Deck>(
    deck: D,
    k: u32,
    flips: u32,
    unused: u64,
    need: u32,
    skip: bool,
    tail: &[u32; 64],
    pos: u64,
) -> Option<(D, u64, u64)> {
    let x = deck.flip(k).set_top(k);
    let unused = unused & !bit(k);
    let moves = legal(x, unused, pos);
    let s = top_bit(moves);
    let reach = flips + 1 + tail[s as usize & 63];
    if reach < need || (reach == need && s < k && s >= 2 && second_inert(x, s, unused)) {
        return None;
    }
    Some((x, unused, children(x, moves, flips + 1, need, skip, pos)))
}

/// Whether positions 2..=s hold a card that can never reach the top again while the game stays
/// within the top s positions: card 1, a known card above s, or an unknown card beyond the
/// number of unused values 2..=s.
#[cold]
#[inline(never)]
fn second_inert<D: Deck>(x: D, s: u32, unused: u64) -> bool {
    let lanes = below(s) & !1;
    if x.inert(s) & lanes != 0 {
        return true;
    }
    (x.unknowns() & lanes).count_ones() > (unused & below(s + 1)).count_ones()
}

/// The state of one backward search call (mirrors the forward `Run`).
pub(super) struct Run<'a> {
    pub(super) n: usize,
    pub(super) tail: [u32; 64],
    pub(super) need: u32,
    pub(super) discover: bool,
    pub(super) skip: bool,
    pub(super) obs: &'a dyn Observer,
    pub(super) resume: Vec<u8>,
    pub(super) limit: Vec<u8>,
    pub(super) limit_on: bool,
    pub(super) interval: u64,
    pub(super) stats: SearchStats,
    pub(super) path: [u8; BSTACK],
}

impl Run<'_> {
    pub(super) fn start(
        &mut self,
        kernel: super::Kernel,
        root: &(Node, bool),
        prefix: &[u8],
        resume: Option<&[u8]>,
        limit: Option<&[u8]>,
    ) -> Result<SearchEnd, String> {
        let (node, is_leaf) = root;
        let mut resume_on = false;
        if let Some(r) = resume {
            match relation(prefix, r) {
                Rel::Before => return Ok(SearchEnd::Exhausted),
                Rel::Contains => {
                    resume_on = r.len() > prefix.len();
                    self.resume = r.to_vec();
                }
                Rel::After => {}
            }
        }
        if let Some(l) = limit {
            match relation(prefix, l) {
                Rel::Before => {}
                Rel::Contains => {
                    if l.len() == prefix.len() {
                        return Ok(SearchEnd::Exhausted);
                    }
                    self.limit_on = true;
                    self.limit = l.to_vec();
                }
                Rel::After => return Ok(SearchEnd::Exhausted),
            }
        }
        if node.cap < self.need {
            return Ok(SearchEnd::Exhausted);
        }
        if *is_leaf {
            if !resume_on && node.flips >= self.need {
                self.report(prefix.len(), node.flips)?;
            }
            return Ok(SearchEnd::Exhausted);
        }
        match kernel {
            #[cfg(target_arch = "x86_64")]
            super::Kernel::Narrow if simd::available() && self.n <= 16 => {
                // SAFETY: SSSE3 was detected at run time.
                unsafe { self.go_narrow(node, prefix.len(), resume_on) }
            }
            #[cfg(target_arch = "x86_64")]
            super::Kernel::Wide if simd::available() && self.n <= 32 => {
                // SAFETY: SSSE3 was detected at run time.
                unsafe { self.go_wide(node, prefix.len(), resume_on) }
            }
            _ => self.go::<simd::Bytes>(node, prefix.len(), resume_on),
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "ssse3")]
    unsafe fn go_narrow(
        &mut self,
        node: &Node,
        base: usize,
        resume_on: bool,
    ) -> Result<SearchEnd, String> {
        self.go::<simd::Narrow>(node, base, resume_on)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "ssse3")]
    unsafe fn go_wide(
        &mut self,
        node: &Node,
        base: usize,
        resume_on: bool,
    ) -> Result<SearchEnd, String> {
        self.go::<simd::Wide>(node, base, resume_on)
    }

    /// Positions 2..=n as a bit mask.
    fn positions(&self) -> u64 {
        below(self.n as u32 + 1) & !3
    }

    #[inline(always)]
    fn apply_limit<D: Deck>(&self, lvl: &mut Level<D>, d: usize) {
        let Some(&l) = self.limit.get(d) else {
            return;
        };
        let full = lvl.todo;
        lvl.todo &= below(l as u32);
        lvl.lim = if self.limit.len() > d + 1 && full & bit(l as u32) != 0 {
            l
        } else {
            0
        };
    }

    /// The child `v` of `lvl` as a new level (None: a leaf or pruned), for the cold paths.
    fn enter<D: Deck>(&self, lvl: &Level<D>, v: u32, need: u32) -> Option<Level<D>> {
        if v == 1 {
            return None;
        }
        let pos = self.positions();
        let (x, unused, todo) = branch(
            lvl.deck, v, lvl.flips, lvl.unused, need, self.skip, &self.tail, pos,
        )?;
        Some(Level {
            deck: x,
            flips: lvl.flips + 1,
            unused,
            todo,
            lim: 0,
        })
    }

    /// The depth-first search from the unit's root `node` at depth `base`.
    #[inline(always)]
    fn go<D: Deck>(
        &mut self,
        node: &Node,
        base: usize,
        resume_on: bool,
    ) -> Result<SearchEnd, String> {
        let tail = self.tail;
        let skip = self.skip;
        let pos = self.positions();
        let mut need = self.need;
        let blank = Level {
            deck: D::load(&[0; 32]),
            flips: 0,
            unused: 0,
            todo: 0,
            lim: 0,
        };
        let mut levels = [blank; BSTACK];
        let deck = D::load(&node.deck);
        let mut d = base;
        levels[d & (BSTACK - 1)] = Level {
            deck,
            flips: node.flips,
            unused: node.unused,
            todo: children(
                deck,
                legal(deck, node.unused, pos),
                node.flips,
                need,
                skip,
                pos,
            ),
            lim: 0,
        };
        if self.limit_on {
            let mut lvl = levels[d & (BSTACK - 1)];
            self.apply_limit(&mut lvl, d);
            levels[d & (BSTACK - 1)] = lvl;
        }
        let mut nodes = 0u64;

        if resume_on {
            let mut on_limit = self.limit_on;
            while d < self.resume.len() {
                let r = self.resume[d] as u32;
                let lvl = &mut levels[d & (BSTACK - 1)];
                let valid = (lvl.todo & bit(r)) != 0 || (lvl.lim != 0 && lvl.lim as u32 == r);
                let both = on_limit && self.limit.get(d).is_some_and(|&l| l as u32 == r);
                lvl.todo &= above(r);
                if lvl.lim != 0 && lvl.lim as u32 <= r {
                    lvl.lim = 0;
                }
                if !valid {
                    break;
                }
                self.path[d & (BSTACK - 1)] = r as u8;
                nodes += 1;
                let lvl = levels[d & (BSTACK - 1)];
                if r == 1 {
                    if self.resume.len() == d + 1 && lvl.flips >= need {
                        self.stats.nodes = nodes;
                        self.report(d + 1, lvl.flips)?;
                        need = self.need;
                    }
                    break;
                }
                match self.enter(&lvl, r, need) {
                    None => break,
                    Some(mut next) => {
                        d += 1;
                        on_limit = both;
                        if both {
                            self.apply_limit(&mut next, d);
                        }
                        levels[d & (BSTACK - 1)] = next;
                    }
                }
            }
        }

        let interval = self.interval;
        let mut next_check = nodes + interval;
        let mut todo = levels[d & (BSTACK - 1)].todo;
        let mut path = self.path;
        loop {
            if todo == 0 {
                let slot = &mut levels[d & (BSTACK - 1)];
                if slot.lim != 0 {
                    slot.todo = 0;
                    nodes += 1;
                    self.path = path;
                    d = self.enter_limit_child(&mut levels, d, need)?;
                    path = self.path;
                    need = self.need;
                } else if d == base {
                    break;
                } else {
                    d -= 1;
                }
                todo = levels[d & (BSTACK - 1)].todo;
                continue;
            }
            let v = todo.trailing_zeros();
            todo &= todo - 1;
            path[d & (BSTACK - 1)] = v as u8;
            nodes += 1;
            if nodes >= next_check {
                next_check = nodes + interval;
                self.stats.nodes = nodes;
                levels[d & (BSTACK - 1)].todo = todo;
                self.path = path;
                if self.periodic(&mut levels, base, d)? {
                    return Ok(SearchEnd::Stopped);
                }
                todo = levels[d & (BSTACK - 1)].todo;
                need = self.need;
            }
            let lvl = &levels[d & (BSTACK - 1)];
            let flips = lvl.flips;
            if v == 1 {
                if flips >= need {
                    self.stats.nodes = nodes;
                    self.path = path;
                    self.report(d + 1, flips)?;
                    need = self.need;
                }
                continue;
            }
            let Some((x, unused, next_todo)) =
                branch(lvl.deck, v, flips, lvl.unused, need, skip, &tail, pos)
            else {
                continue;
            };
            levels[d & (BSTACK - 1)].todo = todo;
            let c = flips + 1;
            todo = next_todo;
            d += 1;
            let next = &mut levels[d & (BSTACK - 1)];
            next.deck = x;
            next.flips = c;
            next.unused = unused;
            next.todo = todo;
        }
        self.stats.nodes = nodes;
        Ok(SearchEnd::Exhausted)
    }

    #[inline(never)]
    fn enter_limit_child<D: Deck>(
        &mut self,
        levels: &mut [Level<D>; BSTACK],
        d: usize,
        need: u32,
    ) -> Result<usize, String> {
        let slot = &mut levels[d & (BSTACK - 1)];
        let v = slot.lim as u32;
        slot.lim = 0;
        let lvl = *slot;
        self.path[d & (BSTACK - 1)] = v as u8;
        if v == 1 {
            if lvl.flips >= need {
                self.report(d + 1, lvl.flips)?;
            }
            return Ok(d);
        }
        match self.enter(&lvl, v, need) {
            None => Ok(d),
            Some(mut next) => {
                self.apply_limit(&mut next, d + 1);
                levels[(d + 1) & (BSTACK - 1)] = next;
                Ok(d + 1)
            }
        }
    }

    #[inline(never)]
    fn periodic<D: Deck>(
        &mut self,
        levels: &mut [Level<D>],
        base: usize,
        d: usize,
    ) -> Result<bool, String> {
        self.obs.progress(self.stats.nodes);
        self.obs.checkpoint(&self.path[..=d]);
        if self.obs.should_stop() {
            return Ok(true);
        }
        if self.discover {
            if let Some(b) = self.obs.bound() {
                self.need = self.need.max(b.saturating_add(1));
            }
        }
        if self.obs.should_split() {
            self.donate(levels, base, d);
        }
        Ok(false)
    }

    /// Donates the untried children of the shallowest level that has any.
    #[inline(never)]
    fn donate<D: Deck>(&mut self, levels: &mut [Level<D>], base: usize, d: usize) {
        let need = self.need;
        for (i, slot) in levels.iter_mut().enumerate().take(d + 1).skip(base) {
            let lvl = *slot;
            if lvl.todo == 0 && lvl.lim == 0 {
                continue;
            }
            slot.todo = 0;
            slot.lim = 0;
            let mut out: Vec<Vec<u8>> = Vec::new();
            let mut prefix = self.path[..i].to_vec();
            self.collect(&lvl, &prefix, need, &mut out);
            if lvl.lim != 0 {
                let mut depth = i;
                let mut w = lvl.lim as u32;
                let mut cur = lvl;
                loop {
                    prefix.truncate(depth);
                    prefix.push(w as u8);
                    if w == 1 {
                        if cur.flips >= need {
                            out.push(prefix.clone());
                        }
                        break;
                    }
                    match self.enter(&cur, w, need) {
                        None => break,
                        Some(mut next) => {
                            depth += 1;
                            self.apply_limit(&mut next, depth);
                            self.collect(&next, &prefix, need, &mut out);
                            if next.lim == 0 {
                                break;
                            }
                            w = next.lim as u32;
                            cur = next;
                        }
                    }
                }
            }
            if let Some(first) = out.first().cloned() {
                self.obs.donate(out, first);
                return;
            }
        }
    }

    /// Appends `prefix + [w]` for every child w in `lvl.todo` with a non-empty subtree.
    fn collect<D: Deck>(&self, lvl: &Level<D>, prefix: &[u8], need: u32, out: &mut Vec<Vec<u8>>) {
        let mut todo = lvl.todo;
        while todo != 0 {
            let w = todo.trailing_zeros();
            todo &= todo - 1;
            let keep = if w == 1 {
                lvl.flips >= need
            } else {
                self.enter(lvl, w, need).is_some()
            };
            if keep {
                let mut p = prefix.to_vec();
                p.push(w as u8);
                out.push(p);
            }
        }
    }

    /// Reports the leaf `path[..len]` (which ends with 1) with `flips` flips.
    #[cold]
    #[inline(never)]
    fn report(&mut self, len: usize, flips: u32) -> Result<(), String> {
        let path = self.path[..len.min(BSTACK)].to_vec();
        let (leaf, _) = replay(self.n, &self.tail, &path)?;
        self.stats.leaves += 1;
        let obs = self.obs;
        if self.discover {
            self.stats.decks += leaf.fillings(false, false, |deck| obs.found(deck, flips));
            if let Some(b) = self.obs.bound() {
                self.need = self.need.max(b.saturating_add(1));
            }
            return Ok(());
        }
        let free = leaf.unused.count_ones() as u64;
        let count: u64 = (1..=free).product();
        if count > MAX_LEAF_DECKS {
            return Err(format!(
                "leaf {path:?} ({flips} flips) stands for {count} decks, more than {MAX_LEAF_DECKS}: \
                 the proof target is too low"
            ));
        }
        self.stats.decks += leaf.fillings(true, self.skip, |deck| obs.found(deck, flips));
        Ok(())
    }
}
