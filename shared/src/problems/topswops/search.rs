//! Exact Topswops search: Knuth's forward search over decks of unknown cards, or Pepperdine's
//! backward search from the last deck, with pruning, checkpoints (resume), lexicographic upper
//! limits and stack-splitting donation. Everything
//! here is single-threaded per call; the caller runs many units concurrently.
//!
//! The two directions share everything but their trees: `forward.rs` and `backward.rs` each
//! say what a node is, which children are worth trying and how a child is entered (in plain
//! bytes for roots, replays and leaves, `tree::PlainNode`; in a deck kernel for the hot path,
//! `core::Tree`). `core.rs` is the one depth-first search over either tree (stack, ranges,
//! checkpoints, donation, leaf reports), `tree.rs` replays paths, lists prefixes and fills a
//! leaf's unknown cards, `range.rs` compares paths with units, `simd.rs` holds the deck
//! kernels and `bits.rs` the bit-set helpers.
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
mod bits;
mod core;
mod forward;
mod range;
mod simd;
mod tree;

pub use forward::leaf_path;
use tree::PlainNode;

/// Largest supported deck size.
pub const MAX_N: usize = 32;

/// Most concrete decks one leaf may expand to in proof mode (one leaf with r unknown cards is
/// r! decks: 9 unknown cards fit, 10 do not).
pub const MAX_LEAF_DECKS: u64 = 1_000_000;

/// Default number of nodes between two checkpoints / progress reports / stop and split checks.
pub const DEFAULT_CHECK_INTERVAL: u64 = 1 << 22;

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
    fn progress(&self, _nodes: u64) {}
    /// A checkpoint: the current branch path (resume from here).
    fn checkpoint(&self, _path: &[u8]) {}
    /// Stop now (the caller saves the last checkpoint).
    fn should_stop(&self) -> bool {
        false
    }
    /// The coordinator wants work donated.
    fn should_split(&self) -> bool {
        false
    }
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
            Direction::Forward => tree::replay::<forward::Plain>(self.n, &self.tail, path).is_ok(),
            Direction::Backward => {
                tree::replay::<backward::Plain>(self.n, &self.tail, path).is_ok()
            }
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
        let (n, tail) = (self.n, &self.tail);
        let done = match self.direction {
            Direction::Forward => {
                let root = forward::Plain::root(n);
                tree::enumerate(tail, &root, &mut path, depth, after, max, &mut out)
            }
            Direction::Backward => {
                let root = backward::Plain::root(n);
                tree::enumerate(tail, &root, &mut path, depth, after, max, &mut out)
            }
        };
        (out, done)
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
        let (need, skip) = match mode {
            Mode::Prove(target) => (target, self.skip_fixed_points),
            Mode::Discover => (obs.bound().map_or(0, |b| b.saturating_add(1)), true),
        };
        let goal = core::Goal {
            n: self.n,
            tail: &self.tail,
            kernel: self.kernel,
            need,
            discover: mode == Mode::Discover,
            skip,
            interval: self.check_interval,
            obs,
        };
        let (n, stats) = (self.n, &mut self.stats);
        match self.direction {
            Direction::Forward => {
                let tree = forward::Forward { tail: self.tail };
                core::search::<_, { forward::STACK }>(tree, prefix, resume, limit, goal, stats)
            }
            Direction::Backward => {
                backward::check_depth(n, &self.tail, prefix)?;
                let tree = backward::Backward::new(n, self.tail, skip);
                core::search::<_, { backward::STACK }>(tree, prefix, resume, limit, goal, stats)
            }
        }
    }
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

#[cfg(test)]
mod tests;
