//! Exact Topswops search: Knuth's forward search over decks of unknown cards, or Pepperdine's
//! backward search from the last deck, with pruning, checkpoints (resume), lexicographic upper
//! limits and stack-splitting donation. Everything
//! here is single-threaded per call; the caller runs many units concurrently.
//!
//! # The game
//!
//! A deck holds the cards 1..=n, top card first. While the top card is k > 1, the top k cards
//! are reversed (one *flip*). f(n) is the largest number of flips over all n! decks
//! (OEIS A000375). [`count_flips`] plays a concrete deck by plain replay: it is the
//! independent verifier of everything the search reports.
//!
//! # The search tree ("unique heads")
//!
//! The search starts from a deck of n *unknown* cards, each labelled by its original
//! position (its *origin*). It plays the game forward: while the top card is known (a value
//! k >= 2) it flips the top k cards. When the top card is unknown the search *branches*: it
//! assigns the top card a value v from the values not used yet. v = 1 ends the game (a
//! *leaf*); v >= 2 assigns the card, flips the top v cards and carries on. Card 1 is therefore
//! never known before the end, and every game ends with a branch choosing 1.
//!
//! A node of the tree is named by its *path*: the values chosen at the branch points on the
//! way to it, i.e. the sequence of *unique heads* (the values of the cards the first time they
//! reach the top). Internal nodes' paths contain only values >= 2; a leaf's path is its
//! parent's path followed by 1. The search visits children in increasing value, so depth-first
//! order is the lexicographic order of paths, where a proper prefix sorts before its
//! extensions. A subtree is the set of paths extending its root's path; [`leaf_path`] gives the
//! leaf path of a concrete deck.
//!
//! All decks of one leaf share one game: the assigned origins get their values, the others
//! (cards that never reached the top) get the remaining values in any order, and every such
//! filling takes the same number of flips. In [`Mode::Prove`] every concrete deck of a
//! qualifying leaf is reported (at most [`MAX_LEAF_DECKS`] per leaf, else the search fails
//! with an error: a target that low enumerates a large part of all n! decks anyway); in
//! [`Mode::Discover`] one representative deck per qualifying leaf is reported (the unknown
//! cards filled with the remaining values in increasing order).
//!
//! # Pruning
//!
//! * **Frozen tail.** When positions m+1..n hold exactly the cards m+1..n (in any order), the
//!   top card is at most m from then on, those positions never move again, and at most f(m)
//!   more flips can happen. [`Searcher::new`] takes proven bounds on f(m) for m < n. In the
//!   forward search the tail can only grow when the card equal to the current boundary m is
//!   flipped (it lands on position m), so the boundary is re-computed only after such flips;
//!   the search then prunes when `flips + bound(m)` cannot reach the goal. Bounds are used as
//!   the suffix minimum (f is non-decreasing: a card n+1 at the bottom of an n-deck is inert).
//! * **Fixed points.** If a deck D has card k >= 2 at position k, the deck obtained by
//!   reversing D's top k cards has k on top and flips straight to D: it takes one flip more.
//!   So a deck with such a fixed point is never optimal, and the longest decks are among the
//!   others. [`Mode::Discover`] always skips fixed points (a branch that assigns v to origin
//!   v): the longer deck may lie in another unit, so one unit's best can miss a deck that is
//!   not a campaign maximum, never the maximum itself. [`Mode::Prove`] skips them when
//!   [`Searcher::set_skip_fixed_points`] is on. Then a proof
//!   search reports exactly the decks *without* fixed points that reach the target, and that
//!   is every deck reaching the target as long as no reported deck exceeds it (a deck with a
//!   fixed point reaching the target implies one without, exceeding it).
//! * **Useless children.** A branch's 1-child (a leaf) is only tried when the flips so far
//!   reach the goal, and its m-child (card m surfacing, which sends the boundary to m - 1 or
//!   below) only when `flips + 1 + bound(m - 1)` does.
//!
//! # Backward search ([`Direction::Backward`])
//!
//! Pepperdine's method runs the game in reverse from its last deck `1 ? ... ?` (card 1 on
//! top, the other cards unknown, now labelled by position). Un-flipping position k (k >= 2)
//! is possible when it holds card k, or an unknown card and the value k is unused (the card
//! becomes k): the top k cards are reversed and card k is on top, and every deck of the new
//! node takes one flip more (its top card k is flipped, back to the parent). So a node's
//! *depth* is the flip count of all its decks (the unknown cards never reach the top, any
//! filling plays the same game). Paths are the un-flipped positions, last flip first; the
//! child 1 is the leaf "this deck is the start" (tried first, and only when the depth reaches
//! the goal), so paths end with 1 and depth-first order is again the lexicographic order:
//! ranges, checkpoints and donation work exactly as above. [`Searcher::set_direction`]
//! chooses the tree; the forward one is the default.
//!
//! **Frozen positions.** Let s be the highest position with a legal un-flip. A position above
//! s holds a known card other than its own number, or an unknown card whose number is used:
//! un-flips at or below s never change that, so positions above s never move again. Every
//! descendant D'' then reaches the node D with flips of at most s cards; the cards of the top
//! s positions that reach the top meanwhile have distinct values in 2..=s, and giving the
//! others the remaining values of 1..=s makes an s-card deck that plays the same flips: at
//! most f(s) of them. So the node's leaves reach at most `depth + f(s)` flips, and the search
//! prunes when that cannot meet the goal. The bound only changes when s drops, i.e. after
//! un-flipping position s (the forward bound's "card m flipped"), where it is checked. Then
//! the new top card k > s never reaches the top within the segment either; if positions 2..=s
//! hold another such card (card 1, a known card above s, or more unknown cards than unused
//! values 2..=s), the relabelling can give the top card a value >= 2, the s-card game makes one
//! more flip after the segment, and the bound is `depth + f(s) - 1`.
//!
//! **Depth.** Card n is un-flipped at most once (position n must hold card n, and only
//! un-flipping n itself could put it back). Before, every un-flip is at most n - 1 (at most
//! f(n-1) of them, by the argument above); after, at most f(n-1) more: paths are at most
//! 2 f(n-1) + 2 long, and the search refuses bounds that would allow more than its stack.
//!
//! # Which direction
//!
//! The forward bound after card n surfaces is `flips + f(m)` with m <= n - 1, so the forward
//! search gains most when the goal is far above f(n-1); until card n surfaces it has no bound.
//! The backward search has no bound until position n is un-flipped (its part of the tree that
//! grows with n alone), then `depth + f(s)`. Measured single-core (BENCHMARKS.md): forward is
//! 1.05-1.2x faster for n = 12..14 (target - f(n-1) = 14, 15, 21), backward 1.5x faster for
//! n = 15 (113 - 101 = 12). [`Direction::choose`] follows that: backward when the target is at
//! most [`BACKWARD_MAX_GAP`] above f(n-1), forward otherwise and in discovery mode.
//!
//! # Kernels
//!
//! The deck lives in SIMD registers: one 128-bit register for n <= 16, where a flip is a byte
//! shuffle (`pshufb`) whose mask is computed from the top byte inside the vector unit
//! (broadcast, subtract, unsigned minimum: no table load and no trip through a general
//! register on the dependency chain); two registers for n <= 32 (four shuffles with
//! precomputed masks, branch-free). SSSE3 is detected at run time (no `target-cpu` needed);
//! without it (or off x86-64) a portable byte-array kernel does the same work.
//! [`Searcher::set_kernel`] forces one (tests and benchmarks).
//!
//! # Ranges, checkpoints, donation
//!
//! [`Searcher::search`] searches the subtree under a prefix, restricted to the paths p with
//! `resume <= p < limit` (lexicographic, as above); a leaf counts when its path is in range
//! (an internal node's range check only decides which of its descendants are searched).
//!
//! Every [`Searcher::set_check_interval`] nodes (default [`DEFAULT_CHECK_INTERVAL`]) the search
//! reports progress, then calls [`Observer::checkpoint`] with the path `p` of the node it is
//! about to enter: every leaf `< p` of the range has been evaluated and none `>= p` has. So
//! searching `[p, limit)` later completes the range exactly once. If
//! [`Observer::should_stop`] then says so, the search returns [`SearchEnd::Stopped`] at once
//! (the checkpoint just passed is the resume point). If [`Observer::should_split`] says so,
//! it donates: it takes the untried children at the shallowest level of its stack that has
//! any (within the unit and the limit), hands them to [`Observer::donate`] as full prefixes
//! (children whose subtrees are provably empty — pruned, or a leaf below the goal — are
//! dropped), and never searches them itself: the new limit is the first donated prefix, and
//! everything from it to the old limit is covered by the donated subtrees. If the old limit
//! cuts through one of those children, that child is decomposed into the full subtrees
//! below the limit.

use std::fmt;

mod backward;

/// Largest supported deck size.
pub const MAX_N: usize = 32;

/// Most concrete decks one leaf may expand to in proof mode (one leaf with r unknown cards is
/// r! decks: 9 unknown cards fit, 10 do not).
pub const MAX_LEAF_DECKS: u64 = 1_000_000;

/// Default number of nodes between two checkpoints / progress reports / stop and split checks.
pub const DEFAULT_CHECK_INTERVAL: u64 = 1 << 22;

/// Entries of the DFS stack (a power of two > MAX_N + 1, so masked indices need no checks).
const STACK: usize = 64;
/// Tail bound used where nothing is frozen (no bound known).
const NO_BOUND: u32 = 1 << 24;
/// Marks an unknown card: `UNKNOWN | origin` (origin 0-based).
const UNKNOWN: u8 = 0x80;

/// What the search needs from its caller while it runs (implemented by the problem module
/// on top of the worker's `SolveContext`).
pub trait Observer {
    /// The bound to beat: in discovery mode a leaf counts when flips > bound; in proof mode
    /// (`Mode::Prove`) this is ignored.
    fn bound(&self) -> Option<u32>;
    /// A deck (top card first, values 1..=n) with its flip count that meets the mode's goal.
    fn found(&self, deck: &[u8], flips: u32);
    /// Work done so far (nodes) — called every few million nodes.
    fn progress(&self, nodes: u64);
    /// A checkpoint: the current branch path (resume from here).
    fn checkpoint(&self, path: &[u8]);
    /// Stop now (the caller saves the last checkpoint).
    fn should_stop(&self) -> bool;
    /// The coordinator wants work donated.
    fn should_split(&self) -> bool;
    /// Untried subtrees handed off (each a full branch path prefix), and the new exclusive
    /// upper limit of this search (the first donated path).
    fn donate(&self, prefixes: Vec<Vec<u8>>, new_limit: Vec<u8>);
}

/// What a search looks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Decks with more flips than the observer's bound (which rises as decks are found).
    Discover,
    /// Every deck with at least this many flips.
    Prove(u32),
}

/// How a search call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SearchEnd {
    /// The whole subtree (up to the limit) was searched.
    Exhausted,
    /// `should_stop` said so; the last checkpoint was passed to the observer.
    Stopped,
}

/// Which way the search runs (see the module docs). Both directions name units the same way
/// (branch paths ending in a leaf 1), but the paths mean different things: a campaign's
/// splitter and solver must use the same direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Knuth's forward search over decks of unknown cards (paths = unique heads).
    Forward,
    /// Pepperdine's backward search from `1 ? ... ?` (paths = flip sizes, last flip first).
    Backward,
}

impl Direction {
    /// The direction for a campaign: the given one (`"forward"` or `"backward"`), or when
    /// `None` the faster one for a proof at `target` (see the module docs, "Which direction"):
    /// backward when the target is at most [`BACKWARD_MAX_GAP`] above the bound on f(n-1)
    /// (`tail_bounds[n - 1]`), else forward (always forward in discovery mode).
    pub fn choose(
        given: Option<&str>,
        n: usize,
        tail_bounds: &[u32],
        target: Option<u32>,
    ) -> Result<Direction, String> {
        match given {
            Some("forward") => Ok(Direction::Forward),
            Some("backward") => Ok(Direction::Backward),
            Some(other) => Err(format!(
                "unknown direction {other:?}: expected forward or backward"
            )),
            None => {
                let below = n
                    .checked_sub(1)
                    .and_then(|m| tail_bounds.get(m))
                    .copied()
                    .filter(|_| n >= 2);
                Ok(match (target, below) {
                    (Some(t), Some(f)) if t <= f.saturating_add(BACKWARD_MAX_GAP) => {
                        Direction::Backward
                    }
                    _ => Direction::Forward,
                })
            }
        }
    }
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Direction::Forward => "forward",
            Direction::Backward => "backward",
        })
    }
}

/// Largest `target - f(n-1)` for which [`Direction::choose`] picks the backward search.
pub const BACKWARD_MAX_GAP: u32 = 12;

/// How the deck is stored and flipped (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// A byte array, reversed in place: works everywhere.
    Portable,
    /// One 128-bit register, SSSE3 byte shuffles with computed masks (n <= 16).
    Narrow,
    /// Two 128-bit registers, four SSSE3 byte shuffles per flip (n <= 32).
    Wide,
}

impl fmt::Display for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kernel::Portable => "portable",
            Kernel::Narrow => "ssse3-narrow",
            Kernel::Wide => "ssse3-wide",
        })
    }
}

impl Kernel {
    /// The fastest kernel this CPU supports for decks of `n` cards.
    pub fn best(n: usize) -> Kernel {
        if Kernel::Narrow.supports(n) {
            Kernel::Narrow
        } else if Kernel::Wide.supports(n) {
            Kernel::Wide
        } else {
            Kernel::Portable
        }
    }

    /// Whether this kernel runs on this CPU for decks of `n` cards.
    pub fn supports(self, n: usize) -> bool {
        match self {
            Kernel::Portable => n <= MAX_N,
            Kernel::Narrow => n <= 16 && simd::available(),
            Kernel::Wide => n <= 32 && simd::available(),
        }
    }
}

/// Counters of the last [`Searcher::search`] call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SearchStats {
    /// Children entered (branch choices tried, leaves included).
    pub nodes: u64,
    /// Leaves that met the goal.
    pub leaves: u64,
    /// Decks passed to [`Observer::found`].
    pub decks: u64,
}

/// An exact Topswops searcher for one deck size (see the module docs).
pub struct Searcher {
    n: usize,
    /// Effective tail bounds: `tail[m]` bounds f(m) for m < n; `NO_BOUND` from n on.
    tail: [u32; 64],
    skip_fixed_points: bool,
    direction: Direction,
    kernel: Kernel,
    check_interval: u64,
    stats: SearchStats,
}

impl fmt::Debug for Searcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Searcher")
            .field("n", &self.n)
            .field("tail", &&self.tail[..self.n])
            .field("skip_fixed_points", &self.skip_fixed_points)
            .field("direction", &self.direction)
            .field("kernel", &self.kernel)
            .field("check_interval", &self.check_interval)
            .finish()
    }
}

impl Searcher {
    /// A searcher for decks of `n` cards (1..=[`MAX_N`]). `tail_bounds[m]` is a proven upper
    /// bound on f(m) for 1 <= m < n (`tail_bounds.len() == n`; index 0 is unused).  Bounds below the
    /// true f(m) make the search unsound: they must come from proofs.
    pub fn new(n: usize, tail_bounds: Vec<u32>) -> Result<Self, String> {
        if n == 0 || n > MAX_N {
            return Err(format!("deck size {n} is outside 1..={MAX_N}"));
        }
        if tail_bounds.len() != n {
            return Err(format!(
                "expected {n} tail bounds (index 0 unused), got {}",
                tail_bounds.len()
            ));
        }
        let mut tail = [NO_BOUND; 64];
        tail[0] = 0;
        for m in 1..n {
            let b = tail_bounds[m];
            tail[m] = b.min(NO_BOUND);
        }
        // f is non-decreasing, so a bound on f(m') bounds f(m) for every m <= m'.
        for m in (1..n.saturating_sub(1)).rev() {
            tail[m] = tail[m].min(tail[m + 1]);
        }
        Ok(Searcher {
            n,
            tail,
            skip_fixed_points: false,
            direction: Direction::Forward,
            kernel: Kernel::best(n),
            check_interval: DEFAULT_CHECK_INTERVAL,
            stats: SearchStats::default(),
        })
    }

    /// The deck size.
    pub fn n(&self) -> usize {
        self.n
    }

    /// The kernel in use.
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// Forces a kernel; fails when this CPU or this deck size cannot run it.
    pub fn set_kernel(&mut self, kernel: Kernel) -> Result<(), String> {
        if !kernel.supports(self.n) {
            return Err(format!(
                "kernel {kernel} is not available for n = {} on this CPU",
                self.n
            ));
        }
        self.kernel = kernel;
        Ok(())
    }

    /// In proof mode, skip decks with a fixed point k >= 2 (card k at position k). Off by
    /// default. Sound for proving a maximum: the report is every deck reaching the target as
    /// long as no reported deck exceeds the target (see the module docs). Discovery mode
    /// always skips them.
    pub fn set_skip_fixed_points(&mut self, skip: bool) {
        self.skip_fixed_points = skip;
    }

    /// The search direction (default [`Direction::Forward`]).
    pub fn direction(&self) -> Direction {
        self.direction
    }

    /// Sets the search direction (for the splitter and every solver of a campaign alike).
    pub fn set_direction(&mut self, direction: Direction) {
        self.direction = direction;
    }

    /// Nodes between two checkpoints / progress reports / stop and split checks (at least 1).
    pub fn set_check_interval(&mut self, nodes: u64) {
        self.check_interval = nodes.max(1);
    }

    /// Counters of the last search.
    pub fn stats(&self) -> SearchStats {
        self.stats
    }

    /// True when `path` names a node of this tree (the check [`Searcher::search`] makes of
    /// its prefix).
    pub fn is_node(&self, path: &[u8]) -> bool {
        match self.direction {
            Direction::Forward => replay(self.n, &self.tail, path).is_ok(),
            Direction::Backward => backward::replay(self.n, &self.tail, path).is_ok(),
        }
    }

    /// All prefixes of length `depth` in depth-first order (shorter ones where a leaf comes
    /// first): their subtrees partition the tree. Pruning is not applied (the tree is the
    /// full structural one), so some of these subtrees may turn out to be empty.
    pub fn prefixes(&self, depth: usize) -> Vec<Vec<u8>> {
        self.prefixes_after(depth, None, usize::MAX).0
    }

    /// The next (at most `max`) prefixes of [`Searcher::prefixes`]`(depth)` that sort after
    /// `after` (typically the last prefix of the previous batch; `None` starts at the
    /// beginning), and whether the enumeration is complete (no prefix after the last one
    /// returned).
    pub fn prefixes_after(
        &self,
        depth: usize,
        after: Option<&[u8]>,
        max: usize,
    ) -> (Vec<Vec<u8>>, bool) {
        let mut out = Vec::new();
        let mut path = Vec::with_capacity(depth.min(MAX_N));
        let done = match self.direction {
            Direction::Forward => {
                let root = Node::root(self.n);
                self.enumerate(&root, &mut path, depth, after, max, &mut out)
            }
            Direction::Backward => {
                let root = backward::Node::root(self.n);
                backward::enumerate(&self.tail, &root, &mut path, depth, after, max, &mut out)
            }
        };
        (out, done)
    }

    fn enumerate(
        &self,
        node: &Node,
        path: &mut Vec<u8>,
        depth: usize,
        after: Option<&[u8]>,
        max: usize,
        out: &mut Vec<Vec<u8>>,
    ) -> bool {
        if path.len() >= depth {
            return push_prefix(path, after, max, out);
        }
        let mut todo = node.unused;
        while todo != 0 {
            let v = todo.trailing_zeros() as u8;
            todo &= todo - 1;
            path.push(v);
            let keep_going = match after.map(|a| relation(path, a)) {
                // Entirely at or before `after`: nothing of it comes after.
                Some(Rel::Before) => true,
                _ => match node.child(v, &self.tail) {
                    Step::Leaf(_) => push_prefix(path, after, max, out),
                    Step::Branch(child) => self.enumerate(&child, path, depth, after, max, out),
                },
            };
            path.pop();
            if !keep_going {
                return false;
            }
        }
        true
    }

    /// Searches the subtree under `prefix`, restricted to paths `p` with `resume <= p` (when
    /// given) and `p < limit` (when given), reporting through `obs` per `mode` (see the module
    /// docs for paths, checkpoints and donation). Fails on a prefix that is not a node of the
    /// tree (a value outside 1..=n or already used, or continuing past a leaf), and when a
    /// proof-mode leaf would expand to more than [`MAX_LEAF_DECKS`] decks.
    pub fn search(
        &mut self,
        prefix: &[u8],
        resume: Option<&[u8]>,
        limit: Option<&[u8]>,
        mode: Mode,
        obs: &dyn Observer,
    ) -> Result<SearchEnd, String> {
        self.stats = SearchStats::default();
        let n = self.n;
        let (need, skip) = match mode {
            Mode::Prove(target) => (target, self.skip_fixed_points),
            Mode::Discover => (obs.bound().map_or(0, |b| b.saturating_add(1)), true),
        };
        if self.direction == Direction::Backward {
            return self.search_backward(prefix, resume, limit, need, skip, mode, obs);
        }
        let root = replay(n, &self.tail, prefix)?;
        let mut run = Run {
            n,
            tail: self.tail,
            need,
            discover: mode == Mode::Discover,
            skip,
            obs,
            resume: Vec::new(),
            limit: Vec::new(),
            limit_on: false,
            interval: self.check_interval,
            stats: SearchStats::default(),
            path: [0; STACK],
        };
        run.path[..prefix.len()].copy_from_slice(prefix);
        let result = run.start(self.kernel, &root, prefix, resume, limit);
        self.stats = run.stats;
        obs.progress(run.stats.nodes);
        result
    }
}

impl Searcher {
    #[allow(clippy::too_many_arguments)]
    fn search_backward(
        &mut self,
        prefix: &[u8],
        resume: Option<&[u8]>,
        limit: Option<&[u8]>,
        need: u32,
        skip: bool,
        mode: Mode,
        obs: &dyn Observer,
    ) -> Result<SearchEnd, String> {
        let deepest = backward::max_depth(self.n, &self.tail);
        if deepest >= backward::BSTACK as u64 || prefix.len() >= backward::BSTACK {
            return Err(format!(
                "backward search: paths may reach {deepest} steps (2 f(n-1) + 2), more than the \
                 {} it supports",
                backward::BSTACK - 1
            ));
        }
        let root = backward::replay(self.n, &self.tail, prefix)?;
        let mut run = backward::Run {
            n: self.n,
            tail: self.tail,
            need,
            discover: mode == Mode::Discover,
            skip,
            obs,
            resume: Vec::new(),
            limit: Vec::new(),
            limit_on: false,
            interval: self.check_interval,
            stats: SearchStats::default(),
            path: [0; backward::BSTACK],
        };
        run.path[..prefix.len()].copy_from_slice(prefix);
        let result = run.start(self.kernel, &root, prefix, resume, limit);
        self.stats = run.stats;
        obs.progress(run.stats.nodes);
        result
    }
}

/// Pushes `path` as a prefix if it sorts after `after`; false when `max` is reached.
fn push_prefix(path: &[u8], after: Option<&[u8]>, max: usize, out: &mut Vec<Vec<u8>>) -> bool {
    if let Some(a) = after {
        if path <= a {
            return true;
        }
    }
    if out.len() >= max {
        return false;
    }
    out.push(path.to_vec());
    true
}

/// How a subtree (named by its root path) relates to a path `x`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rel {
    /// Every path of the subtree is < x (and x is not in it).
    Before,
    /// The subtree's root is a prefix of x (x itself may be the root).
    Contains,
    /// Every path of the subtree is > x.
    After,
}

fn relation(root: &[u8], x: &[u8]) -> Rel {
    for (i, &r) in root.iter().enumerate() {
        match x.get(i) {
            None => return Rel::After, // x is a proper prefix of root: x < root
            Some(&xv) if r < xv => return Rel::Before,
            Some(&xv) if r > xv => return Rel::After,
            Some(_) => {}
        }
    }
    Rel::Contains
}

/// Flips of a concrete deck (top first, a permutation of 1..=n) by plain replay: the
/// independent verifier. Fails for anything that is not a permutation of 1..=n.
pub fn count_flips(deck: &[u8]) -> Result<u64, String> {
    check_permutation(deck)?;
    let mut d = deck.to_vec();
    let mut flips = 0u64;
    while d[0] != 1 {
        let k = d[0] as usize;
        d[..k].reverse();
        flips += 1;
    }
    Ok(flips)
}

/// The leaf path of a concrete deck: the values of its cards the first time each reaches the
/// top, ending with 1 (its unique heads), together with its flip count. This is the path of
/// the leaf of the search tree whose decks include this one. Fails for non-permutations.
pub fn leaf_path(deck: &[u8]) -> Result<(Vec<u8>, u64), String> {
    check_permutation(deck)?;
    let n = deck.len();
    // Positions hold origins; `seen` marks origins that reached the top.
    let mut origins: Vec<usize> = (0..n).collect();
    let mut seen = vec![false; n];
    let mut path = Vec::new();
    let mut flips = 0u64;
    loop {
        let o = origins[0];
        let value = deck[o];
        if !seen[o] {
            seen[o] = true;
            path.push(value);
        }
        if value == 1 {
            return Ok((path, flips));
        }
        origins[..value as usize].reverse();
        flips += 1;
    }
}

fn check_permutation(deck: &[u8]) -> Result<(), String> {
    let n = deck.len();
    if n == 0 {
        return Err("empty deck".into());
    }
    let mut seen = vec![false; n + 1];
    for &v in deck {
        let v = v as usize;
        if v == 0 || v > n {
            return Err(format!("card {v} is outside 1..={n}"));
        }
        if seen[v] {
            return Err(format!("card {v} appears twice"));
        }
        seen[v] = true;
    }
    Ok(())
}

fn bit(v: u32) -> u64 {
    1u64.checked_shl(v).unwrap_or(0)
}

/// Values < x.
fn below(x: u32) -> u64 {
    if x >= 64 {
        !0
    } else {
        (1u64 << x) - 1
    }
}

/// Values > x.
fn above(x: u32) -> u64 {
    if x >= 63 {
        0
    } else {
        !0u64 << (x + 1)
    }
}

/// A node of the search tree in plain bytes (used off the hot path).
#[derive(Clone, Debug)]
struct Node {
    deck: [u8; 32],
    n: usize,
    flips: u32,
    m: u32,
    unused: u64,
    /// Smallest `flips + tail[m]` seen on the way (the most this node's leaves can reach).
    cap: u32,
    /// Whether a branch on the way assigned v >= 2 to origin v (a fixed point).
    fixed: bool,
    /// Value assigned to each origin (0 = unknown).
    assigned: [u8; 32],
}

/// One child of a byte-level node.
enum Step {
    Leaf(Node),
    Branch(Node),
}

impl Node {
    fn root(n: usize) -> Node {
        let mut deck = [0u8; 32];
        for (i, b) in deck.iter_mut().enumerate().take(n) {
            *b = UNKNOWN | i as u8;
        }
        Node {
            deck,
            n,
            flips: 0,
            m: n as u32,
            unused: (below(n as u32 + 1)) & !1,
            cap: NO_BOUND,
            fixed: false,
            assigned: [0; 32],
        }
    }

    /// The child choosing `v` (which must be unused).
    fn child(&self, v: u8, tail: &[u32; 64]) -> Step {
        let mut c = self.clone();
        let o = (c.deck[0] & !UNKNOWN) as usize;
        c.assigned[o] = v;
        c.unused &= !bit(v as u32);
        if v >= 2 && o + 1 == v as usize {
            c.fixed = true;
        }
        if v == 1 {
            c.deck[0] = 1;
            return Step::Leaf(c);
        }
        c.deck[0] = v;
        let mut t = v as usize;
        loop {
            c.deck[..t].reverse();
            c.flips += 1;
            if t as u32 == c.m {
                c.m = lower(&c.deck, c.m);
                c.cap = c.cap.min(c.flips + tail[c.m as usize & 63]);
            }
            let top = c.deck[0];
            if top & UNKNOWN != 0 {
                return Step::Branch(c);
            }
            t = (top as usize).clamp(1, c.n);
        }
    }
}

/// The frozen boundary after card m was flipped onto position m.
#[inline]
fn lower(deck: &[u8; 32], m: u32) -> u32 {
    let mut m = m.saturating_sub(1);
    while m > 0 && deck[(m as usize - 1) & 31] as u32 == m {
        m -= 1;
    }
    m
}

/// The node named by `path` (the root for an empty path), checked to exist.
fn replay(n: usize, tail: &[u32; 64], path: &[u8]) -> Result<(Node, bool), String> {
    let mut node = Node::root(n);
    for (i, &v) in path.iter().enumerate() {
        if v == 0 || v as usize > n || node.unused & bit(v as u32) == 0 {
            return Err(format!(
                "prefix {path:?} is not a node: value {v} at index {i} is not available"
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

mod simd {
    //! Deck kernels: the deck as bytes (`UNKNOWN | origin` or a card value), top first.

    /// Whether the SSSE3 kernels can run.
    pub fn available() -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            std::arch::is_x86_feature_detected!("ssse3")
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    }

    /// A deck representation.
    pub trait Deck: Copy {
        /// From bytes (top first).
        fn load(bytes: &[u8; 32]) -> Self;
        /// To bytes (top first).
        fn store(self) -> [u8; 32];
        /// The top byte.
        fn top(self) -> u32;
        /// Reverses the top `k` cards (1 <= k <= the kernel's width).
        fn flip(self, k: u32) -> Self;
        /// Sets the top byte to `v`, then reverses the top `v` cards.
        fn assign_flip(self, v: u32) -> Self;
        /// Reverses the top `k` cards where `k` (<= the kernel's width) is the top byte.
        #[inline(always)]
        fn flip_top(self, k: u32) -> Self {
            self.flip(k)
        }
        /// The frozen boundary after the card equal to the boundary `m` was flipped.
        #[inline(always)]
        fn lower(self, m: u32) -> u32 {
            super::lower(&self.store(), m)
        }
        /// Sets the top byte to `v`.
        fn set_top(self, v: u32) -> Self;
        /// Bit i set where byte i is i + 1 (card i + 1 at its own position).
        fn matches(self) -> u64;
        /// Bit i set where byte i has its high bit set (an unknown card).
        fn unknowns(self) -> u64;
        /// Bit i set where byte i is a known card that is 1 or above `s`.
        fn inert(self, s: u32) -> u64;
    }

    /// Portable kernel: a byte array.
    #[derive(Clone, Copy)]
    pub struct Bytes(pub [u8; 32]);

    impl Deck for Bytes {
        #[inline(always)]
        fn load(bytes: &[u8; 32]) -> Self {
            Bytes(*bytes)
        }
        #[inline(always)]
        fn store(self) -> [u8; 32] {
            self.0
        }
        #[inline(always)]
        fn top(self) -> u32 {
            self.0[0] as u32
        }
        #[inline(always)]
        fn flip(mut self, k: u32) -> Self {
            let k = (k as usize).min(32);
            self.0[..k].reverse();
            self
        }
        #[inline(always)]
        fn assign_flip(mut self, v: u32) -> Self {
            self.0[0] = v as u8;
            self.flip(v)
        }
        #[inline(always)]
        fn set_top(mut self, v: u32) -> Self {
            self.0[0] = v as u8;
            self
        }
        #[inline(always)]
        fn matches(self) -> u64 {
            let mut out = 0;
            for (i, &b) in self.0.iter().enumerate() {
                out |= u64::from(b as usize == i + 1) << i;
            }
            out
        }
        #[inline(always)]
        fn unknowns(self) -> u64 {
            let mut out = 0;
            for (i, &b) in self.0.iter().enumerate() {
                out |= u64::from(b >> 7) << i;
            }
            out
        }
        #[inline(always)]
        fn inert(self, s: u32) -> u64 {
            let mut out = 0;
            for (i, &b) in self.0.iter().enumerate() {
                let known = b & 0x80 == 0;
                out |= u64::from(known && (b == 1 || u32::from(b) > s)) << i;
            }
            out
        }
    }

    #[cfg(target_arch = "x86_64")]
    pub use x86::{Narrow, Wide};

    #[cfg(target_arch = "x86_64")]
    mod x86 {
        use super::Deck;
        use std::arch::x86_64::*;

        /// 16 bytes as a SIMD constant.
        const fn v16(b: [u8; 16]) -> __m128i {
            // SAFETY: __m128i is 16 plain bytes; every bit pattern is valid.
            unsafe { core::mem::transmute::<[u8; 16], __m128i>(b) }
        }

        /// `mask[i]` = source byte of position i (0x80 = zero) for every flip size 0..32.
        struct Masks {
            /// Narrow reversal of the top k bytes (identity for k > 16).
            rev: [__m128i; 64],
            /// Wide: new low half from the low half.
            ll: [__m128i; 64],
            /// Wide: new low half from the high half.
            hl: [__m128i; 64],
            /// Wide: new high half from the low half.
            lh: [__m128i; 64],
            /// Wide: new high half from the high half.
            hh: [__m128i; 64],
        }

        const fn masks() -> Masks {
            let z = v16([0; 16]);
            let mut m = Masks {
                rev: [z; 64],
                ll: [z; 64],
                hl: [z; 64],
                lh: [z; 64],
                hh: [z; 64],
            };
            let mut k = 0;
            while k <= 32 {
                let mut rev = [0u8; 16];
                let (mut ll, mut hl, mut lh, mut hh) =
                    ([0x80u8; 16], [0x80u8; 16], [0x80u8; 16], [0x80u8; 16]);
                let mut i = 0;
                while i < 16 {
                    rev[i] = if k <= 16 && i < k {
                        (k - 1 - i) as u8
                    } else {
                        i as u8
                    };
                    // Low position i.
                    if i < k {
                        let s = k - 1 - i;
                        if s < 16 {
                            ll[i] = s as u8;
                        } else {
                            hl[i] = (s - 16) as u8;
                        }
                    } else {
                        ll[i] = i as u8;
                    }
                    // High position 16 + i.
                    let p = 16 + i;
                    if p < k {
                        lh[i] = (k - 1 - p) as u8; // < 16 since k <= 32
                    } else {
                        hh[i] = i as u8;
                    }
                    i += 1;
                }
                m.rev[k] = v16(rev);
                m.ll[k] = v16(ll);
                m.hl[k] = v16(hl);
                m.lh[k] = v16(lh);
                m.hh[k] = v16(hh);
                k += 1;
            }
            m
        }

        static MASKS: Masks = masks();

        /// 0xff where a byte is a known card (high bit clear) equal to 1 or above `s` (a signed
        /// comparison: unknown bytes are negative).
        #[inline(always)]
        unsafe fn inert16(x: __m128i, s: u32) -> __m128i {
            _mm_or_si128(
                _mm_cmpeq_epi8(x, _mm_set1_epi8(1)),
                _mm_cmpgt_epi8(x, _mm_set1_epi8(s.min(127) as i8)),
            )
        }

        /// Byte i holds i + 1 (a card at its own position, low half).
        const IOTA1: __m128i = v16([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]);
        /// Byte i holds i + 17 (high half).
        const IOTA17: __m128i = v16([
            17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32,
        ]);

        /// Table index of a flip size (sizes above 32 never occur; they map to zero masks).
        #[inline(always)]
        fn idx(k: u32) -> usize {
            (k & 63) as usize
        }

        /// One register: n <= 16.
        #[derive(Clone, Copy)]
        pub struct Narrow(__m128i);

        impl Deck for Narrow {
            #[inline(always)]
            fn load(bytes: &[u8; 32]) -> Self {
                // SAFETY: reads 16 of the 32 bytes (unaligned load).
                Narrow(unsafe { _mm_loadu_si128(bytes.as_ptr() as *const __m128i) })
            }
            #[inline(always)]
            fn store(self) -> [u8; 32] {
                let mut b = [0u8; 32];
                // SAFETY: writes 16 of the 32 bytes (unaligned store).
                unsafe { _mm_storeu_si128(b.as_mut_ptr() as *mut __m128i, self.0) };
                b
            }
            #[inline(always)]
            fn top(self) -> u32 {
                // SAFETY: SSE2 is part of x86-64.
                (unsafe { _mm_cvtsi128_si32(self.0) } as u32) & 0xff
            }
            #[inline(always)]
            fn flip(self, k: u32) -> Self {
                // SAFETY: only reached from the SSSE3 entry points (run-time detected).
                Narrow(unsafe { _mm_shuffle_epi8(self.0, MASKS.rev[idx(k)]) })
            }
            #[inline(always)]
            fn assign_flip(self, v: u32) -> Self {
                // SAFETY: SSE2 is part of x86-64.
                let d = unsafe {
                    _mm_or_si128(
                        _mm_andnot_si128(_mm_cvtsi32_si128(0xff), self.0),
                        _mm_cvtsi32_si128(v as i32),
                    )
                };
                Narrow(d).flip_top(v)
            }
            #[inline(always)]
            fn set_top(self, v: u32) -> Self {
                // SAFETY: SSE2 is part of x86-64.
                Narrow(unsafe {
                    _mm_or_si128(
                        _mm_andnot_si128(_mm_cvtsi32_si128(0xff), self.0),
                        _mm_cvtsi32_si128(v as i32),
                    )
                })
            }
            #[inline(always)]
            fn matches(self) -> u64 {
                // SAFETY: SSE2 is part of x86-64.
                unsafe { _mm_movemask_epi8(_mm_cmpeq_epi8(self.0, IOTA1)) as u32 as u64 }
            }
            #[inline(always)]
            fn unknowns(self) -> u64 {
                // SAFETY: SSE2 is part of x86-64.
                unsafe { _mm_movemask_epi8(self.0) as u32 as u64 }
            }
            #[inline(always)]
            fn inert(self, s: u32) -> u64 {
                // SAFETY: SSE2 is part of x86-64.
                unsafe { _mm_movemask_epi8(inert16(self.0, s)) as u32 as u64 }
            }
            #[inline(always)]
            fn lower(self, m: u32) -> u32 {
                // SAFETY: an __m128i is 16 plain bytes.
                let b = unsafe { core::mem::transmute::<__m128i, [u8; 16]>(self.0) };
                let mut m = m.saturating_sub(1);
                while m > 0 && b[(m as usize - 1) & 15] as u32 == m {
                    m -= 1;
                }
                m
            }
            /// The shuffle mask is computed from the top byte t inside the vector unit (no
            /// round trip through a general register and a table load on the dependency
            /// chain): byte i of `t - 1 - i` is the reversal index where i < t and has its high
            /// bit set elsewhere, so its unsigned minimum with `0x70 + i` (which `pshufb` reads
            /// as i) is the whole mask.
            #[inline(always)]
            fn flip_top(self, _k: u32) -> Self {
                // SAFETY: only reached from the SSSE3 entry points (run-time detected).
                unsafe {
                    let iota1 = v16([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]);
                    let keep = v16([
                        0x70, 0x71, 0x72, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a, 0x7b,
                        0x7c, 0x7d, 0x7e, 0x7f,
                    ]);
                    let t = _mm_shuffle_epi8(self.0, _mm_setzero_si128());
                    let mask = _mm_min_epu8(_mm_sub_epi8(t, iota1), keep);
                    Narrow(_mm_shuffle_epi8(self.0, mask))
                }
            }
        }

        /// Two registers: n <= 32.
        #[derive(Clone, Copy)]
        pub struct Wide(__m128i, __m128i);

        impl Deck for Wide {
            #[inline(always)]
            fn load(bytes: &[u8; 32]) -> Self {
                // SAFETY: reads the 32 bytes (unaligned loads).
                unsafe {
                    Wide(
                        _mm_loadu_si128(bytes.as_ptr() as *const __m128i),
                        _mm_loadu_si128(bytes.as_ptr().add(16) as *const __m128i),
                    )
                }
            }
            #[inline(always)]
            fn store(self) -> [u8; 32] {
                let mut b = [0u8; 32];
                // SAFETY: writes the 32 bytes (unaligned stores).
                unsafe {
                    _mm_storeu_si128(b.as_mut_ptr() as *mut __m128i, self.0);
                    _mm_storeu_si128(b.as_mut_ptr().add(16) as *mut __m128i, self.1);
                }
                b
            }
            #[inline(always)]
            fn top(self) -> u32 {
                // SAFETY: SSE2 is part of x86-64.
                (unsafe { _mm_cvtsi128_si32(self.0) } as u32) & 0xff
            }
            #[inline(always)]
            fn flip(self, k: u32) -> Self {
                let k = idx(k);
                // SAFETY: only reached from the SSSE3 entry points (run-time detected).
                unsafe {
                    let lo = _mm_or_si128(
                        _mm_shuffle_epi8(self.0, MASKS.ll[k]),
                        _mm_shuffle_epi8(self.1, MASKS.hl[k]),
                    );
                    let hi = _mm_or_si128(
                        _mm_shuffle_epi8(self.0, MASKS.lh[k]),
                        _mm_shuffle_epi8(self.1, MASKS.hh[k]),
                    );
                    Wide(lo, hi)
                }
            }
            #[inline(always)]
            fn assign_flip(self, v: u32) -> Self {
                // SAFETY: SSE2 is part of x86-64.
                let lo = unsafe {
                    _mm_or_si128(
                        _mm_andnot_si128(_mm_cvtsi32_si128(0xff), self.0),
                        _mm_cvtsi32_si128(v as i32),
                    )
                };
                Wide(lo, self.1).flip(v)
            }
            #[inline(always)]
            fn set_top(self, v: u32) -> Self {
                // SAFETY: SSE2 is part of x86-64.
                let lo = unsafe {
                    _mm_or_si128(
                        _mm_andnot_si128(_mm_cvtsi32_si128(0xff), self.0),
                        _mm_cvtsi32_si128(v as i32),
                    )
                };
                Wide(lo, self.1)
            }
            #[inline(always)]
            fn matches(self) -> u64 {
                // SAFETY: SSE2 is part of x86-64.
                unsafe {
                    let lo = _mm_movemask_epi8(_mm_cmpeq_epi8(self.0, IOTA1)) as u32;
                    let hi = _mm_movemask_epi8(_mm_cmpeq_epi8(self.1, IOTA17)) as u32;
                    u64::from(lo | hi << 16)
                }
            }
            #[inline(always)]
            fn unknowns(self) -> u64 {
                // SAFETY: SSE2 is part of x86-64.
                unsafe {
                    let lo = _mm_movemask_epi8(self.0) as u32;
                    let hi = _mm_movemask_epi8(self.1) as u32;
                    u64::from(lo | hi << 16)
                }
            }
            #[inline(always)]
            fn inert(self, s: u32) -> u64 {
                // SAFETY: SSE2 is part of x86-64.
                unsafe {
                    let lo = _mm_movemask_epi8(inert16(self.0, s)) as u32;
                    let hi = _mm_movemask_epi8(inert16(self.1, s)) as u32;
                    u64::from(lo | hi << 16)
                }
            }
        }
    }
}

use simd::Deck;

/// One level of the explicit DFS stack: a branch node.
#[derive(Clone, Copy)]
struct Level<D> {
    deck: D,
    flips: u32,
    m: u32,
    unused: u64,
    /// Children still to try (unconstrained by resume or limit).
    todo: u64,
    /// The child on the limit path, tried last (0 = none).
    lim: u8,
}

/// One child of a SIMD node.
enum Child<D> {
    /// Pruned, or a leaf below the goal: nothing to report.
    Empty,
    /// A leaf meeting the goal, with its flips.
    Leaf(u32),
    /// A branch node: deck, flips, frozen boundary.
    Branch(D, u32, u32),
}

/// The child of (deck, flips, m) choosing `v` — the hot path.
#[inline(always)]
fn child<D: Deck>(deck: D, v: u32, flips: u32, m: u32, need: u32, tail: &[u32; 64]) -> Child<D> {
    if v == 1 {
        return if flips >= need {
            Child::Leaf(flips)
        } else {
            Child::Empty
        };
    }
    let mut d = deck.assign_flip(v);
    let mut c = flips + 1;
    let mut m = m;
    let mut t = v;
    loop {
        if t == m {
            m = tail_event(d, m);
            if c + tail[m as usize & 63] < need {
                return Child::Empty;
            }
        }
        let top = d.top();
        if top & UNKNOWN as u32 != 0 {
            return Child::Branch(d, c, m);
        }
        // Card 1 is never known before the end (it is only assigned by a leaf), so top >= 2.
        d = d.flip_top(top);
        c += 1;
        t = top;
    }
}

/// The new frozen boundary after the card equal to the boundary `m` was flipped.
#[inline(always)]
fn tail_event<D: Deck>(d: D, m: u32) -> u32 {
    d.lower(m)
}

/// The children worth trying at a branch node whose top byte is `top`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn children(
    top: u32,
    unused: u64,
    flips: u32,
    m: u32,
    need: u32,
    skip: bool,
    tail: &[u32; 64],
) -> u64 {
    // The top is unknown: `top & 0x3f` is its origin (< 32), so the shift is in range.
    let fixed = (1u64 << ((top & 0x3f) + 1)) & !3 & (skip as u64).wrapping_neg();
    let useless_leaf = if flips < need { 2 } else { 0 };
    // Choosing v = m (m >= 2) flips card m onto position m: the boundary drops to at most
    // m - 1, so the child is pruned when even tail[m - 1] cannot reach the goal.
    let doomed_m = if flips + 1 + tail[(m as usize).wrapping_sub(1) & 63] < need {
        (1u64 << (m & 63)) & !3
    } else {
        0
    };
    unused & !(fixed | useless_leaf | doomed_m)
}

/// The state of one search call.
struct Run<'a> {
    n: usize,
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
    path: [u8; STACK],
}

impl Run<'_> {
    fn start(
        &mut self,
        kernel: Kernel,
        root: &(Node, bool),
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
        if node.cap < self.need || (self.skip && node.fixed) {
            return Ok(SearchEnd::Exhausted);
        }
        if *is_leaf {
            // A one-leaf unit: in range unless the resume point lies strictly inside it.
            if !resume_on && node.flips >= self.need {
                self.report(prefix.len(), node.flips)?;
            }
            return Ok(SearchEnd::Exhausted);
        }
        match kernel {
            #[cfg(target_arch = "x86_64")]
            Kernel::Narrow if simd::available() && self.n <= 16 => {
                // SAFETY: SSSE3 was detected at run time.
                unsafe { self.go_narrow(node, prefix.len(), resume_on) }
            }
            #[cfg(target_arch = "x86_64")]
            Kernel::Wide if simd::available() && self.n <= 32 => {
                // SAFETY: SSSE3 was detected at run time.
                unsafe { self.go_wide(node, prefix.len(), resume_on) }
            }
            _ if self.skip => self.go::<simd::Bytes, true>(node, prefix.len(), resume_on),
            _ => self.go::<simd::Bytes, false>(node, prefix.len(), resume_on),
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
        if self.skip {
            self.go::<simd::Narrow, true>(node, base, resume_on)
        } else {
            self.go::<simd::Narrow, false>(node, base, resume_on)
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "ssse3")]
    unsafe fn go_wide(
        &mut self,
        node: &Node,
        base: usize,
        resume_on: bool,
    ) -> Result<SearchEnd, String> {
        if self.skip {
            self.go::<simd::Wide, true>(node, base, resume_on)
        } else {
            self.go::<simd::Wide, false>(node, base, resume_on)
        }
    }

    /// Restricts a node on the limit path (depth `d`) to the children below the limit.
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

    /// The depth-first search proper, from the unit's root `node` at depth `base`
    /// (`SKIP` is `self.skip`, made a constant so each case gets its own loop).
    #[inline(always)]
    fn go<D: Deck, const SKIP: bool>(
        &mut self,
        node: &Node,
        base: usize,
        resume_on: bool,
    ) -> Result<SearchEnd, String> {
        let tail = self.tail;
        let skip = SKIP;
        let mut need = self.need;
        let blank = Level {
            deck: D::load(&[0; 32]),
            flips: 0,
            m: 0,
            unused: 0,
            todo: 0,
            lim: 0,
        };
        let mut levels = [blank; STACK];
        let deck = D::load(&node.deck);
        let mut d = base;
        levels[d & (STACK - 1)] = Level {
            deck,
            flips: node.flips,
            m: node.m,
            unused: node.unused,
            todo: children(
                deck.top(),
                node.unused,
                node.flips,
                node.m,
                need,
                skip,
                &tail,
            ),
            lim: 0,
        };
        if self.limit_on {
            let mut lvl = levels[d & (STACK - 1)];
            self.apply_limit(&mut lvl, d);
            levels[d & (STACK - 1)] = lvl;
        }
        let mut nodes = 0u64;

        // Descend along the resume path: children before it are skipped, the ones after it
        // are left in `todo`, the one on it is entered now.
        if resume_on {
            // Whether the node at depth d is on the limit path too.
            let mut on_limit = self.limit_on;
            while d < self.resume.len() {
                let r = self.resume[d] as u32;
                let lvl = &mut levels[d & (STACK - 1)];
                let valid = (lvl.todo & bit(r)) != 0 || (lvl.lim != 0 && lvl.lim as u32 == r);
                let both = on_limit && self.limit.get(d).is_some_and(|&l| l as u32 == r);
                lvl.todo &= above(r);
                if lvl.lim != 0 && lvl.lim as u32 <= r {
                    lvl.lim = 0;
                }
                if !valid {
                    break;
                }
                self.path[d & (STACK - 1)] = r as u8;
                nodes += 1;
                let lvl = levels[d & (STACK - 1)];
                match child(lvl.deck, r, lvl.flips, lvl.m, need, &tail) {
                    Child::Empty => break,
                    Child::Leaf(c) => {
                        if self.resume.len() == d + 1 {
                            self.stats.nodes = nodes;
                            self.report(d + 1, c)?;
                            need = self.need;
                        }
                        break;
                    }
                    Child::Branch(dk, c, m) => {
                        let unused = lvl.unused & !bit(r);
                        d += 1;
                        let mut next = Level {
                            deck: dk,
                            flips: c,
                            m,
                            unused,
                            todo: children(dk.top(), unused, c, m, need, skip, &tail),
                            lim: 0,
                        };
                        on_limit = both;
                        if both {
                            self.apply_limit(&mut next, d);
                        }
                        levels[d & (STACK - 1)] = next;
                    }
                }
            }
        }

        let interval = self.interval;
        let mut next_check = nodes + interval;
        // The current level's `todo` lives in a register; its slot is written back before
        // descending (and before the periodic checks, which may donate from it).
        let mut todo = levels[d & (STACK - 1)].todo;
        // The path in a local array (kept in sync with `self.path` around the cold calls).
        let mut path = self.path;
        loop {
            if todo == 0 {
                let slot = &mut levels[d & (STACK - 1)];
                if slot.lim != 0 {
                    // The child on the limit path (tried last), off the hot path. The slot's
                    // `todo` is stale: clear it before going deeper.
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
                todo = levels[d & (STACK - 1)].todo;
                continue;
            }
            let v = todo.trailing_zeros();
            todo &= todo - 1;
            path[d & (STACK - 1)] = v as u8;
            nodes += 1;
            if nodes >= next_check {
                next_check = nodes + interval;
                self.stats.nodes = nodes;
                levels[d & (STACK - 1)].todo = todo;
                self.path = path;
                if self.periodic(&mut levels, base, d)? {
                    return Ok(SearchEnd::Stopped);
                }
                todo = levels[d & (STACK - 1)].todo;
                need = self.need;
            }
            let lvl = &levels[d & (STACK - 1)];
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
            // v is a bit index of `todo` (< 64).
            let unused = lvl.unused & !(1u64 << v);
            let mut x = lvl.deck.assign_flip(v);
            let mut c = flips + 1;
            let mut m = lvl.m;
            if v == m {
                m = tail_event(x, m);
                if c + tail[m as usize & 63] < need {
                    continue;
                }
            }
            let mut top = x.top();
            loop {
                if top & UNKNOWN as u32 != 0 {
                    levels[d & (STACK - 1)].todo = todo;
                    todo = children(top, unused, c, m, need, skip, &tail);
                    d += 1;
                    // `lim` is left alone: it is 0 in every slot above the current depth
                    // (a level is only left once its limit child was entered or donated).
                    let next = &mut levels[d & (STACK - 1)];
                    next.deck = x;
                    next.flips = c;
                    next.m = m;
                    next.unused = unused;
                    next.todo = todo;
                    break;
                }
                x = x.flip_top(top);
                c += 1;
                if top == m {
                    m = tail_event(x, m);
                    if c + tail[m as usize & 63] < need {
                        break;
                    }
                }
                top = x.top();
            }
        }
        self.stats.nodes = nodes;
        Ok(SearchEnd::Exhausted)
    }

    /// Enters the child on the limit path of the node at depth `d` (its `lim`), which the
    /// caller has counted; returns the new depth.
    #[inline(never)]
    fn enter_limit_child<D: Deck>(
        &mut self,
        levels: &mut [Level<D>; STACK],
        d: usize,
        need: u32,
    ) -> Result<usize, String> {
        let slot = &mut levels[d & (STACK - 1)];
        let v = slot.lim as u32;
        slot.lim = 0;
        let lvl = *slot;
        self.path[d & (STACK - 1)] = v as u8;
        match child(lvl.deck, v, lvl.flips, lvl.m, need, &self.tail) {
            Child::Empty => Ok(d),
            Child::Leaf(c) => {
                self.report(d + 1, c)?;
                Ok(d)
            }
            Child::Branch(dk, c, m) => {
                let unused = lvl.unused & !bit(v);
                let mut next = Level {
                    deck: dk,
                    flips: c,
                    m,
                    unused,
                    todo: children(dk.top(), unused, c, m, need, self.skip, &self.tail),
                    lim: 0,
                };
                self.apply_limit(&mut next, d + 1);
                levels[(d + 1) & (STACK - 1)] = next;
                Ok(d + 1)
            }
        }
    }

    /// Progress, checkpoint, stop and split checks; true means stop. The child `path[d]` of
    /// the node at depth `d` is about to be entered.
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
        self.refresh_need();
        if self.obs.should_split() {
            self.donate(levels, base, d);
        }
        Ok(false)
    }

    fn refresh_need(&mut self) {
        if self.discover {
            if let Some(b) = self.obs.bound() {
                self.need = self.need.max(b.saturating_add(1));
            }
        }
    }

    /// Donates the untried children of the shallowest level that has any (see the module
    /// docs).
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
                // The child on the limit path: donate its full subtrees below the limit.
                let mut depth = i;
                let mut w = lvl.lim as u32;
                let mut cur = lvl;
                loop {
                    prefix.truncate(depth);
                    prefix.push(w as u8);
                    match child(cur.deck, w, cur.flips, cur.m, need, &self.tail) {
                        Child::Empty => break,
                        Child::Leaf(_) => {
                            out.push(prefix.clone());
                            break;
                        }
                        Child::Branch(dk, c, m) => {
                            let unused = cur.unused & !bit(w);
                            depth += 1;
                            let mut next = Level {
                                deck: dk,
                                flips: c,
                                m,
                                unused,
                                todo: children(dk.top(), unused, c, m, need, self.skip, &self.tail),
                                lim: 0,
                            };
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
            if !matches!(
                child(lvl.deck, w, lvl.flips, lvl.m, need, &self.tail),
                Child::Empty
            ) {
                let mut p = prefix.to_vec();
                p.push(w as u8);
                out.push(p);
            }
        }
    }

    /// Reports the leaf `path[..len]` (which ends with the 1-choice) with `flips` flips.
    #[cold]
    #[inline(never)]
    fn report(&mut self, len: usize, flips: u32) -> Result<(), String> {
        let path = self.path[..len].to_vec();
        let (leaf, _) = replay(self.n, &self.tail, &path)?;
        let n = self.n;
        let free: Vec<usize> = (0..n).filter(|&o| leaf.assigned[o] == 0).collect();
        let values: Vec<u8> = (1..=n as u8)
            .filter(|&v| leaf.unused & bit(v as u32) != 0)
            .collect();
        let mut deck: Vec<u8> = leaf.assigned[..n].to_vec();
        self.stats.leaves += 1;
        if self.discover {
            for (&o, &v) in free.iter().zip(&values) {
                deck[o] = v;
            }
            self.obs.found(&deck, flips);
            self.stats.decks += 1;
            self.refresh_need();
            return Ok(());
        }
        let count: u64 = (1..=values.len() as u64).product();
        if count > MAX_LEAF_DECKS {
            return Err(format!(
                "leaf {path:?} ({flips} flips) stands for {count} decks, more than {MAX_LEAF_DECKS}: \
                 the proof target is too low"
            ));
        }
        // All fillings, in lexicographic order of the values given to the free origins.
        let mut perm = values;
        loop {
            let mut fixed = false;
            for (&o, &v) in free.iter().zip(&perm) {
                deck[o] = v;
                fixed |= v >= 2 && o + 1 == v as usize;
            }
            if !(self.skip && fixed) {
                self.obs.found(&deck, flips);
                self.stats.decks += 1;
            }
            if !next_permutation(&mut perm) {
                break;
            }
        }
        Ok(())
    }
}

/// Rearranges into the next permutation in lexicographic order; false after the last one.
fn next_permutation(a: &mut [u8]) -> bool {
    if a.len() < 2 {
        return false;
    }
    let mut i = a.len() - 1;
    while i > 0 && a[i - 1] >= a[i] {
        i -= 1;
    }
    if i == 0 {
        return false;
    }
    let mut j = a.len() - 1;
    while a[j] <= a[i - 1] {
        j -= 1;
    }
    a.swap(i - 1, j);
    a[i..].reverse();
    true
}

#[cfg(test)]
mod tests {
    /// f(m) for m = 0..=19, published (OEIS A000375; f(0) = 0 by convention): test
    /// expectations only, never used by the search.
    const KNOWN_F: [u32; 20] = [
        0, 0, 1, 2, 4, 7, 10, 16, 22, 30, 38, 51, 65, 80, 101, 113, 139, 159, 191, 221,
    ];

    use super::*;
    use proptest::prelude::*;
    use std::cell::{Cell, RefCell};
    use std::collections::{BTreeMap, BTreeSet};

    /// Donations received: (prefixes, new limit).
    type Donations = Vec<(Vec<Vec<u8>>, Vec<u8>)>;

    /// A recording observer with a scripted stop / split schedule (counted in checkpoints).
    struct Rec {
        found: RefCell<Vec<(Vec<u8>, u32)>>,
        bound: Cell<Option<u32>>,
        raise: bool,
        checks: Cell<u64>,
        stop_at: Option<u64>,
        split_every: Option<u64>,
        last_checkpoint: RefCell<Option<Vec<u8>>>,
        donated: RefCell<Donations>,
    }

    impl Rec {
        fn new() -> Rec {
            Rec {
                found: RefCell::new(Vec::new()),
                bound: Cell::new(None),
                raise: true,
                checks: Cell::new(0),
                stop_at: None,
                split_every: None,
                last_checkpoint: RefCell::new(None),
                donated: RefCell::new(Vec::new()),
            }
        }
    }

    impl Observer for Rec {
        fn bound(&self) -> Option<u32> {
            self.bound.get()
        }
        fn found(&self, deck: &[u8], flips: u32) {
            assert_eq!(count_flips(deck).unwrap(), flips as u64, "{deck:?}");
            if self.raise && self.bound.get().is_none_or(|b| flips > b) {
                self.bound.set(Some(flips));
            }
            self.found.borrow_mut().push((deck.to_vec(), flips));
        }
        fn progress(&self, _nodes: u64) {}
        fn checkpoint(&self, path: &[u8]) {
            self.checks.set(self.checks.get() + 1);
            *self.last_checkpoint.borrow_mut() = Some(path.to_vec());
        }
        fn should_stop(&self) -> bool {
            self.stop_at == Some(self.checks.get())
        }
        fn should_split(&self) -> bool {
            self.split_every
                .is_some_and(|k| self.checks.get().is_multiple_of(k))
        }
        fn donate(&self, prefixes: Vec<Vec<u8>>, new_limit: Vec<u8>) {
            self.donated.borrow_mut().push((prefixes, new_limit));
        }
    }

    fn permutations(n: usize) -> Vec<Vec<u8>> {
        let mut p: Vec<u8> = (1..=n as u8).collect();
        let mut all = vec![p.clone()];
        while next_permutation(&mut p) {
            all.push(p.clone());
        }
        all
    }

    fn has_fixed_point(deck: &[u8]) -> bool {
        deck.iter()
            .enumerate()
            .any(|(i, &v)| v >= 2 && v as usize == i + 1)
    }

    fn kernels(n: usize) -> Vec<Kernel> {
        [Kernel::Portable, Kernel::Narrow, Kernel::Wide]
            .into_iter()
            .filter(|k| k.supports(n))
            .collect()
    }

    /// f(1..n-1) computed by this search, index m (0 unused).
    fn tails(n: usize) -> Vec<u32> {
        let mut t = vec![0u32; n];
        for m in 1..n {
            t[m] = max_by_search(m, &t[..m], Kernel::Portable);
        }
        t
    }

    fn max_by_search(n: usize, tails: &[u32], kernel: Kernel) -> u32 {
        max_in(n, tails, kernel, Direction::Forward)
    }

    fn max_in(n: usize, tails: &[u32], kernel: Kernel, dir: Direction) -> u32 {
        let mut s = Searcher::new(n, tails.to_vec()).unwrap();
        s.set_kernel(kernel).unwrap();
        s.set_direction(dir);
        let obs = Rec::new();
        assert_eq!(
            s.search(&[], None, None, Mode::Discover, &obs).unwrap(),
            SearchEnd::Exhausted
        );
        obs.bound.get().unwrap()
    }

    fn searcher(n: usize) -> Searcher {
        Searcher::new(n, KNOWN_F[..n].to_vec()).unwrap()
    }

    const DIRS: [Direction; 2] = [Direction::Forward, Direction::Backward];

    fn searcher_in(n: usize, dir: Direction) -> Searcher {
        let mut s = searcher(n);
        s.set_direction(dir);
        s
    }

    /// The leaf path of a concrete deck in the tree of `dir`.
    fn path_in(deck: &[u8], dir: Direction) -> (Vec<u8>, u64) {
        match dir {
            Direction::Forward => leaf_path(deck).unwrap(),
            Direction::Backward => backward::leaf_path(deck).unwrap(),
        }
    }

    /// Every deck of a full search, once each (fails on duplicates).
    fn as_set(found: &[(Vec<u8>, u32)]) -> BTreeSet<Vec<u8>> {
        let mut set = BTreeSet::new();
        for (deck, _) in found {
            assert!(set.insert(deck.clone()), "deck {deck:?} reported twice");
        }
        set
    }

    #[test]
    fn count_flips_examples_and_errors() {
        assert_eq!(count_flips(&[3, 1, 4, 5, 2]), Ok(7));
        assert_eq!(count_flips(&[1]), Ok(0));
        assert_eq!(count_flips(&[2, 1]), Ok(1));
        assert!(count_flips(&[]).is_err());
        assert!(count_flips(&[1, 1]).is_err());
        assert!(count_flips(&[0, 1]).is_err());
        assert!(count_flips(&[3, 1]).is_err());
        assert_eq!(
            leaf_path(&[3, 1, 4, 5, 2]).unwrap(),
            (vec![3, 4, 5, 2, 1], 7)
        );
    }

    #[test]
    fn bad_arguments_are_errors() {
        assert!(Searcher::new(0, vec![]).is_err());
        assert!(Searcher::new(MAX_N + 1, vec![0; MAX_N + 1]).is_err());
        assert!(Searcher::new(5, vec![0; 4]).is_err());
        let mut s = searcher(6);
        let obs = Rec::new();
        for bad in [&[0u8][..], &[7], &[2, 2], &[1, 2], &[255]] {
            assert!(
                s.search(bad, None, None, Mode::Prove(0), &obs).is_err(),
                "{bad:?}"
            );
        }
        // Arbitrary resume / limit bytes are fine.
        assert!(s
            .search(
                &[],
                Some(&[200, 0]),
                Some(&[255, 255, 255]),
                Mode::Prove(0),
                &obs
            )
            .is_ok());
        // A proof target so low that one leaf is 11! decks.
        let mut s = searcher(12);
        assert!(s.search(&[], None, None, Mode::Prove(0), &obs).is_err());
        assert!(Searcher::new(32, vec![1000; 32]).is_ok());
        let mut s = searcher(6);
        assert!(s.set_kernel(Kernel::Portable).is_ok());
    }

    #[test]
    fn maximum_matches_brute_force() {
        let t = tails(8);
        for n in 1..=8 {
            let brute = permutations(n)
                .iter()
                .map(|d| count_flips(d).unwrap() as u32)
                .max()
                .unwrap();
            assert_eq!(brute, KNOWN_F[n]);
            for k in kernels(n) {
                for dir in DIRS {
                    assert_eq!(max_in(n, &t[..n], k, dir), brute, "n = {n}, {k}, {dir:?}");
                }
            }
        }
    }

    #[test]
    fn proof_sets_match_brute_force() {
        let t = tails(8);
        for n in 1..=8 {
            let all: Vec<(Vec<u8>, u32)> = permutations(n)
                .into_iter()
                .map(|d| {
                    let f = count_flips(&d).unwrap() as u32;
                    (d, f)
                })
                .collect();
            let f = KNOWN_F[n];
            for target in [f, f.saturating_sub(1), f.saturating_sub(3)] {
                for skip in [false, true] {
                    let want: BTreeSet<Vec<u8>> = all
                        .iter()
                        .filter(|(d, fl)| *fl >= target && !(skip && has_fixed_point(d)))
                        .map(|(d, _)| d.clone())
                        .collect();
                    for (k, dir) in kernels(n).into_iter().flat_map(|k| DIRS.map(|d| (k, d))) {
                        let mut s = Searcher::new(n, t[..n].to_vec()).unwrap();
                        s.set_kernel(k).unwrap();
                        s.set_direction(dir);
                        s.set_skip_fixed_points(skip);
                        let obs = Rec::new();
                        s.search(&[], None, None, Mode::Prove(target), &obs)
                            .unwrap();
                        let got = as_set(&obs.found.borrow());
                        assert_eq!(
                            got, want,
                            "n = {n}, target {target}, skip {skip}, {k}, {dir:?}"
                        );
                        assert_eq!(s.stats().decks as usize, want.len());
                    }
                }
            }
        }
    }

    #[test]
    fn direction_choice() {
        let f = |n: usize| KNOWN_F[..n].to_vec();
        let choose = |given, n, target| Direction::choose(given, n, &f(n), target);
        assert_eq!(choose(None, 15, Some(113)), Ok(Direction::Backward));
        assert_eq!(choose(None, 14, Some(101)), Ok(Direction::Forward));
        assert_eq!(choose(None, 15, None), Ok(Direction::Forward));
        assert_eq!(choose(None, 1, Some(0)), Ok(Direction::Forward));
        assert_eq!(
            choose(Some("forward"), 15, Some(113)),
            Ok(Direction::Forward)
        );
        assert_eq!(choose(Some("backward"), 4, None), Ok(Direction::Backward));
        assert!(choose(Some("sideways"), 4, None).is_err());
        for dir in DIRS {
            let name = dir.to_string();
            assert_eq!(Direction::choose(Some(&name), 4, &f(4), None), Ok(dir));
        }
    }

    #[test]
    fn optimal_decks_have_no_fixed_points() {
        for (n, &f) in KNOWN_F.iter().enumerate().take(9).skip(2) {
            for d in permutations(n) {
                if has_fixed_point(&d) {
                    assert!(count_flips(&d).unwrap() < f as u64, "{d:?}");
                }
            }
        }
    }

    #[test]
    fn leaf_paths_name_search_leaves() {
        for dir in DIRS {
            leaf_paths_name_leaves_in(dir);
        }
    }

    fn leaf_paths_name_leaves_in(dir: Direction) {
        let n = 7;
        let s = searcher_in(n, dir);
        // The longest path: n + 1 forward, f(n) + 1 backward.
        let full = match dir {
            Direction::Forward => n + 1,
            Direction::Backward => KNOWN_F[n] as usize + 1,
        };
        let leaves: BTreeSet<Vec<u8>> = s
            .prefixes(full)
            .into_iter()
            .inspect(|p| assert_eq!(p.last(), Some(&1)))
            .collect();
        let mut seen = BTreeSet::new();
        for d in permutations(n) {
            let (path, flips) = path_in(&d, dir);
            assert!(leaves.contains(&path), "{d:?} -> {path:?}");
            assert_eq!(flips, count_flips(&d).unwrap());
            seen.insert(path);
        }
        assert_eq!(seen, leaves);
        // Depth-first order is lexicographic order.
        let listed = s.prefixes(full);
        assert!(listed.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn prefixes_partition_the_tree() {
        let n = 7;
        let everything: BTreeSet<Vec<u8>> = permutations(n).into_iter().collect();
        for (depth, dir) in (0..=n + 1).flat_map(|d| DIRS.map(|dir| (d, dir))) {
            let mut s = searcher_in(n, dir);
            // Lazily, in batches of 5.
            let mut after: Option<Vec<u8>> = None;
            let mut all = Vec::new();
            loop {
                let (batch, done) = s.prefixes_after(depth, after.as_deref(), 5);
                assert!(batch.len() <= 5);
                all.extend(batch.iter().cloned());
                if let Some(last) = batch.last() {
                    after = Some(last.clone());
                }
                if done {
                    break;
                }
                assert!(!batch.is_empty());
            }
            assert_eq!(all, s.prefixes(depth));
            assert!(all.windows(2).all(|w| w[0] < w[1]));
            let obs = Rec::new();
            for p in &all {
                assert!(p.len() <= depth);
                assert_eq!(
                    s.search(p, None, None, Mode::Prove(0), &obs).unwrap(),
                    SearchEnd::Exhausted
                );
            }
            assert_eq!(
                as_set(&obs.found.borrow()),
                everything,
                "depth {depth} {dir:?}"
            );
        }
    }

    /// Runs `units` (prefix, limit) to completion with stops every `stop_every` checkpoints
    /// and splits every `split_every`, resuming from checkpoints and queueing donations.
    fn drive(
        s: &mut Searcher,
        mode: Mode,
        units: Vec<(Vec<u8>, Option<Vec<u8>>)>,
        stop_every: Option<u64>,
        split_every: Option<u64>,
    ) -> (Vec<(Vec<u8>, u32)>, usize) {
        let mut queue = units;
        let mut found = Vec::new();
        let mut donations = 0;
        let mut calls = 0u64;
        while let Some((prefix, mut limit)) = queue.pop() {
            let mut resume: Option<Vec<u8>> = None;
            loop {
                calls += 1;
                assert!(calls < 1_000_000, "no progress");
                let mut obs = Rec::new();
                obs.raise = false;
                obs.stop_at = stop_every;
                obs.split_every = split_every;
                let end = s
                    .search(&prefix, resume.as_deref(), limit.as_deref(), mode, &obs)
                    .unwrap();
                found.extend(obs.found.borrow().iter().cloned());
                for (prefixes, new_limit) in obs.donated.borrow().iter() {
                    donations += 1;
                    assert_eq!(&prefixes[0], new_limit);
                    assert!(prefixes.windows(2).all(|w| w[0] < w[1]));
                    if let Some(l) = &limit {
                        assert!(new_limit < l);
                    }
                    if let Some(r) = &resume {
                        assert!(new_limit > r);
                    }
                    limit = Some(new_limit.clone());
                    queue.extend(prefixes.iter().map(|p| (p.clone(), None)));
                }
                match end {
                    SearchEnd::Exhausted => break,
                    SearchEnd::Stopped => {
                        let cp = obs.last_checkpoint.borrow().clone().unwrap();
                        if let Some(r) = &resume {
                            assert!(&cp > r, "checkpoint {cp:?} does not advance past {r:?}");
                        }
                        resume = Some(cp);
                    }
                }
            }
        }
        (found, donations)
    }

    #[test]
    fn stops_resumes_and_donations_cover_exactly_once() {
        let n = 7;
        let everything: BTreeSet<Vec<u8>> = permutations(n).into_iter().collect();
        for (k, dir) in kernels(n).into_iter().flat_map(|k| DIRS.map(|d| (k, d))) {
            for interval in [1, 3, 17] {
                for (stop, split) in [(Some(1), None), (None, Some(1)), (Some(3), Some(2))] {
                    let mut s = searcher_in(n, dir);
                    s.set_kernel(k).unwrap();
                    s.set_check_interval(interval);
                    let (found, donations) =
                        drive(&mut s, Mode::Prove(0), vec![(vec![], None)], stop, split);
                    assert_eq!(
                        as_set(&found),
                        everything,
                        "{k} {dir:?} {interval} {stop:?} {split:?}"
                    );
                    if split.is_some() {
                        assert!(donations > 0);
                    }
                }
            }
        }
    }

    #[test]
    fn donation_under_a_limit_that_cuts_a_subtree() {
        let n = 7;
        let all = permutations(n);
        for (dir, limit) in [
            (Direction::Forward, vec![4u8, 2, 6, 3]),
            (Direction::Forward, vec![2, 7, 5]),
            (Direction::Forward, vec![6, 1]),
            (Direction::Forward, vec![3, 4, 2, 5, 7, 1]),
            (Direction::Backward, vec![4u8, 2, 6, 3]),
            (Direction::Backward, vec![3, 7, 5]),
            (Direction::Backward, vec![6, 1]),
            (Direction::Backward, vec![3, 4, 2, 5, 3, 1]),
        ] {
            let mut s = searcher_in(n, dir);
            s.set_check_interval(1);
            let want: BTreeSet<Vec<u8>> = all
                .iter()
                .filter(|d| path_in(d, dir).0 < limit)
                .cloned()
                .collect();
            let (found, donations) = drive(
                &mut s,
                Mode::Prove(0),
                vec![(vec![], Some(limit.clone()))],
                None,
                Some(1),
            );
            assert!(donations > 0);
            assert_eq!(as_set(&found), want, "limit {limit:?} {dir:?}");
        }
    }

    #[test]
    fn discovery_finds_the_maximum_with_stops_and_donations() {
        let n = 8;
        for dir in DIRS {
            let mut s = searcher_in(n, dir);
            s.set_check_interval(50);
            let (found, _) = drive(
                &mut s,
                Mode::Discover,
                vec![(vec![], None)],
                Some(2),
                Some(3),
            );
            assert_eq!(found.iter().map(|f| f.1).max(), Some(KNOWN_F[n]), "{dir:?}");
        }
    }

    /// Every kernel flips like the byte-array one, for every size up to its width.
    #[test]
    fn kernels_agree_on_flips() {
        use simd::{Bytes, Deck};
        fn check<D: Deck>(width: u32) {
            let mut state = 0x9e37_79b9_7f4a_7c15u64;
            for round in 0..2000 {
                let mut bytes = [0u8; 32];
                for b in bytes.iter_mut() {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    *b = state as u8;
                }
                let w = width as usize;
                let k = 1 + round % width;
                let want = Bytes(bytes).flip(k).store();
                assert_eq!(D::load(&bytes).flip(k).store()[..w], want[..w], "flip {k}");
                bytes[0] = k as u8;
                let want = Bytes(bytes).flip(k).store();
                assert_eq!(
                    D::load(&bytes).flip_top(k).store()[..w],
                    want[..w],
                    "top {k}"
                );
                let assigned = D::load(&bytes).assign_flip(k).store();
                assert_eq!(assigned[..w], want[..w], "assign {k}");
                assert_eq!(D::load(&bytes).top(), k);
                let m = 1 + (round * 7) % width;
                assert_eq!(D::load(&bytes).lower(m), lower(&bytes, m));
                // Backward-search helpers, on bytes with planted matches and unknowns.
                for (i, b) in bytes.iter_mut().enumerate().take(w) {
                    if (round as usize + i).is_multiple_of(3) {
                        *b = i as u8 + 1;
                    }
                }
                let lanes = below(width);
                let b = Bytes(bytes);
                assert_eq!(D::load(&bytes).matches() & lanes, b.matches() & lanes);
                assert_eq!(D::load(&bytes).unknowns() & lanes, b.unknowns() & lanes);
                assert_eq!(D::load(&bytes).inert(m) & lanes, b.inert(m) & lanes);
                assert_eq!(
                    D::load(&bytes).set_top(k).store()[..w],
                    b.set_top(k).store()[..w]
                );
            }
        }
        check::<Bytes>(32);
        #[cfg(target_arch = "x86_64")]
        if simd::available() {
            check::<simd::Narrow>(16);
            check::<simd::Wide>(32);
        }
    }

    fn path_strategy() -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(0u8..=8, 0..7)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Range restriction: exactly the decks whose leaf path is in [resume, limit) under
        /// the prefix, for a pruned proof search too.
        #[test]
        fn ranges_select_exactly_their_leaves(
            resume in prop::option::of(path_strategy()),
            limit in prop::option::of(path_strategy()),
            prefix_pick in 0usize..1000,
            depth in 0usize..4,
            target in prop::sample::select(vec![0u32, 4, 9]),
            skip in any::<bool>(),
            backward in any::<bool>(),
        ) {
            let n = 6;
            let dir = if backward { Direction::Backward } else { Direction::Forward };
            let mut s = searcher_in(n, dir);
            s.set_skip_fixed_points(skip);
            let prefixes = s.prefixes(depth);
            let prefix = prefixes[prefix_pick % prefixes.len()].clone();
            let want: BTreeSet<Vec<u8>> = permutations(n)
                .into_iter()
                .filter(|d| {
                    let (p, f) = path_in(d, dir);
                    p.starts_with(&prefix)
                        && resume.as_ref().is_none_or(|r| &p >= r)
                        && limit.as_ref().is_none_or(|l| &p < l)
                        && f as u32 >= target
                        && !(skip && has_fixed_point(d))
                })
                .collect();
            let obs = Rec::new();
            s.search(&prefix, resume.as_deref(), limit.as_deref(), Mode::Prove(target), &obs)
                .unwrap();
            prop_assert_eq!(as_set(&obs.found.borrow()), want);
        }

        /// Random stop / split schedules over random units: every deck exactly once.
        #[test]
        fn schedules_cover_exactly_once(
            interval in 1u64..40,
            stop in prop::option::of(1u64..4),
            split in prop::option::of(1u64..4),
            depth in 0usize..3,
            target in prop::sample::select(vec![0u32, 6, 12]),
            backward in any::<bool>(),
        ) {
            let n = 7;
            let dir = if backward { Direction::Backward } else { Direction::Forward };
            let mut s = searcher_in(n, dir);
            s.set_check_interval(interval);
            let units = s.prefixes(depth).into_iter().map(|p| (p, None)).collect();
            let (found, _) = drive(&mut s, Mode::Prove(target), units, stop, split);
            let mut count: BTreeMap<Vec<u8>, usize> = BTreeMap::new();
            for (d, _) in found {
                *count.entry(d).or_default() += 1;
            }
            let want: BTreeMap<Vec<u8>, usize> = permutations(n)
                .into_iter()
                .filter(|d| count_flips(d).unwrap() as u32 >= target)
                .map(|d| (d, 1))
                .collect();
            prop_assert_eq!(count, want);
        }
    }
}
