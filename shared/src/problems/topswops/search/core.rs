//! The depth-first search both directions share: an explicit stack of levels, unit ranges
//! (resume point and limit), periodic progress, checkpoints, stops and donation, and the
//! reporting of leaves (see the parent module's docs, "Ranges, checkpoints, donation"). A
//! direction supplies its tree through [`Tree`]: how a node is held on the hot path, which
//! children are worth trying, and how a child is entered.

use super::bits::{above, below, bit};
use super::range::{relation, Rel};
use super::simd::{self, Deck};
use super::tree::{replay, PlainNode};
use super::{Kernel, Observer, SearchEnd, SearchStats, MAX_LEAF_DECKS};

/// One direction's search tree as the hot path sees it.
pub(super) trait Tree: Copy {
    /// The same tree's nodes in plain bytes (roots, replays, leaves).
    type Plain: PlainNode;
    /// What a node of this tree tracks besides the deck, flips and unused values.
    type Extra: Copy;
    /// The extra state of a plain node.
    fn extra(plain: &Self::Plain) -> Self::Extra;
    /// The children worth trying at `node` for a goal of `need` flips (bit v = child v; the
    /// leaf is child 1). `SKIP`: decks with a fixed point are not wanted.
    fn children<D: Deck, const SKIP: bool>(&self, node: &Node<D, Self::Extra>, need: u32) -> u64;
    /// The branch child `v` (>= 2, one of the node's children) with its children worth
    /// trying, or `None` when no leaf below it can meet `need` — the hot path.
    fn branch<D: Deck, const SKIP: bool>(
        &self,
        node: &Node<D, Self::Extra>,
        v: u32,
        need: u32,
    ) -> Option<(Node<D, Self::Extra>, u64)>;
}

/// A branch node on the hot path, its deck held with kernel `D`.
#[derive(Clone, Copy)]
pub(super) struct Node<D, X> {
    pub(super) deck: D,
    /// The flips every deck of the node takes so far.
    pub(super) flips: u32,
    /// Values no known card has (bit v).
    pub(super) unused: u64,
    /// What the direction tracks besides.
    pub(super) extra: X,
}

/// The hot-path node of tree `T` with kernel `D`.
type HotNode<T, D> = Node<D, <T as Tree>::Extra>;

/// One level of the explicit DFS stack: a branch node.
#[derive(Clone, Copy)]
struct Level<N> {
    node: N,
    /// Children still to try (unconstrained by resume or limit).
    todo: u64,
    /// The child on the limit path, tried last (0 = none).
    lim: u8,
}

/// One search call's settings: the deck size, bounds and kernel, what it looks for and how
/// often it checks in.
pub(super) struct Goal<'a> {
    /// The deck size.
    pub(super) n: usize,
    /// The tail bounds (`tail[m]` bounds f(m)).
    pub(super) tail: &'a [u32; 64],
    /// The kernel to run.
    pub(super) kernel: Kernel,
    /// Leaves count from this many flips (rises in discovery mode).
    pub(super) need: u32,
    /// Discovery mode: one deck per leaf, and `need` follows the observer's bound.
    pub(super) discover: bool,
    /// Decks with a fixed point are not wanted.
    pub(super) skip: bool,
    /// Nodes between two periodic checks.
    pub(super) interval: u64,
    /// The caller.
    pub(super) obs: &'a dyn Observer,
}

/// Searches the unit `prefix` of the tree `tree` in the range
/// `[resume, limit)`, with a stack of `S` levels (a power of two above the longest path), and
/// leaves its counters in `stats` (reported to the observer as the last progress). Fails when
/// `prefix` is not a node of the tree, and when a proof-mode leaf stands for more than
/// [`MAX_LEAF_DECKS`] decks.
pub(super) fn search<T: Tree, const S: usize>(
    tree: T,
    prefix: &[u8],
    resume: Option<&[u8]>,
    limit: Option<&[u8]>,
    goal: Goal<'_>,
    stats: &mut SearchStats,
) -> Result<SearchEnd, String> {
    const { assert!(S.is_power_of_two()) };
    let (n, tail) = (goal.n, goal.tail);
    let root = replay::<T::Plain>(n, tail, prefix)?;
    if prefix.len() >= S {
        return Err(format!(
            "prefix {prefix:?} is deeper than the search supports"
        ));
    }
    let mut run = Run::<T, S> {
        tree,
        n,
        tail: *tail,
        need: goal.need,
        discover: goal.discover,
        skip: goal.skip,
        obs: goal.obs,
        resume: Vec::new(),
        limit: Vec::new(),
        limit_on: false,
        interval: goal.interval,
        stats: SearchStats::default(),
        path: [0; S],
    };
    run.path[..prefix.len()].copy_from_slice(prefix);
    let result = run.start(goal.kernel, &root, prefix, resume, limit);
    *stats = run.stats;
    goal.obs.progress(run.stats.nodes);
    result
}

/// The state of one search call.
struct Run<'a, T, const S: usize> {
    tree: T,
    n: usize,
    /// The tail bounds (for replays).
    tail: [u32; 64],
    need: u32,
    discover: bool,
    skip: bool,
    obs: &'a dyn Observer,
    resume: Vec<u8>,
    limit: Vec<u8>,
    limit_on: bool,
    interval: u64,
    stats: SearchStats,
    /// The current path (absolute: prefix first).
    path: [u8; S],
}

impl<T: Tree, const S: usize> Run<'_, T, S> {
    /// Masks a depth into the stack (the stack is deeper than any path).
    const MASK: usize = S - 1;

    fn start(
        &mut self,
        kernel: Kernel,
        root: &(T::Plain, bool),
        prefix: &[u8],
        resume: Option<&[u8]>,
        limit: Option<&[u8]>,
    ) -> Result<SearchEnd, String> {
        let (node, is_leaf) = root;
        // Where the unit stands relative to the range.
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
                        return Ok(SearchEnd::Exhausted); // the unit's root is the limit
                    }
                    self.limit_on = true;
                    self.limit = l.to_vec();
                }
                Rel::After => return Ok(SearchEnd::Exhausted),
            }
        }
        if node.hopeless(self.need, self.skip) {
            return Ok(SearchEnd::Exhausted);
        }
        if *is_leaf {
            // A one-leaf unit: in range unless the resume point lies strictly inside it.
            if !resume_on && node.cards().flips >= self.need {
                self.report(prefix.len(), node.cards().flips)?;
            }
            return Ok(SearchEnd::Exhausted);
        }
        match kernel {
            #[cfg(target_arch = "x86_64")]
            Kernel::Narrow if simd::available() && self.n <= 16 => {
                // SAFETY: SSSE3 was detected at run time.
                unsafe { self.go_ssse3::<simd::Narrow>(node, prefix.len(), resume_on) }
            }
            #[cfg(target_arch = "x86_64")]
            Kernel::Wide if simd::available() && self.n <= 32 => {
                // SAFETY: SSSE3 was detected at run time.
                unsafe { self.go_ssse3::<simd::Wide>(node, prefix.len(), resume_on) }
            }
            _ if self.skip => self.go::<simd::Bytes, true>(node, prefix.len(), resume_on),
            _ => self.go::<simd::Bytes, false>(node, prefix.len(), resume_on),
        }
    }

    /// The search with an SSSE3 kernel, compiled with SSSE3 enabled so that the kernel's
    /// shuffles are inlined into the loop.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "ssse3")]
    unsafe fn go_ssse3<D: Deck>(
        &mut self,
        node: &T::Plain,
        base: usize,
        resume_on: bool,
    ) -> Result<SearchEnd, String> {
        if self.skip {
            self.go::<D, true>(node, base, resume_on)
        } else {
            self.go::<D, false>(node, base, resume_on)
        }
    }

    /// Restricts a node on the limit path (depth `d`) to the children below the limit.
    #[inline(always)]
    fn apply_limit<N>(&self, lvl: &mut Level<N>, d: usize) {
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

    /// The branch child `v` (>= 2) of `lvl` as a new level (`None`: pruned), for the cold
    /// paths.
    #[inline(always)]
    fn enter<D: Deck, const SKIP: bool>(
        &self,
        lvl: &Level<HotNode<T, D>>,
        v: u32,
        need: u32,
    ) -> Option<Level<HotNode<T, D>>> {
        let (node, todo) = self.tree.branch::<D, SKIP>(&lvl.node, v, need)?;
        Some(Level { node, todo, lim: 0 })
    }

    /// The depth-first search proper, from the unit's root `node` at depth `base`
    /// (`SKIP` is `self.skip`, made a constant so each case gets its own loop).
    #[inline(always)]
    fn go<D: Deck, const SKIP: bool>(
        &mut self,
        root: &T::Plain,
        base: usize,
        resume_on: bool,
    ) -> Result<SearchEnd, String> {
        let tree = self.tree;
        let mut need = self.need;
        let cards = root.cards();
        let node = Node {
            deck: D::load(&cards.deck),
            flips: cards.flips,
            unused: cards.unused,
            extra: T::extra(root),
        };
        let first = Level {
            node,
            todo: tree.children::<D, SKIP>(&node, need),
            lim: 0,
        };
        // Slots above the current depth have `lim` 0 (see below); their nodes are overwritten
        // before they are read.
        let mut levels = [Level { todo: 0, ..first }; S];
        let mut d = base;
        levels[d & Self::MASK] = first;
        if self.limit_on {
            let mut lvl = levels[d & Self::MASK];
            self.apply_limit(&mut lvl, d);
            levels[d & Self::MASK] = lvl;
        }
        let mut nodes = 0u64;

        // Descend along the resume path: children before it are skipped, the ones after it
        // are left in `todo`, the one on it is entered now.
        if resume_on {
            // Whether the node at depth d is on the limit path too.
            let mut on_limit = self.limit_on;
            while d < self.resume.len() {
                let r = self.resume[d] as u32;
                let lvl = &mut levels[d & Self::MASK];
                let valid = (lvl.todo & bit(r)) != 0 || (lvl.lim != 0 && lvl.lim as u32 == r);
                let both = on_limit && self.limit.get(d).is_some_and(|&l| l as u32 == r);
                lvl.todo &= above(r);
                if lvl.lim != 0 && lvl.lim as u32 <= r {
                    lvl.lim = 0;
                }
                if !valid {
                    break;
                }
                self.path[d & Self::MASK] = r as u8;
                nodes += 1;
                let lvl = levels[d & Self::MASK];
                if r == 1 {
                    let flips = lvl.node.flips;
                    if self.resume.len() == d + 1 && flips >= need {
                        self.stats.nodes = nodes;
                        self.report(d + 1, flips)?;
                        need = self.need;
                    }
                    break;
                }
                let Some(mut next) = self.enter::<D, SKIP>(&lvl, r, need) else {
                    break;
                };
                d += 1;
                on_limit = both;
                if both {
                    self.apply_limit(&mut next, d);
                }
                levels[d & Self::MASK] = next;
            }
        }

        let interval = self.interval;
        let mut next_check = nodes + interval;
        // The current level's `todo` lives in a register; its slot is written back before
        // descending (and before the periodic checks, which may donate from it).
        let mut todo = levels[d & Self::MASK].todo;
        // The path in a local array (kept in sync with `self.path` around the cold calls).
        let mut path = self.path;
        loop {
            if todo == 0 {
                let slot = &mut levels[d & Self::MASK];
                if slot.lim != 0 {
                    // The child on the limit path (tried last), off the hot path. The slot's
                    // `todo` is stale: clear it before going deeper.
                    slot.todo = 0;
                    nodes += 1;
                    self.path = path;
                    d = self.enter_limit_child::<D, SKIP>(&mut levels, d, need)?;
                    path = self.path;
                    need = self.need;
                } else if d == base {
                    break;
                } else {
                    d -= 1;
                }
                todo = levels[d & Self::MASK].todo;
                continue;
            }
            let v = todo.trailing_zeros();
            todo &= todo - 1;
            path[d & Self::MASK] = v as u8;
            nodes += 1;
            if nodes >= next_check {
                next_check = nodes + interval;
                self.stats.nodes = nodes;
                levels[d & Self::MASK].todo = todo;
                self.path = path;
                if self.periodic::<D, SKIP>(&mut levels, base, d)? {
                    return Ok(SearchEnd::Stopped);
                }
                todo = levels[d & Self::MASK].todo;
                need = self.need;
            }
            let lvl = &levels[d & Self::MASK];
            if v == 1 {
                let flips = lvl.node.flips;
                if flips >= need {
                    self.stats.nodes = nodes;
                    self.path = path;
                    self.report(d + 1, flips)?;
                    need = self.need;
                }
                continue;
            }
            let Some((child, child_todo)) = tree.branch::<D, SKIP>(&lvl.node, v, need) else {
                continue;
            };
            levels[d & Self::MASK].todo = todo;
            todo = child_todo;
            d += 1;
            // `lim` is left alone: it is 0 in every slot above the current depth (a level is
            // only left once its limit child was entered or donated).
            let next = &mut levels[d & Self::MASK];
            next.node = child;
            next.todo = todo;
        }
        self.stats.nodes = nodes;
        Ok(SearchEnd::Exhausted)
    }

    /// Enters the child on the limit path of the node at depth `d` (its `lim`), which the
    /// caller has counted; returns the new depth.
    #[inline(never)]
    fn enter_limit_child<D: Deck, const SKIP: bool>(
        &mut self,
        levels: &mut [Level<HotNode<T, D>>; S],
        d: usize,
        need: u32,
    ) -> Result<usize, String> {
        let slot = &mut levels[d & Self::MASK];
        let v = slot.lim as u32;
        slot.lim = 0;
        let lvl = *slot;
        self.path[d & Self::MASK] = v as u8;
        if v == 1 {
            let flips = lvl.node.flips;
            if flips >= need {
                self.report(d + 1, flips)?;
            }
            return Ok(d);
        }
        match self.enter::<D, SKIP>(&lvl, v, need) {
            None => Ok(d),
            Some(mut next) => {
                self.apply_limit(&mut next, d + 1);
                levels[(d + 1) & Self::MASK] = next;
                Ok(d + 1)
            }
        }
    }

    /// Progress, checkpoint, stop and split checks; true means stop. The child `path[d]` of
    /// the node at depth `d` is about to be entered.
    #[inline(never)]
    fn periodic<D: Deck, const SKIP: bool>(
        &mut self,
        levels: &mut [Level<HotNode<T, D>>],
        base: usize,
        d: usize,
    ) -> Result<bool, String> {
        self.obs.progress(self.stats.nodes);
        self.obs.checkpoint(&self.path[..=d]);
        if self.obs.should_stop() {
            return Ok(true);
        }
        self.refresh_need();
        if self.obs.should_split() {
            self.donate::<D, SKIP>(levels, base, d);
        }
        Ok(false)
    }

    /// In discovery mode, raises the goal past the observer's bound.
    fn refresh_need(&mut self) {
        if self.discover {
            if let Some(b) = self.obs.bound() {
                self.need = self.need.max(b.saturating_add(1));
            }
        }
    }

    /// Donates the untried children of the shallowest level that has any (see the parent
    /// module's docs).
    #[inline(never)]
    fn donate<D: Deck, const SKIP: bool>(
        &mut self,
        levels: &mut [Level<HotNode<T, D>>],
        base: usize,
        d: usize,
    ) {
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
            self.collect::<D, SKIP>(&lvl, &prefix, need, &mut out);
            if lvl.lim != 0 {
                // The child on the limit path: donate its full subtrees below the limit.
                let mut depth = i;
                let mut w = lvl.lim as u32;
                let mut cur = lvl;
                loop {
                    prefix.truncate(depth);
                    prefix.push(w as u8);
                    if w == 1 {
                        if cur.node.flips >= need {
                            out.push(prefix.clone());
                        }
                        break;
                    }
                    let Some(mut next) = self.enter::<D, SKIP>(&cur, w, need) else {
                        break;
                    };
                    depth += 1;
                    self.apply_limit(&mut next, depth);
                    self.collect::<D, SKIP>(&next, &prefix, need, &mut out);
                    if next.lim == 0 {
                        break;
                    }
                    w = next.lim as u32;
                    cur = next;
                }
            }
            if let Some(first) = out.first().cloned() {
                self.obs.donate(out, first);
                return;
            }
        }
    }

    /// Appends `prefix + [w]` for every child w in `lvl.todo` with a non-empty subtree.
    fn collect<D: Deck, const SKIP: bool>(
        &self,
        lvl: &Level<HotNode<T, D>>,
        prefix: &[u8],
        need: u32,
        out: &mut Vec<Vec<u8>>,
    ) {
        let mut todo = lvl.todo;
        while todo != 0 {
            let w = todo.trailing_zeros();
            todo &= todo - 1;
            let keep = if w == 1 {
                lvl.node.flips >= need
            } else {
                self.enter::<D, SKIP>(lvl, w, need).is_some()
            };
            if keep {
                let mut p = prefix.to_vec();
                p.push(w as u8);
                out.push(p);
            }
        }
    }

    /// Reports the leaf `path[..len]` (which ends with the leaf choice 1) with `flips` flips.
    #[cold]
    #[inline(never)]
    fn report(&mut self, len: usize, flips: u32) -> Result<(), String> {
        let path = self.path[..len].to_vec();
        let (leaf, _) = replay::<T::Plain>(self.n, &self.tail, &path)?;
        let cards = leaf.leaf_cards();
        self.stats.leaves += 1;
        let obs = self.obs;
        if self.discover {
            self.stats.decks += cards.fill(false, false, |deck| obs.found(deck, flips));
            self.refresh_need();
            return Ok(());
        }
        let count = cards.count();
        if count > MAX_LEAF_DECKS {
            return Err(format!(
                "leaf {path:?} ({flips} flips) stands for {count} decks, more than {MAX_LEAF_DECKS}: \
                 the proof target is too low"
            ));
        }
        self.stats.decks += cards.fill(true, self.skip, |deck| obs.found(deck, flips));
        Ok(())
    }
}
