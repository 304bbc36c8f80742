//! Exact branch-and-bound over pairings (selected number, principal factor).
//!
//! # Why pairings
//!
//! Every move K crosses out a principal factor K/p (p prime) that no other move uses: the
//! largest remaining proper divisor d of K is one (if K/d had a prime q with d*q < K, then
//! d*q would remain, since whatever crossed it out would have crossed out d). So a game is a
//! set of pairs (K, K/p), each number in at most one pair, that can be *ordered*: pair i must
//! come before pair j whenever i's factor divides j's number (else j would cross it out
//! first). Conversely, any pairing whose "must precede" relation is acyclic is played in a
//! topological order, and the game can then only gain by finishing. So the optimum is the
//! heaviest acyclic pairing, and move order matters only through cycles.
//!
//! The largest prime P (> N/2) takes 1 first in some optimal game: a prime can only be
//! played first (its only proper divisor is 1), P is no other number's factor, and swapping
//! the first pair for (P, 1), or adding (P, 1) in front, keeps the order acyclic and does not
//! lower the score. The root fixes (P, 1).
//!
//! # The tree
//!
//! A node is a set of *fixed* pairs and *excluded* edges. Its bound is the fixed score plus
//! the heaviest matching of the remaining graph ([`Matching`]): pruned when it cannot beat the
//! incumbent. If the matched and fixed pairs have no precedence cycle, the matching is a game
//! and the node is a leaf. Otherwise one cycle C is chosen, and since some non-fixed pair
//! e_0..e_{k-1} of C must go, the node has k children: child i fixes e_0..e_{i-1} and
//! excludes e_i (the pairs in increasing order of their numbers, or decreasing:
//! [`Searcher::set_largest_first`]). The children partition the node's games, so the search is exact. (All
//! exactness needs is that the children *cover* the node's games: every game of the node is
//! a game of some child. Cluster branching, below, covers without partitioning; a game in
//! two children is merely seen twice.)
//!
//! # Cluster branching
//!
//! The bound is degenerate: a number K with r distinct primes has r equally heavy edges, so
//! excluding one pair of a cycle often lets the matching rotate the same numbers into a
//! second cycle (for N = 561, 225, 315, 525 with factors 75, 45, 105 and then with 45, 105,
//! 75), and the tree resolves the same handful of numbers over several levels, again in
//! every subtree of every other such resolution. Measured (`benches/sieve_tree.rs`): at
//! N = 561 the plain strong-branching tree branches 138,613 times on only 1,234 distinct
//! cycles, 99.9% of the branchings on a cycle branched on elsewhere too.
//!
//! Lemma. Let C be a cycle of the node with non-fixed pairs (K_1, b_1), ..., (K_k, b_k),
//! S = {K_i} and T = {b_i} (disjoint: they are matched pairs). Suppose every way of giving
//! each K_i its own element of T along a live edge of the node (an injection S -> T, so a
//! bijection) has a precedence cycle together with the node's fixed pairs F. Then every game
//! of the node has some K_i not matched to an element of T. Proof: a game of the node
//! contains F and uses live edges only; if all K_i were matched into T, those k pairs would
//! be such a bijection, and a subset of a game's pairs (with F) has no precedence cycle.
//!
//! So the node can branch on the first i with K_i not matched into T: child i excludes every
//! live edge between K_i and T, and, for every j < i, every live edge of K_j that does not
//! lead into T. Cover: take any game of the node and the least i with K_i not matched into
//! T (it exists by the lemma); the game uses no edge between K_i and T, and each K_j, j < i,
//! is matched into T, so uses no other edge: the game is a game of child i. The check
//! enumerates the bijections (a cycle has few pairs and a number few edges into T) and
//! tests each with F for a precedence cycle; when some bijection is acyclic, or every K_i
//! has only its own edge into T (the cycle's partition is then at least as strong), the
//! cycle is branched on as before. With strong branching ([`Searcher::set_strong_branching`])
//! a cycle's cluster children are one more candidate, weighed like the others; the choice,
//! like everything else, depends on the node and the reference alone.
//!
//! Any precedence cycle of the node's pairs gives such a partition, so which one is chosen
//! changes the tree's size, never its optimum. Exact campaigns use *strong branching*
//! ([`Searcher::set_strong_branching`]): up to a few cycles are tried (each found without
//! the non-fixed pairs of the ones before), each child's bound is computed, and the cycle
//! with the fewest children whose bound reaches a *reference* score (then the smallest total
//! excess) is branched on. The matching bound is highly degenerate (a number K has as many
//! equally heavy edges as distinct primes), so excluding one pair of a cycle often leaves
//! the bound where it was; a cycle whose children lose more is worth the extra work. The
//! reference is the campaign's starting game's score, fixed per N, so that the choice, like
//! everything else, depends on the node alone.
//!
//! A node is named by its *path* (child indices from the root). Depth-first order is the
//! lexicographic order of paths (a prefix before its extensions). Every step is
//! deterministic, so a path rebuilds the same node anywhere: units are subtrees named by a
//! path, with an optional exclusive *limit* path (after a donation); checkpoints are the path
//! of the next node to evaluate.

use std::sync::Arc;

use super::cuts::{self, Cut, Penalties};
use super::cycles::{CycleFinder, Cycles};
use super::game::order_pairing;
use super::matching::{Graph, Matching, Scratch};
use super::rank_cuts::RankPool;
use super::regions::{any_acyclic_assignment, RegionBound};
use super::side_lp::SideLp;
use super::warm_lp::NodeLp;

/// What the search tells its caller and asks it.
pub trait Observer {
    /// The best score known elsewhere: nodes that cannot beat it are pruned.
    fn bound(&self) -> Option<i64>;
    /// A leaf: an ordered, finished game (`moves`) scoring `score`.
    fn found(&self, moves: &[u32], score: i64);
    /// Nodes evaluated so far.
    /// (Default: ignored.)
    fn progress(&self, _nodes: u64) {}
    /// The path of the next node to evaluate: everything before it is done. (Default:
    /// ignored.)
    fn checkpoint(&self, _path: &[u16]) {}
    /// True when the search should stop (after a checkpoint). (Default: never.)
    fn should_stop(&self) -> bool {
        false
    }
    /// True when untried subtrees should be handed out. (Default: never.)
    fn should_split(&self) -> bool {
        false
    }
    /// Hands out `prefixes` (whole subtrees); the search then covers only paths before
    /// `limit`. Returns false when refused (the search then keeps the subtrees). (Default:
    /// refused.)
    fn donate(&self, _prefixes: Vec<Vec<u16>>, _limit: Vec<u16>) -> bool {
        false
    }
}

/// How a search ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SearchEnd {
    /// Everything in the unit was searched.
    Done,
    /// [`Observer::should_stop`] said so; the last checkpoint is the resume point.
    Stopped,
}

/// What a node turned out to be.
enum Eval {
    /// Cannot beat the incumbent.
    Pruned,
    /// An acyclic pairing: the node's optimum.
    Leaf(Vec<(u32, u32)>),
    /// The children, in branching order.
    Branch(Vec<Child>),
}

/// One child of a branching node.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Child {
    /// The edges (big, small) the child excludes.
    pub exclude: Vec<(u32, u32)>,
    /// The matched pair the node fixes for the children after this one (branching on a
    /// cycle's pairs), if any.
    pub then_fix: Option<(u32, u32)>,
}

impl Child {
    /// The numbers the child's edges touch.
    fn numbers(&self) -> impl Iterator<Item = u32> + '_ {
        self.exclude.iter().flat_map(|&(a, b)| [a, b])
    }
}

/// A cycle's non-fixed pairs as a partition: child i fixes e_0..e_{i-1} and excludes e_i.
fn cycle_children(branches: &[(u32, u32)]) -> Vec<Child> {
    branches
        .iter()
        .map(|&e| Child {
            exclude: vec![e],
            then_fix: Some(e),
        })
        .collect()
}

/// True when every child of `frame` still to visit is built (by strong branching) and its
/// bound, with the cuts the frame inherited, is already at most `best`: cuts derived at the
/// frame could prune nothing more.
fn children_pruned(frame: &Frame, best: Option<i64>) -> bool {
    let Some(best) = best else {
        return false;
    };
    frame.prepared.len() >= frame.end
        && frame.prepared[frame.next..frame.end]
            .iter()
            .all(|c| c.as_ref().is_some_and(|m| m.bound() <= best))
}

/// A strong branching cost (children whose bound reaches the reference, their total excess).
type Cost = (usize, i64);

/// Adds a child whose bound exceeds the reference by `excess` to an option's cost (a child
/// below the reference, `excess < 0`, adds nothing); true when it counted.
fn count_child(cost: &mut Cost, excess: i64) -> bool {
    if excess < 0 {
        return false;
    }
    cost.0 += 1;
    cost.1 += excess + 1;
    true
}

/// True when an option's `cost` so far (which only grows) rules it out against `cutoff`:
/// the best cost so far, and whether a tie loses (the option comes after the best one).
fn beyond(cost: Cost, cutoff: Option<(Cost, bool)>) -> bool {
    cutoff.is_some_and(|(c, ties_lose)| cost > c || (ties_lose && cost == c))
}

/// The option of the least cost, the first of them in index order, weighed in `order` (a
/// permutation of the indices): `weigh(j, cutoff)` is option j's cost and what it built, or
/// `None` once its cost is [`beyond`] the cutoff. Returns its index and what it built.
fn first_least<T>(
    order: impl IntoIterator<Item = usize>,
    mut weigh: impl FnMut(usize, Option<(Cost, bool)>) -> Option<(Cost, T)>,
) -> (usize, T) {
    let mut best: Option<(Cost, usize, T)> = None;
    for j in order {
        // Nothing costs less than (0, 0): only an earlier option could still be taken.
        if best.as_ref().is_some_and(|b| b.0 == (0, 0) && b.1 < j) {
            continue;
        }
        // An option after the best one must cost less to be taken; one before it, no more.
        let cutoff = best.as_ref().map(|b| (b.0, j > b.1));
        if let Some((cost, built)) = weigh(j, cutoff) {
            best = Some((cost, j, built));
        }
    }
    let (_, j, built) = best.expect("the first option weighed has no cutoff");
    (j, built)
}

/// Counters of one search.
#[derive(Clone, Copy, Debug, Default)]
pub struct SearchStats {
    /// Nodes evaluated.
    pub nodes: u64,
    /// Leaves reached (acyclic matchings that beat the incumbent).
    pub leaves: u64,
    /// Nodes pruned by the region bound alone ([`Searcher::set_region_bound`]).
    pub region_pruned: u64,
}

/// One level of the depth-first stack.
struct Frame {
    /// The node with the pairs of children 0..next-1 fixed.
    base: Matching,
    branches: Vec<Child>,
    /// Children already built (by strong branching), taken as they are visited.
    prepared: Vec<Option<Matching>>,
    next: usize,
    end: usize,
    /// Length of the node's path.
    depth: usize,
    /// Nodes evaluated before this frame was pushed (its subtree's size is the difference).
    nodes_before: u64,
    /// The cuts of the shadow its children inherit ([`Searcher::set_node_cuts`]), and
    /// whether they were derived at this frame.
    cuts: Option<Arc<Vec<Cut>>>,
    cuts_derived: bool,
    /// The cut LP solved at the nearest deriving frame (this one or above), when the LP is
    /// kept warm ([`Searcher::set_warm_lp`]).
    lp: Option<Arc<NodeLp>>,
    /// The same LP in its primal form, when [`Searcher::set_side_lp`] asks for it.
    side: Option<Arc<SideLp>>,
    /// The rank cuts this frame's subtree may use: the searcher's pool, with the cuts of
    /// the nearest frame above that proved its own added ([`Searcher::set_local_ranks`]).
    ranks: Option<Arc<RankPool>>,
    /// Whether this frame has proved rank cuts of its own (or tried to).
    ranks_tried: bool,
}

/// The search over one instance (N). Cheap to clone per unit.
pub struct Searcher {
    graph: Graph,
    root: Matching,
    scratch: Scratch,
    cycles: CycleFinder,
    stats: SearchStats,
    check_every: u64,
    shuffle: Option<u64>,
    /// Strong branching's reference score and number of candidate cycles.
    strong: Option<(i64, usize)>,
    /// A cycle's children take its pairs largest number first ([`Searcher::set_largest_first`]).
    largest_first: bool,
    /// The tree's shape, when profiling ([`Searcher::set_profile`]).
    profile: Option<Box<TreeProfile>>,
    /// The region bound's state and how many disjoint cycles it prices (0 = off).
    regions: Option<RegionBound>,
    region_cycles: usize,
    /// Cluster branching ([`Searcher::set_cluster_branching`]).
    cluster: bool,
    /// The children of the last node evaluated, as strong branching built them.
    prepared: Option<Vec<Matching>>,
    /// Cut bounds re-derived in the tree: after this many nodes under a frame
    /// ([`Searcher::set_node_cuts`]).
    node_cuts_after: Option<u64>,
    /// Cut bounds derived in the tree so far.
    cuts_derived: u64,
    /// Side LPs built from scratch in the tree so far ([`Searcher::side_lps_built`]).
    side_lps_built: u64,
    /// Node cuts re-optimize the nearest deriving ancestor's LP instead of deriving anew.
    warm_lp: bool,
    side_lp: bool,
    /// Rank cuts proven for this N, joining the side LP where its optimum violates them
    /// ([`Searcher::set_rank_pool`]).
    rank_pool: Option<Arc<RankPool>>,
    /// The side LP of the search's root, which a unit's first frame re-optimizes instead
    /// of building its own ([`Searcher::set_root_side_lp`]).
    root_side: Option<Arc<SideLp>>,
    /// Frames prove rank cuts of their own once their subtree takes this many nodes, of
    /// unions of at most this many numbers ([`Searcher::set_local_ranks`]).
    local_ranks: Option<(u64, usize)>,
    /// Weight units per point of the shadows the side LP's penalties shade
    /// ([`Searcher::set_shade_scale`]).
    shade_scale: i32,
    /// Rank cuts proven in the tree so far: candidates, cuts, seconds
    /// ([`Searcher::local_rank_work`]).
    local_rank_work: (u64, u64, f64),
    /// Pivots and edits of the warm re-optimizations so far.
    warm_work: (u64, u64),
    /// Warm LPs solved afresh with the cuts they missed, once this many nodes old
    /// ([`Searcher::set_cut_refresh`]).
    cut_refresh: Option<u64>,
    /// Derivations left out (every child pruned without them) and warm LPs refreshed.
    derivations_skipped: u64,
    refreshes: u64,
    /// Tests: strong branching weighs its options in their first order (the reference the
    /// order it uses must agree with).
    #[cfg(test)]
    first_order: bool,
}

/// The shape of a searched tree (measurement only: [`Searcher::set_profile`]).
#[derive(Clone, Debug, Default)]
pub struct TreeProfile {
    /// Nodes evaluated at each depth (path length).
    pub nodes_at: Vec<u64>,
    /// Branching nodes at each depth.
    pub branches_at: Vec<u64>,
    /// How often each cycle (its non-fixed pairs; for a cluster, every edge its children
    /// exclude; sorted) was branched on.
    pub cycles: std::collections::HashMap<Vec<(u32, u32)>, u64>,
    /// Branching nodes whose cycle shares a number with its parent's cycle.
    pub touches_parent: u64,
    /// Branching nodes whose cycle shares a number with some ancestor's cycle (parent
    /// included).
    pub touches_ancestor: u64,
    /// Branching nodes with a parent (depth > 0).
    pub with_parent: u64,
}

/// Rounds of cut finding when the node cuts are derived ([`Searcher::set_node_cuts`]):
/// measured at N = 737 (BENCHMARKS.md), one round prunes more per second than none or 40.
const NODE_CUT_ROUNDS: usize = 1;

/// How many nodes old a warm LP must be before [`Searcher::set_cut_refresh`] gives it new
/// cuts, in exact campaigns with node cuts. With microlp's LP, solved afresh on a refresh,
/// 100 beat 0, 300 and 2000 on four units of N = 785; with the primal form
/// ([`Searcher::set_side_lp`]), which takes new cuts as rows of the warm LP, 0 (every
/// node left above the bar) beat 100 by 11% on four units (BENCHMARKS.md).
pub const CUT_REFRESH_AGE: u64 = 0;

/// Rounds of cut finding where a warm LP is first built ([`Searcher::set_warm_lp`]).
const WARM_LP_ROUNDS: usize = 40;

/// A refresh drops the side LP's cut rows that its optimum leaves at least this far below
/// their bound before it adds the new ones ([`SideLp::at_trimmed`]): a descendant that needs
/// one again finds it again. Measured on twelve 791 units (BENCHMARKS.md, "Loose cut rows
/// dropped at each refresh"): 1/2 beat keeping every row, 1/4, 1 and 2.
const LOOSE_CUT_SLACK: f64 = 0.5;

/// Most refresh rounds ([`Searcher::set_cut_refresh`]) at a unit's first frame, whose LP
/// is the root's re-optimized ([`Searcher::set_root_side_lp`]). Measured on 119 units of
/// N = 791 drawn at random (BENCHMARKS.md, "Units warm from the root's LP"): 4 took 35.3k
/// nodes, as 8 and 16 did, against 35.9k with 2 and 41.9k with 1.
const UNIT_ROOT_ROUNDS: usize = 4;

/// Most rounds of rank cuts ([`Searcher::set_rank_pool`]) at an LP built afresh.
const RANK_ROUNDS: usize = 10;

/// Most rank cuts added to the LP at once.
const RANK_BATCH: usize = 50;

/// Steps a rank search in the tree may take before it gives up.
const LOCAL_RANK_BUDGET: u64 = 200_000;

/// Largest prime <= n (n >= 2).
pub fn largest_prime(n: u32) -> u32 {
    (2..=n)
        .rev()
        .find(|&p| (2..).take_while(|d| d * d <= p).all(|d| p % d != 0))
        .unwrap_or(0)
}

impl Searcher {
    /// The search for 1..=n.
    pub fn new(n: u32) -> Searcher {
        let graph = Graph::new(n);
        let mut scratch = Scratch::default();
        let root = Matching::new(&graph, &Searcher::root_pairs(n), &mut scratch);
        Searcher {
            cycles: CycleFinder::new(n),
            graph,
            root,
            scratch,
            stats: SearchStats::default(),
            check_every: 256,
            shuffle: None,
            strong: None,
            largest_first: false,
            profile: None,
            regions: None,
            region_cycles: 0,
            cluster: false,
            prepared: None,
            node_cuts_after: None,
            cuts_derived: 0,
            side_lps_built: 0,
            warm_lp: false,
            side_lp: false,
            rank_pool: None,
            root_side: None,
            local_ranks: None,
            shade_scale: 1,
            local_rank_work: (0, 0, 0.0),
            warm_work: (0, 0),
            cut_refresh: None,
            derivations_skipped: 0,
            refreshes: 0,
            #[cfg(test)]
            first_order: false,
        }
    }

    /// The root's fixed pairs: (P, 1) for the largest prime P (see the module docs).
    pub fn root_pairs(n: u32) -> Vec<(u32, u32)> {
        if n >= 2 {
            vec![(largest_prime(n), 1)]
        } else {
            Vec::new()
        }
    }

    /// Bounds every node also by the Lagrangian bound of cluster cuts ([`super::cuts`]):
    /// each node's matching carries a shadow matching of the penalized graph, kept in step,
    /// and a node's bound is the smaller of the two. Branching, leaves and the region bound
    /// (strong branching included) still use the plain matching, so the tree stays the same
    /// and is pruned sooner. Measured (`benches/sieve_tree.rs --cuts`, BENCHMARKS.md): with
    /// penalties fixed at the root, 16-26% fewer nodes at N = 500 and 561 but 35-43% more
    /// time, since every node keeps two matchings; exact campaigns leave it off. Errors
    /// name a cut that is not a cluster.
    pub fn set_cut_penalties(&mut self, penalties: &Penalties) -> Result<(), String> {
        let mut penalized = Graph::new(self.n());
        cuts::apply(&mut penalized, penalties)?;
        self.root = self
            .root
            .clone()
            .with_shadow(Arc::new(penalized), &mut self.scratch);
        Ok(())
    }

    /// Cut bounds derived in the tree: once a branching node's subtree has taken `after`
    /// nodes, the cluster cuts are derived at the node ([`cuts::derive_at`]: clusters of its
    /// live graph with its fixed pairs, penalties from the dual LP of its live edges,
    /// warm-started from the cuts its nearest such ancestor derived) and its remaining
    /// children carry their penalized matching as a shadow ([`Matching::with_shadow`]), so
    /// that each is bounded by the smaller of the two bounds. Shadows only prune: the tree's
    /// nodes, and so its paths, stay the same (branching uses the plain matching). A
    /// derivation costs as much as several hundred nodes (at N = 737, 0.1 s against 0.16 ms
    /// a node), so exact campaigns leave it off (BENCHMARKS.md). `None` turns it off.
    pub fn set_node_cuts(&mut self, after: Option<u64>) {
        self.node_cuts_after = after;
    }

    /// Node cuts from one LP kept warm down the tree ([`super::warm_lp`]): the first
    /// deriving node on a path (one whose subtree took the nodes [`Searcher::set_node_cuts`]
    /// asks) derives its cuts in full, and every branching node below it re-optimizes its
    /// nearest deriving ancestor's LP for its own live edges instead of deriving anew (the
    /// cuts stay those of the first node).
    pub fn set_warm_lp(&mut self, on: bool) {
        self.warm_lp = on;
    }

    /// Keeps the warm LP ([`Searcher::set_warm_lp`]) in its primal form, re-optimized by
    /// [`super::side_lp`]'s forest simplex instead of microlp; a refresh adds its new cuts
    /// as rows of the warm LP instead of solving afresh. Its penalties can differ from
    /// microlp's (another optimal vertex), so the pruning can too; the tree does not.
    pub fn set_side_lp(&mut self, on: bool) {
        self.side_lp = on;
    }

    /// Lets the side LP ([`Searcher::set_side_lp`]) take the rank cuts of `pool` (proven for
    /// this N, [`super::rank_cuts`]) that its optimum violates: at each LP built afresh, in
    /// up to `RANK_ROUNDS` (10) rounds, and at each refresh. Like the node cuts they only prune.
    pub fn set_rank_pool(&mut self, pool: Option<Arc<RankPool>>) {
        self.rank_pool = pool;
    }

    /// Lets a frame without a side LP above it ([`Searcher::set_side_lp`]), a unit's
    /// first, re-optimize `lp` (the side LP of the root, [`Searcher::root_side_lp`]) for its
    /// node instead of building one from scratch. It only prunes: the same tree.
    pub fn set_root_side_lp(&mut self, lp: Option<Arc<SideLp>>) {
        self.root_side = lp;
    }

    /// Whether a unit's first frame re-optimizes the root's side LP
    /// ([`Searcher::set_root_side_lp`]).
    pub fn has_root_side_lp(&self) -> bool {
        self.root_side.is_some()
    }

    /// The side LP of the search's root, built as a frame without one above builds its
    /// own: the cuts of [`cuts::derive_all_at`], then the violated rank cuts of the pool
    /// ([`Searcher::set_rank_pool`]). `None` if its solve fails.
    pub fn root_side_lp(&mut self) -> Result<Option<SideLp>, String> {
        let root = self.node_at(&[])?;
        Ok(self.fresh_side_lp(&root, self.rank_pool.clone().as_deref()))
    }

    /// Rank cuts proven in the tree: once a branching node's subtree has taken `after`
    /// nodes, the node ranks the unions of two of its LP's tight clusters that its LP's
    /// optimum would violate ([`SideLp::linked_tight_pairs`], at most `max_union` numbers;
    /// with its fixed pairs, over its live edges: [`RankPool::proven_at`]), and keeps those
    /// whose rank is 2 below |S|. They hold for every game of its remaining children, whose
    /// LPs take them beside the searcher's pool ([`Searcher::set_rank_pool`], which must be
    /// set); the unions that failed are not ranked again below it. Like every node cut they
    /// only prune. `None` (the default): never.
    pub fn set_local_ranks(&mut self, local: Option<(u64, usize)>) {
        self.local_ranks = local;
    }

    /// Penalties of the side LP ([`Searcher::set_node_cuts`] with the warm LP) in
    /// `1/scale` points: each cut's penalty is its dual rounded down to a multiple of
    /// `1/scale` instead of a whole point, and the shadow matching weighs each point
    /// `scale` times ([`Graph::scaled`]), so the node's cut bound comes within a fraction
    /// of the LP's optimum instead of up to a point per cut above it. Only prunes. Default
    /// 1 (whole points). Errors if `scale` is below 1 or `scale * N` overflows a weight.
    pub fn set_shade_scale(&mut self, scale: i32) -> Result<(), String> {
        if scale < 1 || i64::from(scale) * i64::from(self.n()) > i64::from(i32::MAX) {
            return Err(format!(
                "shade scale {scale} out of range for N = {}",
                self.n()
            ));
        }
        self.shade_scale = scale;
        Ok(())
    }

    /// The rank cuts proven in the tree so far ([`Searcher::set_local_ranks`]): the
    /// candidates ranked, the cuts kept, the seconds it took.
    pub fn local_rank_work(&self) -> (u64, u64, f64) {
        self.local_rank_work
    }

    /// Refreshes the warm LP's cuts ([`Searcher::set_warm_lp`]): where a node's warm
    /// penalties leave it above the bar and its LP was built at least `age` nodes ago, the
    /// clusters its penalized matching still forms join the LP's cuts and the LP is solved
    /// afresh there (a fresh solve costs a few warm ones; its cuts then serve the subtree).
    /// With the side LP ([`Searcher::set_side_lp`]) the clusters on the LP optimum's light
    /// precedence cycles join them too (`cuts::light_cycle_clusters`), and so do the
    /// violated cuts of the rank pool, while its loose rows go (`LOOSE_CUT_SLACK`). Like
    /// the node cuts it only prunes. `None` (the default): never.
    pub fn set_cut_refresh(&mut self, age: Option<u64>) {
        self.cut_refresh = age;
    }

    /// The refresh age set by [`Searcher::set_cut_refresh`].
    pub fn cut_refresh(&self) -> Option<u64> {
        self.cut_refresh
    }

    /// Whether the warm LP is kept in its primal form ([`Searcher::set_side_lp`]).
    pub fn side_lp(&self) -> bool {
        self.side_lp
    }

    /// Derivations left out because strong branching had already shown every child of the
    /// node pruned without them, and warm LPs refreshed ([`Searcher::set_cut_refresh`]), so
    /// far.
    pub fn derivations_skipped_and_refreshed(&self) -> (u64, u64) {
        (self.derivations_skipped, self.refreshes)
    }

    /// Cut bounds derived in the tree so far ([`Searcher::set_node_cuts`]).
    pub fn cuts_derived(&self) -> u64 {
        self.cuts_derived
    }

    /// Side LPs ([`Searcher::set_side_lp`]) built from scratch in the tree so far, at frames
    /// with none above them and no root LP to re-optimize ([`Searcher::set_root_side_lp`]).
    pub fn side_lps_built(&self) -> u64 {
        self.side_lps_built
    }

    /// Simplex pivots and LP edits of the warm re-optimizations so far
    /// ([`Searcher::set_warm_lp`]).
    pub fn warm_work(&self) -> (u64, u64) {
        self.warm_work
    }

    /// Cluster branching: a cycle whose selected numbers cannot all keep a factor among the
    /// cycle's factors (every such matching has a precedence cycle) may also be branched on
    /// by which of those numbers goes elsewhere (one child per number, all its edges into
    /// the factors excluded). Strong branching weighs it beside the cycle's own children;
    /// without strong branching it replaces them whenever it applies.
    pub fn set_cluster_branching(&mut self, on: bool) {
        self.cluster = on;
    }

    /// The region bound ([`super::regions`]): a node is also pruned when its bound less the
    /// least costs of resolving up to `cycles` disjoint precedence cycles of its matching
    /// cannot beat the incumbent (0 = off). It only prunes: the tree's nodes and their
    /// paths stay the same, and nodes that cannot hold a better game are skipped.
    pub fn set_region_bound(&mut self, cycles: usize) {
        self.region_cycles = cycles;
        self.regions = (cycles > 0).then(|| RegionBound::new(self.n()));
    }

    /// Records the shape of the tree searched from now on ([`Searcher::profile`]).
    pub fn set_profile(&mut self, on: bool) {
        self.profile = on.then(Box::default);
    }

    /// The tree's shape so far, when profiling.
    pub fn profile(&self) -> Option<&TreeProfile> {
        self.profile.as_deref()
    }

    /// N.
    pub fn n(&self) -> u32 {
        self.graph.n()
    }

    /// The graph of the instance.
    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    /// Makes the search a neighbourhood search: its root has the pairs `fixed` and none of
    /// the numbers `removed` (instead of the whole graph with (P, 1) fixed); the counters
    /// restart. Paths then name nodes of this restricted tree.
    pub fn restrict(&mut self, fixed: &[(u32, u32)], removed: &[u32]) {
        self.root = Matching::restricted(&self.graph, fixed, removed, &mut self.scratch);
        self.stats = SearchStats::default();
    }

    /// Removes the edge (big, small) from the root (a neighbourhood search that must not
    /// use that pair; the root's matching stays optimal).
    pub fn exclude_at_root(&mut self, big: u32, small: u32) {
        self.root
            .exclude(&self.graph, big, small, &mut self.scratch);
    }

    /// The root's upper bound (the heaviest matching with (P, 1) fixed).
    pub fn root_bound(&self) -> i64 {
        self.root.bound()
    }

    /// A quick game: the root's matching played in precedence order, dropping the cheapest
    /// pair whenever a cycle blocks it, then finished greedily.
    pub fn greedy_game(&self) -> (Vec<u32>, i64) {
        let moves = super::game::repair_pairing(self.n(), &self.root.pairs());
        let score = moves.iter().map(|&m| i64::from(m)).sum();
        (moves, score)
    }

    /// The region bound's outcome counters (see [`RegionBound::outcomes`]).
    pub fn region_outcomes(&self) -> Option<[u64; 8]> {
        self.regions.as_ref().map(|r| r.outcomes)
    }

    /// Counters so far.
    pub fn stats(&self) -> SearchStats {
        self.stats
    }

    /// Nodes between two looks at the observer (bound, stop, split, checkpoint).
    pub fn set_check_interval(&mut self, nodes: u64) {
        self.check_every = nodes.max(1);
    }

    /// Visits children in a pseudo-random order drawn from `seed` (heuristic runs only: the
    /// paths of such a search do not name the same nodes as an ordered search).
    pub fn set_shuffle(&mut self, seed: Option<u64>) {
        self.shuffle = seed;
    }

    /// Orders a cycle's pairs largest number first when branching on its partition, so
    /// that child i fixes the pairs of the i largest numbers (off: smallest first). The
    /// children partition the node's games in any order, so the optimum never changes; the
    /// tree does: largest first gives exact campaigns 3 to 9 times fewer nodes (N = 700-741)
    /// (BENCHMARKS.md, "Solver version 7"). The neighbourhood search's repairs keep the
    /// smallest-first order, so its recorded runs replay as before.
    pub fn set_largest_first(&mut self, on: bool) {
        self.largest_first = on;
    }

    /// Strong branching: at every branching node, up to `candidates` precedence cycles
    /// (each found without the non-fixed pairs of those before it) are tried, and the one
    /// whose children have the fewest bounds at or above `reference` is branched on (then
    /// the smallest total excess; ties go to the earlier cycle). The choice depends on the
    /// node and `reference` only, so every search that names nodes of one tree by paths
    /// (the splitter, the units, the donation check) must use the same reference: an exact
    /// campaign uses its starting game's score. `None` branches on the first cycle.
    pub fn set_strong_branching(&mut self, reference: Option<i64>, candidates: usize) {
        self.strong = reference.map(|r| (r, candidates.max(1)));
    }

    /// The non-fixed pairs of a precedence cycle among the pairs `cycles` has left (in
    /// branching order), if there is one.
    fn cycle_branches(&mut self, m: &Matching, cycles: &mut Cycles) -> Option<Vec<(u32, u32)>> {
        let cycle = self.cycles.find(cycles, &|a| m.is_fixed(a))?;
        let mut branches: Vec<(u32, u32)> =
            cycle.into_iter().filter(|&(a, _)| !m.is_fixed(a)).collect();
        if self.largest_first {
            branches.sort_unstable_by(|a, b| b.cmp(a));
        } else {
            branches.sort_unstable();
        }
        Some(branches)
    }

    /// How good a cycle is to branch on: (children whose bound reaches `reference`, their
    /// total excess over it), smaller is better; and the children, unless cut off (once
    /// the cost exceeds `cutoff`, or reaches it when `ties_lose`).
    fn branching_cost(
        &mut self,
        m: &Matching,
        branches: &[Child],
        reference: i64,
        cutoff: Option<(Cost, bool)>,
    ) -> Option<(Cost, Vec<Matching>)> {
        let mut base = m.clone();
        let mut cost: Cost = (0, 0);
        let mut children = Vec::with_capacity(branches.len());
        for i in 0..branches.len() {
            // A child whose bound falls below the reference is left incomplete: its excess
            // is negative whatever it is exactly, and the search completes it if it needs it.
            let child = self.child(&mut base, branches, i, Some(reference));
            // The plain matching's bound, so that shadows never change the tree.
            let excess = if child.is_complete() {
                child.matching_bound() - reference
            } else {
                -1
            };
            children.push(child);
            // Costs only grow: once beyond the cutoff, this option cannot be taken.
            if count_child(&mut cost, excess) && beyond(cost, cutoff) {
                return None;
            }
        }
        Some((cost, children))
    }

    /// Makes sure `cycles` holds its first `count` cycles when the node has that many;
    /// false when it has fewer.
    fn find_cycles(&mut self, m: &Matching, cycles: &mut Cycles, count: usize) -> bool {
        while cycles.found.len() < count && !cycles.exhausted {
            if let Some(last) = cycles.found.last().cloned() {
                cycles.take_out(&last);
            }
            match self.cycle_branches(m, cycles) {
                Some(c) => cycles.found.push(c),
                None => cycles.exhausted = true,
            }
        }
        cycles.found.len() >= count
    }

    /// The children to branch into, from the node's disjoint `cycles` (see
    /// [`Searcher::set_strong_branching`] and [`Searcher::set_cluster_branching`]): the
    /// options are, for each candidate cycle in turn, its partition and then its cluster,
    /// and the first option of the least cost is taken.
    ///
    /// The options are weighed in another order, which gives the same choice sooner: the
    /// clusters last to first, then the partitions last to first. Measured on a subtree of
    /// N = 785 the option taken is on average the 17th of 23, and half of them are
    /// clusters; in this order the options cut off before their end build 26% fewer
    /// children than in the first order (BENCHMARKS.md, "Strong branching's options
    /// weighed in another order").
    fn choose_branches(
        &mut self,
        m: &Matching,
        fixed: &[(u32, u32)],
        cycles: &mut Cycles,
    ) -> Vec<Child> {
        let Some((reference, candidates)) = self.strong else {
            let cycle = cycles.found[0].clone();
            return self
                .cluster_children(m, fixed, &cycle)
                .unwrap_or_else(|| cycle_children(&cycle));
        };
        // The options in their first order, with whether each is a cluster.
        let mut options: Vec<(Vec<Child>, bool)> = Vec::new();
        for k in 0..candidates {
            if !self.find_cycles(m, cycles, k + 1) {
                break;
            }
            let cycle = cycles.found[k].clone();
            options.push((cycle_children(&cycle), false));
            if let Some(cluster) = self.cluster_children(m, fixed, &cycle) {
                options.push((cluster, true));
            }
        }
        let order = options
            .iter()
            .enumerate()
            .rev()
            .filter(|(_, o)| o.1)
            .chain(options.iter().enumerate().rev().filter(|(_, o)| !o.1))
            .map(|(j, _)| j)
            .collect::<Vec<usize>>();
        #[cfg(test)]
        let order = if self.first_order {
            (0..options.len()).collect()
        } else {
            order
        };
        let (j, built) = first_least(order, |j, cutoff| {
            self.branching_cost(m, &options[j].0, reference, cutoff)
        });
        self.prepared = Some(built);
        options.swap_remove(j).0
    }

    /// Cluster branching on a cycle (see the module docs): when every way of matching the
    /// cycle's selected numbers S one-to-one to its factors T along live edges, with the
    /// fixed pairs, has a precedence cycle, some number of S is matched outside T in every
    /// game; child i excludes every live edge between the i-th number of S and T, and the
    /// edges outside T of the numbers before it.
    fn cluster_children(
        &mut self,
        m: &Matching,
        fixed: &[(u32, u32)],
        cycle: &[(u32, u32)],
    ) -> Option<Vec<Child>> {
        if !self.cluster || cycle.len() < 2 {
            return None;
        }
        let tops: Vec<u32> = cycle.iter().map(|p| p.0).collect();
        let factors: Vec<u32> = cycle.iter().map(|p| p.1).collect();
        let options: Vec<Vec<(u32, u32)>> = tops
            .iter()
            .map(|&k| {
                m.live_edges(&self.graph, k)
                    .filter(|e| factors.contains(&e.other))
                    .map(|e| (e.big, if e.big == k { e.other } else { k }))
                    .collect()
            })
            .collect();
        if options.iter().all(|o| o.len() == 1) {
            // Only the cycle's own pairs: the cycle's partition is at least as strong.
            return None;
        }
        let mut chosen = fixed.to_vec();
        let (mut used, mut colour) = (Vec::new(), Vec::new());
        if any_acyclic_assignment(&options, &mut chosen, fixed.len(), &mut used, &mut colour) {
            return None;
        }
        // Child j also excludes, for every i < j, the edges of S's i-th number outside T: a
        // game whose first number matched outside T is the i-th lies in child i (the
        // numbers before it are matched into T, so they use none of those edges).
        let mut children = Vec::with_capacity(tops.len());
        let mut before: Vec<(u32, u32)> = Vec::new();
        for (&k, into) in tops.iter().zip(options) {
            let mut exclude = into;
            exclude.extend_from_slice(&before);
            children.push(Child {
                exclude,
                then_fix: None,
            });
            before.extend(
                m.live_edges(&self.graph, k)
                    .filter(|e| !factors.contains(&e.other))
                    .map(|e| (e.big, if e.big == k { e.other } else { k })),
            );
        }
        Some(children)
    }

    fn evaluate(&mut self, m: &mut Matching, best: Option<i64>) -> Eval {
        if best.is_some_and(|b| m.bound() <= b) {
            return Eval::Pruned;
        }
        if !m.is_complete() {
            // Left incomplete by strong branching: complete it, then the same test on the
            // node's exact bound.
            m.finish(&self.graph, &mut self.scratch);
            if best.is_some_and(|b| m.bound() <= b) {
                return Eval::Pruned;
            }
        }
        let mut cycles = Cycles::new(m.pairs());
        if !self.find_cycles(m, &mut cycles, 1) {
            return Eval::Leaf(cycles.pairs);
        }
        let fixed = m.fixed_pairs();
        if let Some(bar) = best.filter(|_| self.regions.is_some()) {
            // The region bound (see `regions`): prune when the cycles' costs add up to the
            // node's excess over the bar.
            let need = m.matching_bound() - bar;
            self.find_cycles(m, &mut cycles, self.region_cycles);
            let sets: Vec<Vec<u32>> = cycles
                .found
                .iter()
                .take(self.region_cycles)
                .map(|c| c.iter().flat_map(|&(a, b)| [a, b]).collect())
                .collect();
            let regions = self.regions.as_mut().expect("the region bound is on");
            let loss = regions.loss(&self.graph, m, &fixed, &sets, need);
            if loss >= need {
                self.stats.region_pruned += 1;
                return Eval::Pruned;
            }
        }
        match Some(self.choose_branches(m, &fixed, &mut cycles)) {
            None => Eval::Leaf(cycles.pairs),
            Some(mut branches) => {
                if let Some(seed) = self.shuffle.as_mut() {
                    self.prepared = None;
                    for i in (1..branches.len()).rev() {
                        *seed ^= *seed << 13;
                        *seed ^= *seed >> 7;
                        *seed ^= *seed << 17;
                        branches.swap(i, (*seed % (i as u64 + 1)) as usize);
                    }
                }
                Eval::Branch(branches)
            }
        }
    }

    /// Builds child `i` of a node whose children are `branches`, from `base` (the node with
    /// the pairs of the children before i fixed), and fixes child i's pair, if it has one,
    /// in `base` for the next sibling (when there is one). With a `floor`, the child is left
    /// incomplete once its bound is below it ([`Matching::exclude_above`]).
    fn child(
        &mut self,
        base: &mut Matching,
        branches: &[Child],
        i: usize,
        floor: Option<i64>,
    ) -> Matching {
        let c = &branches[i];
        let mut child = base.clone();
        for &(a, b) in &c.exclude {
            match floor {
                Some(floor) => child.exclude_above(&self.graph, a, b, floor, &mut self.scratch),
                None => child.exclude(&self.graph, a, b, &mut self.scratch),
            }
        }
        // The last child has no sibling after it to build from `base`.
        if let Some((a, b)) = c.then_fix.filter(|_| i + 1 < branches.len()) {
            base.fix(&self.graph, a, b, &mut self.scratch);
        }
        child
    }

    /// The node at `path` from the root, and the frames on the way (from depth `keep_from`
    /// on), with each frame's `end` cut by `limit`.
    fn descend(
        &mut self,
        path: &[u16],
        keep_from: usize,
        limit: Option<&[u16]>,
    ) -> Result<(Matching, Vec<Frame>), String> {
        let mut node = self.root.clone();
        let mut frames = Vec::new();
        for (d, &i) in path.iter().enumerate() {
            let Eval::Branch(branches) = self.evaluate(&mut node, None) else {
                return Err(format!("path {path:?}: node at depth {d} is a leaf"));
            };
            let i = i as usize;
            if i >= branches.len() {
                return Err(format!(
                    "path {path:?}: node at depth {d} has {} children",
                    branches.len()
                ));
            }
            let mut base = node;
            for c in &branches[..i] {
                if let Some((a, b)) = c.then_fix {
                    base.fix(&self.graph, a, b, &mut self.scratch);
                }
            }
            node = self.child(&mut base, &branches, i, None);
            if d >= keep_from {
                let end = end_under_limit(&path[..d], branches.len(), limit);
                frames.push(Frame {
                    base,
                    branches,
                    prepared: Vec::new(),
                    next: i + 1,
                    end,
                    depth: d,
                    nodes_before: self.stats.nodes,
                    cuts: None,
                    cuts_derived: false,
                    lp: None,
                    side: None,
                    ranks: self.rank_pool.clone(),
                    ranks_tried: false,
                });
            }
        }
        Ok((node, frames))
    }

    /// Searches the subtree at `prefix`, from `resume` (a path extending `prefix`) when
    /// given, up to (excluding) the path `limit` when given.
    pub fn search(
        &mut self,
        prefix: &[u16],
        resume: Option<&[u16]>,
        limit: Option<&[u16]>,
        obs: &dyn Observer,
    ) -> Result<SearchEnd, String> {
        let start = match resume {
            Some(r) if r.starts_with(prefix) => r,
            Some(r) => return Err(format!("resume path {r:?} is outside the unit {prefix:?}")),
            None => prefix,
        };
        let mut limit: Option<Vec<u16>> = limit.map(<[u16]>::to_vec);
        let (mut node, mut frames) = self.descend(start, prefix.len(), limit.as_deref())?;
        let mut path: Vec<u16> = start.to_vec();
        let mut best: Option<i64> = obs.bound();
        let mut since_check = 0u64;
        loop {
            // Look outside every so often.
            since_check += 1;
            if since_check >= self.check_every {
                since_check = 0;
                if let Some(b) = obs.bound() {
                    best = Some(best.map_or(b, |x| x.max(b)));
                }
                obs.progress(self.stats.nodes);
                obs.checkpoint(&path);
                if obs.should_stop() {
                    return Ok(SearchEnd::Stopped);
                }
                if obs.should_split() {
                    self.donate(&mut frames, &path, &mut limit, obs);
                }
            }
            self.stats.nodes += 1;
            self.prepared = None;
            let eval = self.evaluate(&mut node, best);
            let prepared = self.prepared.take();
            if let Some(profile) = self.profile.as_deref_mut() {
                profile.record(path.len(), &eval, &frames);
            }
            match eval {
                Eval::Pruned => {}
                Eval::Leaf(pairs) => {
                    self.stats.leaves += 1;
                    let moves = order_pairing(self.n(), &pairs)
                        .ok_or_else(|| format!("acyclic pairing {pairs:?} does not order"))?;
                    let score: i64 = moves.iter().map(|&m| i64::from(m)).sum();
                    if best.is_none_or(|b| score > b) {
                        best = Some(score);
                        obs.found(&moves, score);
                    }
                }
                Eval::Branch(branches) => {
                    let end = end_under_limit(&path, branches.len(), limit.as_deref());
                    let cuts = frames.last().and_then(|f| f.cuts.clone());
                    let lp = frames.last().and_then(|f| f.lp.clone());
                    let side = frames.last().and_then(|f| f.side.clone());
                    let ranks = match frames.last() {
                        Some(f) => f.ranks.clone(),
                        None => self.rank_pool.clone(),
                    };
                    frames.push(Frame {
                        base: node.clone(),
                        branches,
                        prepared: prepared
                            .map(|v| v.into_iter().map(Some).collect())
                            .unwrap_or_default(),
                        next: 0,
                        end,
                        depth: path.len(),
                        nodes_before: self.stats.nodes,
                        cuts,
                        cuts_derived: false,
                        lp,
                        side,
                        ranks,
                        ranks_tried: false,
                    });
                }
            }
            // Move to the next node in depth-first order.
            loop {
                let Some(top) = frames.last_mut() else {
                    obs.progress(self.stats.nodes);
                    return Ok(SearchEnd::Done);
                };
                if top.next >= top.end {
                    frames.pop();
                    continue;
                }
                if self.local_ranks_due(top) {
                    self.prove_local_ranks(top);
                }
                // A frame under a warm LP re-optimizes it at once (a few pivots); one
                // without derives from scratch only once its subtree has grown.
                if self.node_cuts_after.is_some_and(|after| {
                    self.stats.nodes - top.nodes_before >= after
                        || (self.warm_lp && top.lp.is_some())
                }) && !top.cuts_derived
                {
                    if top.next == 0 && children_pruned(top, best) {
                        top.cuts_derived = true;
                        self.derivations_skipped += 1;
                    } else {
                        self.derive_cuts(top, best)?;
                    }
                }
                let i = top.next;
                top.next += 1;
                path.truncate(top.depth);
                path.push(i as u16);
                node = match top.prepared.get_mut(i).and_then(Option::take) {
                    Some(built) => {
                        let last = i + 1 == top.branches.len();
                        if let Some((a, b)) = top.branches[i].then_fix.filter(|_| !last) {
                            top.base.fix(&self.graph, a, b, &mut self.scratch);
                        }
                        built
                    }
                    None => self.child(&mut top.base, &top.branches, i, None),
                };
                break;
            }
        }
    }

    /// Derives the cut bound at `frame`'s base (see [`Searcher::set_node_cuts`]) and makes it
    /// the shadow of its remaining children (those strong branching built are rebuilt);
    /// refreshes the warm LP where the bound leaves the node above `best`
    /// ([`Searcher::set_cut_refresh`]).
    fn derive_cuts(&mut self, frame: &mut Frame, best: Option<i64>) -> Result<(), String> {
        frame.cuts_derived = true;
        self.cuts_derived += 1;
        if self.warm_lp && self.side_lp {
            return self.derive_side_cuts(frame, best);
        }
        let penalties = if self.warm_lp {
            let lp = match frame.lp.as_deref() {
                Some(above) => above.at(&self.graph, &frame.base).inspect(|lp| {
                    let (before, after) = (above.work(), lp.work());
                    self.warm_work.0 += after.0 - before.0;
                    self.warm_work.1 += after.1 - before.1;
                }),
                None => {
                    let (_, _, pool) =
                        cuts::derive_all_at(&self.graph, &frame.base, Vec::new(), WARM_LP_ROUNDS);
                    self.fresh_lp(&frame.base, &pool)
                }
            };
            match lp {
                Some(lp) => {
                    let penalties = lp.penalties();
                    frame.lp = Some(Arc::new(lp));
                    penalties
                }
                None => Penalties::default(),
            }
        } else {
            let seeds = frame.cuts.as_deref().cloned().unwrap_or_default();
            cuts::derive_at(&self.graph, &frame.base, seeds, NODE_CUT_ROUNDS).0
        };
        let plain = frame.base.clone();
        frame.base = self.shaded(&plain, &penalties, frame.ranks.clone(), 1)?;
        let mut penalties = penalties;
        if let Some(fresh) = self.refreshed_lp(frame, best) {
            penalties = fresh.penalties();
            frame.lp = Some(Arc::new(fresh));
            frame.base = self.shaded(&plain, &penalties, frame.ranks.clone(), 1)?;
        }
        frame.cuts = Some(Arc::new(
            penalties.cuts.into_iter().map(|(c, _)| c).collect(),
        ));
        frame.prepared.clear();
        Ok(())
    }

    /// Whether `frame` should prove rank cuts of its own now ([`Searcher::set_local_ranks`]).
    fn local_ranks_due(&self, frame: &Frame) -> bool {
        let Some((after, _)) = self.local_ranks else {
            return false;
        };
        !frame.ranks_tried
            && frame.ranks.is_some()
            && frame.next < frame.end
            && self.stats.nodes - frame.nodes_before >= after
    }

    /// Proves rank cuts for `frame`'s base that its LP's optimum violates: unions of two
    /// tight clusters of the LP with flow between them ([`SideLp::linked_tight_pairs`]),
    /// ranked with the base's fixed pairs over its live edges ([`RankPool::proven_at`]).
    /// They join the rank cuts of its subtree, and its LP is derived again to take them.
    fn prove_local_ranks(&mut self, frame: &mut Frame) {
        frame.ranks_tried = true;
        let (Some((_, max_union)), Some(ranks), Some(lp)) = (
            self.local_ranks,
            frame.ranks.as_deref(),
            frame.side.as_deref(),
        ) else {
            return;
        };
        let candidates: Vec<(Vec<u32>, Vec<u32>)> = lp
            .linked_tight_pairs(&frame.base, max_union)
            .into_iter()
            .filter(|(s, t)| !ranks.has_sets(s, t))
            .collect();
        if candidates.is_empty() {
            return;
        }
        let start = std::time::Instant::now();
        self.local_rank_work.0 += candidates.len() as u64;
        let here = RankPool::proven_at(&self.graph, &frame.base, &candidates, LOCAL_RANK_BUDGET);
        self.local_rank_work.1 += here.cuts().len() as u64;
        self.local_rank_work.2 += start.elapsed().as_secs_f64();
        // The candidates that failed are not ranked again below (their rank could be lower
        // there: those cuts are given up).
        let mut grown = ranks.merged(&self.graph, &here);
        grown.tried(candidates);
        frame.ranks = Some(Arc::new(grown));
        if here.cuts().is_empty() {
            return;
        }
        frame.cuts_derived = false;
    }

    /// [`Searcher::derive_cuts`] with the primal LP of [`super::side_lp`].
    fn derive_side_cuts(&mut self, frame: &mut Frame, best: Option<i64>) -> Result<(), String> {
        let above = frame.side.clone().or_else(|| self.root_side.clone());
        let lp = match above.as_deref() {
            Some(above) => above.at(&self.graph, &frame.base, &[]).inspect(|lp| {
                self.warm_work.0 += lp.pivots - above.pivots;
            }),
            None => {
                self.side_lps_built += 1;
                self.fresh_side_lp(&frame.base, frame.ranks.as_deref())
            }
        };
        let Some(mut lp) = lp else {
            frame.prepared.clear();
            return Ok(());
        };
        let plain = frame.base.clone();
        let scale = self.shade_scale;
        let mut penalties = lp.penalties(&frame.base, scale);
        frame.base = self.shaded(&plain, &penalties, frame.ranks.clone(), scale)?;
        // A unit's first frame, warm from the root's LP, refreshes in rounds, as an LP
        // built afresh derives its cuts in rounds; every other frame once.
        let rounds = if frame.side.is_none() && self.root_side.is_some() {
            UNIT_ROOT_ROUNDS
        } else {
            1
        };
        for _ in 0..rounds {
            let due = self.cut_refresh.is_some_and(|age| {
                best.is_some_and(|b| frame.base.bound() > b)
                    && self.stats.nodes >= lp.built_at + age
            });
            if !due {
                break;
            }
            let known = lp.cuts_at(&frame.base);
            let shadow = frame.base.shadow().cloned();
            let mut missed: Vec<Cut> = shadow
                .map(|s| cuts::missed_cuts(&self.graph, &frame.base, &s))
                .unwrap_or_default()
                .into_iter()
                .filter(|c| !known.contains(c))
                .collect();
            // Also the clusters on the light precedence cycles of the LP's own optimum
            // (BENCHMARKS.md "Cuts from the LP's light cycles").
            let light = lp.fractional_pairs(&frame.base);
            for cut in cuts::light_cycle_clusters(&self.graph, &frame.base, &light) {
                if !known.contains(&cut) && !missed.contains(&cut) {
                    missed.push(cut);
                }
            }
            if let Some(ranks) = frame.ranks.as_deref() {
                missed.extend(lp.violated(&frame.base, ranks, RANK_BATCH));
            }
            if missed.is_empty() {
                break;
            }
            let fresh = lp.at_trimmed(&self.graph, &frame.base, &missed, LOOSE_CUT_SLACK);
            let Some(mut fresh) = fresh else { break };
            self.refreshes += 1;
            self.warm_work.0 += fresh.pivots - lp.pivots;
            fresh.built_at = self.stats.nodes;
            lp = fresh;
            penalties = lp.penalties(&frame.base, scale);
            frame.base = self.shaded(&plain, &penalties, frame.ranks.clone(), scale)?;
        }
        frame.side = Some(Arc::new(lp));
        frame.prepared.clear();
        Ok(())
    }

    /// The side LP built afresh at `node`: the cuts of [`cuts::derive_all_at`], then up to
    /// `RANK_ROUNDS` rounds of the rank cuts of `ranks` its optimum violates; dated now.
    fn fresh_side_lp(&self, node: &Matching, ranks: Option<&RankPool>) -> Option<SideLp> {
        let (_, _, pool) = cuts::derive_all_at(&self.graph, node, Vec::new(), WARM_LP_ROUNDS);
        let mut lp = SideLp::build(&self.graph, node, &pool)?;
        if let Some(ranks) = ranks {
            for _ in 0..RANK_ROUNDS {
                let violated = lp.violated(node, ranks, RANK_BATCH);
                if violated.is_empty() {
                    break;
                }
                match lp.at(&self.graph, node, &violated) {
                    Some(more) => lp = more,
                    None => break,
                }
            }
        }
        lp.built_at = self.stats.nodes;
        Some(lp)
    }

    /// `node` with the shadow of `penalties` (each checked a cluster at the node).
    fn shaded(
        &mut self,
        node: &Matching,
        penalties: &Penalties,
        ranks: Option<Arc<RankPool>>,
        scale: i32,
    ) -> Result<Matching, String> {
        let mut penalized = Graph::scaled(self.n(), scale);
        cuts::apply_at_with(&mut penalized, node, penalties, ranks.as_deref())?;
        Ok(node
            .clone()
            .with_shadow(Arc::new(penalized), &mut self.scratch))
    }

    /// The cut LP built and solved afresh at `node` with `cuts`, dated now.
    fn fresh_lp(&self, node: &Matching, cuts: &[Cut]) -> Option<NodeLp> {
        let mut lp = NodeLp::build(&self.graph, node, cuts)?;
        lp.built_at = self.stats.nodes;
        Some(lp)
    }

    /// The warm LP of `frame` solved afresh with the cuts its penalized matching still
    /// forms, when the refresh is due ([`Searcher::set_cut_refresh`]) and finds new cuts.
    fn refreshed_lp(&mut self, frame: &Frame, best: Option<i64>) -> Option<NodeLp> {
        let age = self.cut_refresh?;
        let lp = frame.lp.as_deref()?;
        if !self.warm_lp
            || best.is_none_or(|b| frame.base.bound() <= b)
            || self.stats.nodes < lp.built_at + age
        {
            return None;
        }
        let mut pool = lp.cuts();
        let known = pool.len();
        let shadow = frame.base.shadow()?;
        for cut in cuts::missed_cuts(&self.graph, &frame.base, shadow) {
            if !pool.contains(&cut) {
                pool.push(cut);
            }
        }
        if pool.len() == known {
            return None;
        }
        self.refreshes += 1;
        self.fresh_lp(&frame.base, &pool)
    }

    /// Hands the untried children of the shallowest frame that has some to the observer.
    fn donate(
        &mut self,
        frames: &mut [Frame],
        path: &[u16],
        limit: &mut Option<Vec<u16>>,
        obs: &dyn Observer,
    ) {
        let Some(frame) = frames.iter_mut().find(|f| f.next < f.end) else {
            return;
        };
        let prefixes: Vec<Vec<u16>> = (frame.next..frame.end)
            .map(|j| {
                let mut p = path[..frame.depth].to_vec();
                p.push(j as u16);
                p
            })
            .collect();
        let mut new_limit = path[..frame.depth].to_vec();
        new_limit.push(frame.next as u16);
        if obs.donate(prefixes, new_limit.clone()) {
            frame.end = frame.next;
            *limit = Some(new_limit);
        }
    }

    /// The node at `path` (its matching): for measurements of nodes' bounds. Errors on a
    /// path that names no node.
    pub fn node_at(&mut self, path: &[u16]) -> Result<Matching, String> {
        Ok(self.descend(path, usize::MAX, None)?.0)
    }

    /// The children of the node at `path` (their paths, or nothing for a leaf) and the
    /// node's bound; used by the splitter. Errors on a path that names no node.
    pub fn expand(&mut self, path: &[u16]) -> Result<Expansion, String> {
        let (mut node, _) = self.descend(path, usize::MAX, None)?;
        let bound = node.bound();
        let (children, branching) = match self.evaluate(&mut node, None) {
            Eval::Branch(branches) => {
                let mut base = node;
                let mut children = Vec::with_capacity(branches.len());
                for i in 0..branches.len() {
                    let child = self.child(&mut base, &branches, i, None);
                    let mut p = path.to_vec();
                    p.push(i as u16);
                    children.push((p, child.bound()));
                }
                (children, branches)
            }
            _ => (Vec::new(), Vec::new()),
        };
        Ok(Expansion {
            bound,
            children,
            branching,
        })
    }
}

impl TreeProfile {
    fn record(&mut self, depth: usize, eval: &Eval, frames: &[Frame]) {
        if self.nodes_at.len() <= depth {
            self.nodes_at.resize(depth + 1, 0);
            self.branches_at.resize(depth + 1, 0);
        }
        self.nodes_at[depth] += 1;
        let Eval::Branch(branches) = eval else {
            return;
        };
        self.branches_at[depth] += 1;
        let mut key: Vec<(u32, u32)> = branches.iter().flat_map(|c| c.exclude.clone()).collect();
        key.sort_unstable();
        key.dedup();
        *self.cycles.entry(key).or_default() += 1;
        let touches = |other: &[Child]| {
            branches
                .iter()
                .flat_map(Child::numbers)
                .any(|a| other.iter().flat_map(Child::numbers).any(|c| a == c))
        };
        if let Some(parent) = frames.last() {
            self.with_parent += 1;
            if touches(&parent.branches) {
                self.touches_parent += 1;
            }
            if frames.iter().any(|f| touches(&f.branches)) {
                self.touches_ancestor += 1;
            }
        }
    }
}

/// A node seen by the splitter.
#[derive(Clone, Debug)]
pub struct Expansion {
    /// The node's upper bound.
    pub bound: i64,
    /// Children's paths and bounds (empty for a leaf).
    pub children: Vec<(Vec<u16>, i64)>,
    /// What each child excludes, and the pair the node fixes for the children after it
    /// (empty for a leaf).
    pub branching: Vec<Child>,
}

/// The exclusive end of the children of the node at `path` (which has `count` children)
/// that lie before `limit` in depth-first order.
fn end_under_limit(path: &[u16], count: usize, limit: Option<&[u16]>) -> usize {
    match limit {
        Some(l) if l.len() > path.len() && l.starts_with(path) => {
            let at = l[path.len()] as usize;
            if l.len() == path.len() + 1 {
                count.min(at)
            } else {
                count.min(at + 1)
            }
        }
        _ => count,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::{Just, Strategy};
    use std::cell::RefCell;

    /// Keeps the best game; never stops or splits.
    #[derive(Default)]
    struct Best {
        best: RefCell<Option<(Vec<u32>, i64)>>,
    }

    /// Searches `s`'s whole tree and checks that it ends with a legal game worth `want`.
    fn assert_optimum(s: &mut Searcher, want: i64, context: &str) {
        let best = Best::default();
        assert_eq!(s.search(&[], None, None, &best).unwrap(), SearchEnd::Done);
        let (moves, score) = best.best.into_inner().unwrap();
        assert_eq!(score, want, "{context}");
        let moves: Vec<u64> = moves.into_iter().map(u64::from).collect();
        let replayed = super::super::game::replay(s.n(), &moves);
        assert_eq!(replayed, Ok(want as u64), "{context}");
    }

    impl Best {
        /// The best score `searcher` finds in its whole tree (0 when it finds no game).
        fn optimum(searcher: &mut Searcher) -> i64 {
            let best = Best::default();
            searcher.search(&[], None, None, &best).unwrap();
            best.bound().unwrap_or(0)
        }
    }

    impl Observer for Best {
        fn bound(&self) -> Option<i64> {
            self.best.borrow().as_ref().map(|b| b.1)
        }
        fn found(&self, moves: &[u32], score: i64) {
            *self.best.borrow_mut() = Some((moves.to_vec(), score));
        }
    }

    /// Starts from a bar; records every path the search evaluates (with a check interval of
    /// 1, each node's path is checkpointed before it is evaluated) and each game it reports
    /// with the path of its leaf.
    struct Trail {
        bar: RefCell<i64>,
        paths: RefCell<Vec<Vec<u16>>>,
        found: RefCell<Vec<(Vec<u16>, Vec<u32>)>>,
    }

    impl Trail {
        fn new(bar: i64) -> Trail {
            Trail {
                bar: RefCell::new(bar),
                paths: RefCell::default(),
                found: RefCell::default(),
            }
        }
    }

    impl Observer for Trail {
        fn bound(&self) -> Option<i64> {
            Some(*self.bar.borrow())
        }
        fn found(&self, moves: &[u32], score: i64) {
            *self.bar.borrow_mut() = score;
            let path = self.paths.borrow().last().cloned().unwrap_or_default();
            self.found.borrow_mut().push((path, moves.to_vec()));
        }
        fn checkpoint(&self, path: &[u16]) {
            self.paths.borrow_mut().push(path.to_vec());
        }
    }

    /// An exact campaign's searcher for `n` (strong branching from `reference`, cluster
    /// branching, the region bound) with node cuts after `after` nodes, checking its
    /// observer at every node.
    fn campaign_searcher(n: u32, reference: i64, after: Option<u64>) -> Searcher {
        let mut s = Searcher::new(n);
        s.set_strong_branching(Some(reference), 8);
        s.set_cluster_branching(true);
        s.set_region_bound(4);
        s.set_node_cuts(after);
        s.set_check_interval(1);
        s
    }

    #[test]
    fn successive_cycles_are_those_a_fresh_search_finds() {
        // The cycle searches of one node keep what earlier ones proved acyclic; each cycle
        // must still be the one a search from scratch finds among the pairs left.
        for n in [400u32, 561, 700] {
            let mut s = Searcher::new(n);
            let mut open: Vec<Vec<u16>> = vec![Vec::new()];
            let (mut checked, mut visited) = (0, 0);
            while let Some(path) = open.pop() {
                if checked >= 40 || visited >= 400 {
                    break;
                }
                visited += 1;
                let (node, _) = s.descend(&path, usize::MAX, None).unwrap();
                let mut kept = Cycles::new(node.pairs());
                s.find_cycles(&node, &mut kept, 16);
                let mut fresh = Cycles::new(node.pairs());
                for k in 0..kept.found.len() {
                    fresh.forget_done();
                    assert!(s.find_cycles(&node, &mut fresh, k + 1));
                    assert_eq!(
                        fresh.found[k], kept.found[k],
                        "n = {n}, {path:?}, cycle {k}"
                    );
                }
                fresh.forget_done();
                assert_eq!(
                    s.find_cycles(&node, &mut fresh, kept.found.len() + 1),
                    !kept.exhausted
                );
                checked += usize::from(kept.found.len() > 1);
                if let Eval::Branch(children) = s.evaluate(&mut node.clone(), None) {
                    for i in 0..children.len() as u16 {
                        open.push([path.as_slice(), &[i]].concat());
                    }
                }
            }
            assert!(
                checked >= 10,
                "n = {n}: {checked} nodes with several cycles"
            );
        }
    }

    #[test]
    fn shadows_never_change_the_branching() {
        // Strong branching weighs children by the plain matching's bound, so a node with a
        // cut shadow (derived at the node itself, as the node cuts do) branches exactly as
        // the same node without one: the tree, and so every path, stays the same.
        // References: the published optima (A019312: N = 150 -> 7137, 200 -> 12648).
        let mut tighter = 0;
        for (n, reference) in [(150u32, 7137i64), (200, 12648)] {
            let mut s = campaign_searcher(n, reference, None);
            let mut open: Vec<Vec<u16>> = vec![Vec::new()];
            while let Some(path) = open.pop() {
                let node = s.node_at(&path).unwrap();
                let (penalties, _) = cuts::derive_at(&s.graph, &node, Vec::new(), 40);
                let mut penalized = Graph::new(n);
                cuts::apply_at(&mut penalized, &node, &penalties).unwrap();
                let shadowed = node
                    .clone()
                    .with_shadow(Arc::new(penalized), &mut s.scratch);
                if shadowed.bound() < node.bound() {
                    tighter += 1;
                }
                match (
                    s.evaluate(&mut node.clone(), None),
                    s.evaluate(&mut shadowed.clone(), None),
                ) {
                    (Eval::Branch(plain), Eval::Branch(cut)) => {
                        assert_eq!(plain, cut, "n = {n}, path {path:?}");
                        if path.len() < 3 {
                            open.extend((0..plain.len()).map(|i| {
                                let mut child = path.clone();
                                child.push(i as u16);
                                child
                            }));
                        }
                    }
                    (Eval::Leaf(plain), Eval::Leaf(cut)) => assert_eq!(plain, cut),
                    _ => panic!("n = {n}, path {path:?}: a leaf with one bound only"),
                }
            }
        }
        assert!(tighter >= 10, "{tighter} nodes with a tighter shadow");
    }

    #[test]
    fn clusters_at_a_node_see_its_fixed_pairs_and_exclusions() {
        let g = Graph::new(30);
        let mut scratch = Scratch::default();
        // S = {10, 15}, T = {2, 5}: the one bijection (10, 2), (15, 5) is acyclic (5 | 10,
        // 2 does not divide 15), so not a cluster of the whole graph...
        let cut = Cut::cluster(vec![10, 15], vec![2, 5]);
        let root = Matching::new(&g, &[(29, 1)], &mut scratch);
        assert!(!cut.is_cluster(&g) && !cut.is_cluster_at(&g, &root));
        // ...but with (6, 3) fixed it closes a cycle: 2 | 6 puts (10, 2) before (6, 3),
        // 3 | 15 puts (6, 3) before (15, 5), and 5 | 10 puts (15, 5) before (10, 2).
        let fixed = Matching::new(&g, &[(29, 1), (6, 3)], &mut scratch);
        assert!(cut.is_cluster_at(&g, &fixed));
        // A number of a fixed pair is in no cut of the node.
        let fixed_member = Matching::new(&g, &[(29, 1), (10, 5)], &mut scratch);
        assert!(!cut.is_cluster_at(&g, &fixed_member));
        // S = {6, 10}, T = {2, 3}: the bijections (6, 3), (10, 2) (acyclic: 2 | 6 only) and
        // (6, 2), (10, ?) (10 / 3 is not whole): no cluster; with the edge (6, 3) excluded
        // no bijection is left, and the empty set of them has no acyclic member.
        let two = Cut::cluster(vec![6, 10], vec![2, 3]);
        assert!(!two.is_cluster_at(&g, &root));
        let mut excluded = root.clone();
        excluded.exclude(&g, 6, 3, &mut scratch);
        assert!(two.is_cluster_at(&g, &excluded));
    }

    #[test]
    fn node_cuts_prune_more_of_the_same_tree() {
        // With the published optimum as the bar (A019312: N = 300 -> 28691), the node cuts
        // derive bounds below the root and the search proves it in fewer nodes (measured:
        // 13 against 67), every one of them a node of the plain tree under the same path;
        // so does the LP kept warm down the tree.
        for (n, optimum, warm) in [(300u32, 28691i64, false), (300, 28691, true)] {
            let mut plain = campaign_searcher(n, optimum, None);
            let mut cut = campaign_searcher(n, optimum, Some(0));
            cut.set_warm_lp(warm);
            let (p, c) = (Trail::new(optimum), Trail::new(optimum));
            assert_eq!(plain.search(&[], None, None, &p), Ok(SearchEnd::Done));
            assert_eq!(cut.search(&[], None, None, &c), Ok(SearchEnd::Done));
            assert!(cut.cuts_derived() > 0, "n = {n}");
            let (p, c) = (p.paths.into_inner(), c.paths.into_inner());
            assert!(
                c.len() < p.len(),
                "n = {n}: {} nodes, plain {}",
                c.len(),
                p.len()
            );
            let mut plain_paths = p.iter();
            for path in &c {
                assert!(plain_paths.any(|q| q == path), "n = {n}: {path:?}");
            }
        }
    }

    #[test]
    fn refreshed_cuts_prune_more_of_the_same_tree() {
        // With the published optimum as the bar (A019312: N = 450 -> 64214), refreshing the
        // warm LP with the cuts its penalties miss prunes more than the warm LP alone
        // (measured: 150 nodes against 162, 8 refreshes), and every node it evaluates is a
        // node of the warm search's tree under the same path. It would fail if the refresh
        // never found a cut, or if its bound pruned nothing more.
        let (n, optimum) = (450u32, 64214i64);
        let mut searches = Vec::new();
        for refresh in [None, Some(0)] {
            let mut s = campaign_searcher(n, optimum, Some(0));
            s.set_warm_lp(true);
            s.set_cut_refresh(refresh);
            let trail = Trail::new(optimum);
            assert_eq!(s.search(&[], None, None, &trail), Ok(SearchEnd::Done));
            searches.push((
                s.derivations_skipped_and_refreshed().1,
                trail.paths.into_inner(),
            ));
        }
        let (warm, refreshed) = (&searches[0], &searches[1]);
        assert_eq!(warm.0, 0);
        assert!(refreshed.0 > 0, "no refresh found a new cut");
        assert!(
            refreshed.1.len() < warm.1.len(),
            "{} nodes refreshed, {} warm",
            refreshed.1.len(),
            warm.1.len()
        );
        let mut warm_paths = warm.1.iter();
        for path in &refreshed.1 {
            assert!(warm_paths.any(|q| q == path), "{path:?}");
        }
    }

    #[test]
    fn the_side_lp_prunes_the_same_tree() {
        // With the published optimum as the bar (A019312: N = 450 -> 64214), the warm LP in
        // its primal form ([`Searcher::set_side_lp`]), refreshed by adding rows, evaluates
        // only nodes of the plain search's tree, and far fewer (measured: 158 nodes against
        // 1,046 without node cuts, and 150 with microlp's warm LP: its optimal vertices, so
        // its floors, differ). It fails if its penalties prune nothing, or if its refresh
        // never adds a cut.
        let (n, optimum) = (450u32, 64214i64);
        let mut side = campaign_searcher(n, optimum, Some(0));
        side.set_warm_lp(true);
        side.set_side_lp(true);
        side.set_cut_refresh(Some(0));
        let trail = Trail::new(optimum);
        assert_eq!(side.search(&[], None, None, &trail), Ok(SearchEnd::Done));
        assert!(
            side.derivations_skipped_and_refreshed().1 > 0,
            "no refresh added a cut"
        );
        let pruned = trail.paths.into_inner();
        let mut plain = campaign_searcher(n, optimum, None);
        let trail = Trail::new(optimum);
        assert_eq!(plain.search(&[], None, None, &trail), Ok(SearchEnd::Done));
        let plain = trail.paths.into_inner();
        assert!(
            pruned.len() * 4 < plain.len(),
            "{} nodes with the side LP, {} without node cuts",
            pruned.len(),
            plain.len()
        );
        let mut plain_paths = plain.iter();
        for path in &pruned {
            assert!(plain_paths.any(|q| q == path), "{path:?}");
        }
    }

    #[test]
    fn units_warm_from_the_root_lp_prune_the_same_tree() {
        // Each unit at a child of the root (A019312: N = 450 -> 64214 as the bar) re-optimizes
        // the root's side LP ([`Searcher::set_root_side_lp`]) instead of building its own:
        // it builds no LP from scratch (without the root's, some unit does), and evaluates
        // only nodes of the plain search's tree, and fewer. The root's LP bounds the optimum
        // from above. It fails if a warm LP's penalties were not clusters at the
        // unit's node (the search errs), or prune nothing, or if the root's LP (over the
        // live edges, the fixed pairs scored apart) fell below the optimum.
        let (n, optimum) = (450u32, 64214i64);
        let warm = |s: &mut Searcher| {
            s.set_warm_lp(true);
            s.set_side_lp(true);
            s.set_cut_refresh(Some(0));
        };
        let mut root = campaign_searcher(n, optimum, Some(0));
        warm(&mut root);
        let lp = root.root_side_lp().unwrap().expect("the root's LP solves");
        let fixed = root.node_at(&[]).unwrap().fixed_score() as f64;
        let bound = lp.value() + fixed;
        assert!(bound >= optimum as f64 - 1e-6, "{bound} < {optimum}");
        let lp = Arc::new(lp);
        let units: Vec<Vec<u16>> = root
            .expand(&[])
            .unwrap()
            .children
            .into_iter()
            .map(|(path, _)| path)
            .collect();
        assert!(units.len() >= 2);
        let (mut pruned_nodes, mut plain_nodes, mut built_without) = (0, 0, 0);
        for unit in &units {
            let mut side = campaign_searcher(n, optimum, Some(0));
            warm(&mut side);
            side.set_root_side_lp(Some(Arc::clone(&lp)));
            let trail = Trail::new(optimum);
            assert_eq!(side.search(unit, None, None, &trail), Ok(SearchEnd::Done));
            let pruned = trail.paths.into_inner();
            assert_eq!(side.side_lps_built(), 0, "{unit:?} built its own LP");
            let mut own = campaign_searcher(n, optimum, Some(0));
            warm(&mut own);
            let trail = Trail::new(optimum);
            assert_eq!(own.search(unit, None, None, &trail), Ok(SearchEnd::Done));
            built_without += own.side_lps_built();
            let mut plain = campaign_searcher(n, optimum, None);
            let trail = Trail::new(optimum);
            assert_eq!(plain.search(unit, None, None, &trail), Ok(SearchEnd::Done));
            let plain = trail.paths.into_inner();
            let mut plain_paths = plain.iter();
            for path in &pruned {
                assert!(plain_paths.any(|q| q == path), "{path:?}");
            }
            pruned_nodes += pruned.len();
            plain_nodes += plain.len();
        }
        assert!(
            pruned_nodes * 2 < plain_nodes,
            "{pruned_nodes} nodes warm from the root, {plain_nodes} without node cuts"
        );
        assert!(
            built_without > 0,
            "without the root's LP no unit built its own"
        );
    }

    #[test]
    fn largest_primes() {
        assert_eq!(largest_prime(2), 2);
        assert_eq!(largest_prime(10), 7);
        assert_eq!(largest_prime(120), 113);
    }

    #[test]
    fn small_optima_and_games_replay() {
        // A019312 begins 0, 2, 3, 7, 9, 15, 17, 21, 30, 40, 44, 50, 52, 66, 81, 89, ...
        for (n, want) in [(18u32, 111i64), (21, 144)] {
            let mut s = Searcher::new(n);
            let best = Best::default();
            assert_eq!(s.search(&[], None, None, &best).unwrap(), SearchEnd::Done);
            let (moves, score) = best.best.into_inner().unwrap();
            assert_eq!(score, want, "n = {n}");
            let moves: Vec<u64> = moves.into_iter().map(u64::from).collect();
            assert_eq!(super::super::game::replay(n, &moves), Ok(want as u64));
        }
    }

    /// The optimum by a plain search (first cycle at every node).
    fn plain_optimum(n: u32) -> i64 {
        let best = Best::default();
        Searcher::new(n).search(&[], None, None, &best).unwrap();
        best.best.into_inner().map_or(0, |b| b.1)
    }

    #[test]
    fn strong_branching_finds_the_optimum_whatever_its_reference() {
        // The reference steers which cycle is branched on, never what is pruned: references
        // far below, at and above the optimum (a wrong one too) give the same optimum.
        // A019312 (records/a019312.txt): N = 40 -> 525, 60 -> 1137, 90 -> 2552.
        for (n, want) in [(40u32, 525i64), (60, 1137), (90, 2552)] {
            assert_eq!(plain_optimum(n), want, "plain, n = {n}");
            for reference in [0, want - 20, want, want + 1, want + 500] {
                for candidates in [1, 3, 8] {
                    let mut s = Searcher::new(n);
                    s.set_strong_branching(Some(reference), candidates);
                    assert_optimum(&mut s, want, &format!("n = {n}, reference {reference}"));
                }
            }
        }
    }

    #[test]
    fn strong_branching_paths_rebuild_the_same_nodes() {
        // Expanding a path from a fresh searcher gives the same children and bounds as
        // reaching it by expanding its parent: the tree is a function of N and the
        // reference, so units, the splitter and the donation check agree on it.
        let n = 150;
        let tree = |reference| {
            let mut s = Searcher::new(n);
            s.set_strong_branching(Some(reference), 4);
            s.set_cluster_branching(true);
            s
        };
        let mut s = tree(5_000);
        let mut open: Vec<Vec<u16>> = vec![Vec::new()];
        let mut seen = 0;
        while let Some(path) = open.pop() {
            let expansion = s.expand(&path).unwrap();
            let again = tree(5_000).expand(&path).unwrap();
            assert_eq!(expansion.bound, again.bound, "{path:?}");
            assert_eq!(expansion.children, again.children, "{path:?}");
            seen += 1;
            if seen < 40 {
                open.extend(expansion.children.into_iter().map(|c| c.0));
            }
        }
        assert!(seen >= 10, "the tree at N = {n} has branching nodes");
    }

    #[test]
    fn strong_branching_chooses_as_in_the_first_order() {
        // Weighing the options in another order takes the same option at every node: the
        // first of the least cost. Compared node by node over the top of a tree with many
        // ties (16 candidates, clusters, a reference near the optimum).
        let n = 230;
        let tree = |first_order| {
            let mut s = Searcher::new(n);
            s.set_strong_branching(Some(16_540), 16);
            s.set_cluster_branching(true);
            s.first_order = first_order;
            s
        };
        let (mut s, mut reference) = (tree(false), tree(true));
        let mut open: Vec<Vec<u16>> = vec![Vec::new()];
        let mut branching = 0;
        while let Some(path) = open.pop() {
            let mut node = s.node_at(&path).unwrap();
            let mut again = reference.node_at(&path).unwrap();
            let (got, want) = (
                s.evaluate(&mut node, None),
                reference.evaluate(&mut again, None),
            );
            match (got, want) {
                (Eval::Branch(got), Eval::Branch(want)) => {
                    assert_eq!(got, want, "{path:?}");
                    branching += 1;
                    if branching < 300 {
                        open.extend((0..got.len() as u16).map(|i| [&path[..], &[i]].concat()));
                    }
                }
                (got, want) => assert_eq!(
                    matches!(got, Eval::Branch(_)),
                    matches!(want, Eval::Branch(_)),
                    "{path:?}"
                ),
            }
        }
        assert!(
            branching >= 300,
            "the tree at N = {n} has {branching} branching nodes"
        );
    }

    #[test]
    fn cluster_and_region_bound_find_the_optimum() {
        // A019312: N = 40 -> 525, 60 -> 1137, 90 -> 2552, 120 -> 4593.
        for (n, want) in [(40u32, 525i64), (60, 1137), (90, 2552), (120, 4593)] {
            for strong in [None, Some(want), Some(want - 50)] {
                for regions in [0, 8] {
                    let mut s = Searcher::new(n);
                    s.set_strong_branching(strong, 8);
                    s.set_cluster_branching(true);
                    s.set_region_bound(regions);
                    assert_optimum(&mut s, want, &format!("n = {n}, {strong:?}, {regions}"));
                }
            }
        }
    }

    #[test]
    fn cluster_children_need_every_bijection_to_be_cyclic() {
        let n = 561;
        let mut s = Searcher::new(n);
        s.set_cluster_branching(true);
        let root = s.root.clone();
        let fixed = [(largest_prime(n), 1)];
        // 225, 315, 525 onto 75, 45, 105: the two bijections (this rotation and the other
        // one, 225-45, 315-105, 525-75) are both precedence cycles.
        let cycle = [(225, 75), (315, 45), (525, 105)];
        let children = s
            .cluster_children(&root, &fixed, &cycle)
            .expect("a cluster");
        assert_eq!(children.len(), 3);
        let mut first = children[0].exclude.clone();
        first.sort_unstable();
        assert_eq!(first, vec![(225, 45), (225, 75)]);
        // Later children also shut the earlier numbers' other edges (450-225 for 225).
        assert!(children[1].exclude.contains(&(450, 225)));
        assert!(children[1].exclude.contains(&(315, 105)));
        assert!(children.iter().all(|c| c.then_fix.is_none()));
        // With 63 among the factors, 315-63 breaks the cycle: no cluster.
        let open = [(225, 75), (315, 63), (525, 105)];
        assert!(s.cluster_children(&root, &fixed, &open).is_none());
        // Off, never.
        s.set_cluster_branching(false);
        assert!(s.cluster_children(&root, &fixed, &cycle).is_none());
    }

    #[test]
    fn region_bound_never_cuts_below_the_optimum() {
        // At every node of the first levels of the tree, the bound less the regions' loss
        // stays at or above the best game of the node's subtree, found by a plain search
        // of that subtree.
        let mut priced = 0;
        for n in [60u32, 110, 150] {
            let mut s = Searcher::new(n);
            let mut regions = RegionBound::new(n);
            let mut open: Vec<Vec<u16>> = vec![Vec::new()];
            while let Some(path) = open.pop() {
                let (node, _) = s.descend(&path, usize::MAX, None).unwrap();
                let mut cycles = Cycles::new(node.pairs());
                if !s.find_cycles(&node, &mut cycles, 1) {
                    continue;
                }
                s.find_cycles(&node, &mut cycles, 8);
                let cycles = cycles.found;
                let fixed = node.fixed_pairs();
                let sets: Vec<Vec<u32>> = cycles
                    .iter()
                    .map(|c| c.iter().flat_map(|&(a, b)| [a, b]).collect())
                    .collect();
                let loss = regions.loss(&s.graph, &node, &fixed, &sets, i64::MAX);
                let best = Best::default();
                let mut sub = Searcher::new(n);
                sub.search(&path, None, None, &best).unwrap();
                let sub_best = best.best.into_inner().map_or(i64::MIN, |b| b.1);
                assert!(
                    node.bound() - loss >= sub_best,
                    "n = {n}, path {path:?}: bound {} - loss {loss} < {sub_best}",
                    node.bound()
                );
                priced += 1;
                if path.len() < 4 {
                    let children = s.expand(&path).unwrap().children;
                    open.extend(children.into_iter().map(|c| c.0));
                }
            }
        }
        assert!(priced >= 10, "{priced} nodes priced");
    }

    proptest::proptest! {
        // Microseconds a case, and a tie between two options is what goes wrong: many cases.
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        /// Weighed in any order, with the cutoffs `branching_cost` applies child by child,
        /// the options give the first one of the least cost.
        #[test]
        fn the_first_least_option_whatever_the_order(
            (excesses, order) in (1usize..12).prop_flat_map(|len| (
                proptest::collection::vec(proptest::collection::vec(-1i64..3, 0..5), len),
                Just((0..len).collect::<Vec<usize>>()).prop_shuffle(),
            )),
        ) {
            // An option's cost as branching_cost counts it, child by child.
            let weigh = |j: usize, cutoff| {
                let mut cost = (0usize, 0i64);
                for &e in &excesses[j] {
                    if count_child(&mut cost, e) && beyond(cost, cutoff) {
                        return None;
                    }
                }
                Some((cost, cost))
            };
            let want = (0..excesses.len())
                .map(|j| (weigh(j, None).unwrap().0, j))
                .min()
                .unwrap();
            let (j, cost) = first_least(order, weigh);
            proptest::prop_assert_eq!((cost, j), want);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

        /// Strong branching with any reference and candidate count, and either order of a
        /// cycle's pairs, finds the plain search's optimum: the choice of cycle and the order
        /// of its children only reshape the partition of the node's games.
        #[test]
        fn strong_branching_never_changes_the_optimum(
            n in 2u32..70,
            offset in -200i64..200,
            candidates in 1usize..6,
            largest_first: bool,
        ) {
            let want = Best::optimum(&mut Searcher::new(n));
            let mut s = Searcher::new(n);
            s.set_strong_branching(Some(want + offset), candidates);
            s.set_largest_first(largest_first);
            proptest::prop_assert_eq!(Best::optimum(&mut s), want);
        }

        /// Cluster branching and the region bound, with or without strong branching, find
        /// the plain search's optimum: the children cover the node's games, and the region
        /// bound prunes only nodes without a better game.
        #[test]
        fn cluster_branching_and_region_bound_never_change_the_optimum(
            n in 2u32..110,
            offset in proptest::option::of(-200i64..200),
            regions in 0usize..10,
            largest_first: bool,
        ) {
            let want = Best::optimum(&mut Searcher::new(n));
            let mut s = Searcher::new(n);
            s.set_strong_branching(offset.map(|o| want + o), 8);
            s.set_largest_first(largest_first);
            s.set_cluster_branching(true);
            s.set_region_bound(regions);
            proptest::prop_assert_eq!(Best::optimum(&mut s), want);
        }

        /// Cut penalties ([`Searcher::set_cut_penalties`]) only tighten bounds: the optimum
        /// stays the plain search's, found in no more nodes.
        #[test]
        fn cut_penalties_never_change_the_optimum(n in 2u32..130, strong in proptest::bool::ANY) {
            let mut plain = Searcher::new(n);
            let mut s = Searcher::new(n);
            if strong {
                plain.set_strong_branching(None, 4);
                s.set_strong_branching(None, 4);
            }
            let want = Best::optimum(&mut plain);
            let (penalties, _) = cuts::derive(n, &Searcher::root_pairs(n));
            s.set_cut_penalties(&penalties).unwrap();
            s.root.check(&s.graph).unwrap();
            proptest::prop_assert!(s.root_bound() <= plain.root_bound());
            proptest::prop_assert_eq!(Best::optimum(&mut s), want);
            // The same tree, pruned sooner.
            proptest::prop_assert!(s.stats().nodes <= plain.stats().nodes);
        }

        /// Node cuts ([`Searcher::set_node_cuts`]), refreshed or not
        /// ([`Searcher::set_cut_refresh`]), from either form of the warm LP
        /// ([`Searcher::set_side_lp`]), only prune: from a bar just below the
        /// optimum the search still finds it, evaluates only nodes of the plain tree, and
        /// each game it reports is the leaf its path names in the plain tree (so units,
        /// checkpoints and donations name the same nodes with and without them).
        #[test]
        fn node_cuts_only_prune(
            n in 2u32..120,
            after in 0u64..12,
            offset in -100i64..100,
            warm in proptest::bool::ANY,
            side in proptest::bool::ANY,
            refresh in proptest::option::of(0u64..20),
        ) {
            let want = Best::optimum(&mut Searcher::new(n));
            let mut plain = campaign_searcher(n, want + offset, None);
            let mut cut = campaign_searcher(n, want + offset, Some(after));
            cut.set_warm_lp(warm);
            cut.set_side_lp(side);
            cut.set_cut_refresh(refresh);
            let (p, c) = (Trail::new(want - 1), Trail::new(want - 1));
            plain.search(&[], None, None, &p).unwrap();
            cut.search(&[], None, None, &c).unwrap();
            proptest::prop_assert_eq!(*c.bar.borrow(), want);
            let (p, c, found) = (p.paths.into_inner(), c.paths.into_inner(), c.found.into_inner());
            let mut plain_paths = p.iter();
            for path in &c {
                proptest::prop_assert!(plain_paths.any(|q| q == path), "{:?}", path);
            }
            for (path, moves) in found {
                let leaf = plain.node_at(&path).unwrap();
                proptest::prop_assert_eq!(order_pairing(n, &leaf.pairs()), Some(moves));
            }
        }
    }

    /// Rank cuts ([`Searcher::set_rank_pool`]), also those proven in the tree
    /// ([`Searcher::set_local_ranks`]), and penalties in fractions of a point
    /// ([`Searcher::set_shade_scale`]) only prune too: from bars below the optimum the
    /// search with node cuts and the pool finds it, evaluates only nodes of the plain tree,
    /// and each game it reports is the leaf its path names there.
    #[test]
    fn rank_cuts_only_prune() {
        let mut proven_in_tree = 0;
        for (n, offset, below) in [(360u32, 10i64, 30i64), (450, -20, 1), (450, 5, 20)] {
            let want = Best::optimum(&mut Searcher::new(n));
            let pool = Arc::new(RankPool::at_root(n, 30));
            assert!(!pool.cuts().is_empty(), "n = {n}");
            let mut plain = campaign_searcher(n, want + offset, None);
            let p = Trail::new(want - below);
            plain.search(&[], None, None, &p).unwrap();
            let p = p.paths.into_inner();
            // Whole-point penalties without local ranks; the records' setting (local ranks,
            // penalties in 1/60 points, `super::super::SHADE_SCALE`) with them.
            for (local, scale) in [(None, 1), (Some((0, 30)), 60)] {
                let mut with = campaign_searcher(n, want + offset, Some(0));
                with.set_warm_lp(true);
                with.set_side_lp(true);
                with.set_cut_refresh(Some(0));
                with.set_rank_pool(Some(Arc::clone(&pool)));
                with.set_local_ranks(local);
                with.set_shade_scale(scale).unwrap();
                let c = Trail::new(want - below);
                with.search(&[], None, None, &c).unwrap();
                assert_eq!(*c.bar.borrow(), want, "n = {n}");
                let (c, found) = (c.paths.into_inner(), c.found.into_inner());
                let mut plain_paths = p.iter();
                for path in &c {
                    assert!(plain_paths.any(|q| q == path), "n = {n}: {path:?}");
                }
                for (path, moves) in found {
                    let leaf = plain.node_at(&path).unwrap();
                    assert_eq!(order_pairing(n, &leaf.pairs()), Some(moves), "n = {n}");
                }
                proven_in_tree += with.local_rank_work().1;
                eprintln!(
                    "n = {n}: {} rank cuts, {} proven in the tree, nodes {} -> {}",
                    pool.cuts().len(),
                    with.local_rank_work().1,
                    p.len(),
                    c.len()
                );
            }
        }
        assert!(proven_in_tree > 0, "some frame proved rank cuts of its own");
    }
}
