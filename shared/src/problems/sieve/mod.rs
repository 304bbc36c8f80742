//! `sieve`: Ginnow's sieve, the Taxman game (OEIS A019312). Start with 1..=N; a move
//! selects a number K that still has a proper divisor in the list, scores K, and crosses out
//! K and its remaining divisors; the game ends when no move is left. Maximise the score.
//!
//! Exact mode (`--n N`, or a family `--n-from A --n-to B`) proves the optimum by branch-and-bound
//! over pairings (selected number, principal factor) with a maximum-weight-matching bound lowered
//! by the region bound ([`regions`]), branching on the best of several precedence cycles or their
//! clusters ([`search`], [`matching`]). A deterministic heuristic run (a probe search, and for N in
//! [`PROBE_LNS_RANGE`] the anytime mode's neighbourhood search with a fixed seed and step count,
//! [`probe_lns`]) gives the campaign its starting bound; the splitter expands the search tree,
//! largest bound gap first, into many units named by tree paths ([`unit`](mod@unit)); long units donate their
//! untried subtrees. Anytime mode (`--heuristic [--units U] [--unit-seconds S]`) runs rounds
//! of U large-neighbourhood-search units of about S seconds of a core each ([`anytime`],
//! [`lns`]): destroy a region of the game, repair it exactly, keep what is not worse; round
//! 0 builds its starts along a chain from a smaller N, later rounds start from the
//! incumbent (`grind run ... --seconds T` stops the whole run). Solutions are ordered move
//! lists `{"moves": [...], "score": s}`, verified by plain replay ([`game::replay`]).
//!
//! An exact campaign for N builds on the exact campaign for N - 1 of the same database, its
//! predecessor, unless `--independent` ([`family`]): once that one has finished, N starts
//! from its game (plus N where legal; for a prime N, N in place of its first prime) when that
//! is better, and takes opt(N) <= opt(N-1) + N (for a prime N, opt(N-1) + N - P', P' the
//! prime before N) as a ceiling, a premise of N's proof (proven in [`family`]'s docs): the
//! coordinator ends
//! N's campaign as soon as its incumbent reaches it. In a family (`--n-from A --n-to B`)
//! every member after the first builds on the one before.
//!
//! # Where things are
//!
//! [`game`] holds the rules (replay verifier, ordering a pairing into a finished game).
//! [`matching`] is a maximum-weight matching of the bipartite graph x - x/p (p prime; weight x,
//! or x less a penalty) with its optimal duals, kept incrementally: fixing a matched pair keeps
//! it optimal (fixing an unmatched one frees and re-settles its numbers' former mates), and
//! excluding an edge re-settles its two ends with one Hungarian search each; a matching may carry
//! a *shadow* (the same node on a reweighted graph, kept in step; the bound is the smaller of the
//! two). [`search`] is the branch-and-bound: a node is fixed pairs + excluded edges, its bound
//! the fixed score + the matching; an acyclic matching ("pair i before j when i's factor divides
//! j's number") is the node's optimum (a leaf); otherwise a precedence cycle is chosen and child
//! i fixes its non-fixed pairs e_0..e_{i-1} and excludes e_i. Exact campaigns branch strongly
//! (`Sieve::exact_searcher`): up to 16 cycles are tried (each the one with the fewest non-fixed
//! pairs through a cycle found without the pairs of those before), each child's bound computed,
//! and the cycle with the fewest children whose bound reaches the starting game's score (then
//! the least excess) is taken; the reference is a function of N, so the splitter, units and
//! donation check see the same tree. Each cycle also offers its *cluster* children when every
//! bijection of its numbers onto its factors is cyclic with the fixed pairs (a cover of the
//! node's games that resolves both "rotations" at once), weighed like a partition. [`regions`]
//! lowers a node's bound by what resolving up to 8 disjoint cycles must cost, priced from the
//! matching's reduced costs by a small exact search per cycle (it only prunes). Both are on in
//! exact campaigns (solver version 6; proofs in the modules' docs); `benches/sieve_tree.rs`
//! measures a proof tree's shape. [`cuts`] derives *cluster cuts* (numbers S and factors T whose
//! every bijection is cyclic: a game has at most |S| - 1 edges from S into T) from the root
//! matching's cycles, with integer Lagrangian penalties from the dual LP (`microlp`): the
//! penalized graph's matching plus the penalties' offset bounds every game.
//! `Searcher::set_cut_penalties` bounds nodes by it through the shadow; it measured slower in
//! campaigns, so exact campaigns leave it off. Cuts re-derived at every branching node from an
//! LP kept warm down the tree ([`warm_lp`], [`Sieve::with_node_cuts`]) only prune, leaving the
//! tree and its paths as they are; exact campaigns use them from [`NODE_CUTS_FROM`] on. The root fixes (largest prime, 1). Nodes are named
//! by paths (depth-first order = lexicographic order), so units, limits, checkpoints and donation
//! work as in topswops. Since solver version 8 the exact root also leaves out the edges
//! [`symmetry`] proves some optimal game avoids (the "helper" edges m p -> m of primes p below
//! the largest few of their range (N/(k+1), N/k]); [`Sieve::with_solver`] still searches
//! version 7's tree for a proof journaled under it.
//!
//! # Starting bound and splitting
//!
//! A deterministic probe search (20,000 nodes up to N = 1000, fewer above; a function of N only,
//! so every coordinator derives the same units) gives the starting bound (`initial_bound` = its
//! score - 1). When it reaches no leaf, the greedy repair of the root matching (play it in
//! precedence order, drop the cheapest pair whenever a cycle blocks) is the starting game; for N
//! in [`PROBE_LNS_RANGE`] a fixed-seed run of the anytime search ([`probe_lns`]: a chain from
//! N - 50 and 1,000 steps) replaces it when better, also a function of N only. A tree the probe
//! exhausts is one unit; otherwise the splitter expands the tree, largest bound first, until
//! `--units` (default 256) open nodes, dropping nodes below the starting game.
//!
//! # Anytime mode in detail
//!
//! [`anytime`] and [`lns`]: an iterated large neighbourhood search in rounds. A step takes a
//! region of the game (N/3 numbers, at most 300: a blob grown through the edges x - x/p, the
//! multiples of a random d, a window of consecutive numbers, or a stretch of the band (N/3, N/2]
//! with the doubles, triples and factors of its numbers; each number with its current partner),
//! keeps the pairs outside it fixed, removes the unused numbers outside it, and repairs the
//! region with the same branch-and-bound (`Searcher::restrict`, node budget 2,000), adopting any
//! game at least as good. Every 64th step is a kick instead: from the best game seen, a region is
//! repaired with two of its current pairs forbidden (`Searcher::exclude_at_root`), and the best
//! game found is taken even when it loses up to 60 points (the unit keeps and reports its best
//! game). Round 0's `--units` (default 4) build their starts along a chain from N - 50 (a game
//! for m - 1 is legal on 1..=m: carry it, finish it, repair around m); later rounds start every
//! unit from the incumbent (carried in the payload; the splitter waits at round ends,
//! `split_from` sees the incumbent), and the campaign ends after 3 rounds without improvement. A
//! unit's work is a step count in its payload (`--unit-seconds` converts to steps at a measured
//! rate), never a clock, so replicas agree.
//!
//! # Records
//!
//! [`local`] runs a whole exact campaign in-process (tests, benchmark, `bench/sieve_record.sh`,
//! which writes `records/sieve.tsv`: grind's proven optima with a game each, re-verified by the
//! tests and compared with the published table `records/a019312.txt`). From N = 511 each row
//! builds on the row before as a family member does (`local::prove_after`), stopping once a game
//! reaches the ceiling; a row with 0 units was closed at the ceiling by its starting game and
//! rests on the row before it.

pub mod anytime;
pub mod certificate;
pub mod cuts;
mod cycles;
mod donation;
mod drawing;
pub mod family;
pub mod game;
pub mod journal;
pub mod lns;
pub mod local;
pub mod matching;
pub mod rank_cuts;
pub mod regions;
pub mod search;
pub mod side_lp;
pub mod symmetry;
pub mod table;
pub mod unit;
pub mod warm_lp;
pub mod work_queue;

use clap::Args;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex, OnceLock};

use crate::coverage::{check_range_donation, RangeUnit};
use crate::problem::{
    Chains, Objective, Placement, Presentation, Problem, ProblemError, Scored, SolveContext,
    SplitBatch, UnitOutcome, UnitSpec, Units, Verification,
};
use crate::registry::ProblemDef;
use search::{Observer, SearchEnd, Searcher};
use unit::SieveUnit;

/// Largest N accepted (the search's paths and the verifier stay cheap far beyond this).
pub const MAX_N: u32 = 20_000;
/// Most members of one `--n-from/--n-to` family.
pub const MAX_FAMILY: u32 = 1_000;
/// Default number of exact units the splitter aims for.
pub const DEFAULT_SPLIT_UNITS: u32 = 256;
/// Nodes of the deterministic search that gives exact campaigns their starting bound, for
/// N <= 1000 (fewer above, so that creating a campaign stays within a few seconds: a node
/// costs O(N)); when the whole tree fits in it, the campaign is a single unit.
pub const PROBE_NODES: u64 = 20_000;

/// The probe's node budget for N (a function of N alone: every coordinator derives the same
/// units).
pub fn probe_nodes(n: u32) -> u64 {
    (PROBE_NODES * 1000 / u64::from(n.max(1))).clamp(1_000, PROBE_NODES)
}

/// Candidate cycles tried at each branching node of an exact search (strong branching,
/// [`Searcher::set_strong_branching`]). 16 instead of 8 (solver version 6) takes 1.3 to 2.3
/// times less CPU on whole proofs of N = 700 to 740, the hardest gaining most; 32 gives the
/// same tree as 16 at N = 738 (BENCHMARKS.md, "Strong branching's candidates"). Re-checked
/// with solver version 7 at N = 738: 8 candidates take 4.3 times the CPU of 16, and 32 give
/// 16's tree ("Solver version 7").
pub const STRONG_CANDIDATES: usize = 16;

/// The first solver version whose exact tree leaves out [`symmetry::needless_edges`].
pub const FIRST_SYMMETRY_SOLVER: u32 = 8;

/// The first N whose exact units also prune by cut bounds kept warm down their trees
/// ([`Sieve::with_node_cuts`], from each unit's first branching node). Measured on units of
/// N = 785 they take 1.45 to 17 times less time than the plain search (543 s against about
/// 1,004 on nine units); the whole proof of N = 765 takes 5 to 9 times more with them
/// (BENCHMARKS.md, "Node cuts at N = 785").
pub const NODE_CUTS_FROM: u32 = 785;

/// Disjoint cycles the region bound prices at each node of an exact search
/// ([`Searcher::set_region_bound`]).
pub const REGION_CYCLES: usize = 8;

/// Weight units per point of the shadows that the node cuts' LP shades
/// ([`Searcher::set_shade_scale`]): penalties in 1/60 points bring a node's cut bound
/// within a fraction of its LP's optimum, where whole points left it a median 5.6 and a
/// mean 23 points above. Measured on twelve units of N = 791 (BENCHMARKS.md, "Penalties in
/// fractions of a point"): 33% fewer nodes and 29% less time than whole points; 1/12 and
/// 1/600 give about the same nodes as 1/60.
pub const SHADE_SCALE: i32 = 60;
const _: () = assert!(SHADE_SCALE as i64 * MAX_N as i64 <= i32::MAX as i64);

/// Exact campaigns for N in this range also run a deterministic neighbourhood search for
/// their starting game ([`probe_lns`]): below it the probe's game is close enough, above it
/// no exact proof is in reach and campaign creation should stay quick.
pub const PROBE_LNS_RANGE: std::ops::RangeInclusive<u32> = 401..=2_000;
/// Steps of that search (after its chain from N - 50).
pub const PROBE_LNS_STEPS: u64 = 1_000;

/// The starting game of an exact campaign from the anytime mode's search with a fixed seed
/// and step count (so a function of N alone, like the probe): a chain from N - 50 and
/// [`PROBE_LNS_STEPS`] steps. A better starting game is a higher bar for every unit, so it
/// prunes more; the search stays exact (units look for games at least as good as it). `None`
/// outside [`PROBE_LNS_RANGE`].
pub fn probe_lns(n: u32) -> Option<Game> {
    if !PROBE_LNS_RANGE.contains(&n) {
        return None;
    }
    const SEED: u64 = 0x7A_7A11;
    let size = anytime::region_size(n);
    let from = n.saturating_sub(anytime::CHAIN_LENGTH).max(1);
    let moves = lns::chain(
        from,
        n,
        SEED,
        size,
        anytime::REPAIR_NODES,
        200,
        anytime::CHAIN_STEPS,
        &|| false,
    )
    .ok()??;
    let mut run = lns::Lns::new(n, &moves, SEED).ok()?;
    let plan = lns::Schedule::anytime(&size);
    for _ in 0..PROBE_LNS_STEPS {
        run.tick(&plan);
    }
    let (moves, score) = run.best();
    Some((moves.to_vec(), score))
}

/// Parameters of the sieve.
#[derive(Args, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct SieveParams {
    /// The list is 1..=N.
    #[arg(long)]
    #[serde(default)]
    pub n: Option<u32>,
    /// First N of a family of campaigns (one per N), with --n-to.
    #[arg(long, requires = "n_to", conflicts_with = "n")]
    #[serde(default)]
    pub n_from: Option<u32>,
    /// Last N of a family of campaigns, with --n-from.
    #[arg(long, requires = "n_from")]
    #[serde(default)]
    pub n_to: Option<u32>,
    /// Anytime mode: randomised searches for a good game, no proof.
    #[arg(long)]
    #[serde(default)]
    pub heuristic: bool,
    /// Anytime mode: about how many seconds of a core each unit searches (default 10; the
    /// unit's work is a step count derived from it, so that replicas agree).
    #[arg(long, requires = "heuristic")]
    #[serde(default)]
    pub unit_seconds: Option<u32>,
    /// Number of units: the exact splitter's target (default 256), or the anytime units of
    /// each round (default 4).
    #[arg(long)]
    #[serde(default)]
    pub units: Option<u32>,
    /// Exact mode: do not build on the campaign for N - 1 (no starting game or ceiling from
    /// it; a family's members then run side by side).
    #[arg(long, conflicts_with = "heuristic")]
    #[serde(default)]
    pub independent: bool,
}

/// A game (moves in play order) and its score.
pub type Game = (Vec<u32>, i64);

/// What the deterministic probe search of an exact campaign found.
struct Probe {
    /// Its best game.
    game: Option<Game>,
    /// True when it searched the whole tree (its game is then optimal).
    complete: bool,
}

/// A sieve instance.
pub struct Sieve {
    params: SieveParams,
    n: u32,
    /// The deterministic starting game (exact mode) and whether its search finished,
    /// computed on first use.
    start: OnceLock<Probe>,
    /// The exact units, computed on first use.
    frontier: OnceLock<Result<Vec<Vec<u16>>, String>>,
    /// The solver version whose tree exact mode searches ([`Sieve::with_solver`]).
    solver: u32,
    /// Exact units prune with cut bounds kept warm down the tree, from a branching node
    /// whose subtree took this many nodes ([`Sieve::with_node_cuts`]).
    node_cuts: Option<u64>,
    /// Rank cuts proven for this N, for the node cuts' LPs ([`Sieve::with_rank_pool`]).
    rank_pool: Option<Arc<rank_cuts::RankPool>>,
    /// Rank cuts also proven in the tree ([`Sieve::with_local_ranks`]).
    local_ranks: Option<(u64, usize)>,
    /// The node cuts' LP at the root, built on first use and shared by every unit
    /// ([`Searcher::set_root_side_lp`]); rebuilt after a change of what it depends on.
    root_side: OnceLock<Option<Arc<side_lp::SideLp>>>,
    /// Weight units per point of the node cuts' shadows ([`Sieve::with_shade_scale`]).
    shade_scale: i32,
}

impl ProblemDef for Sieve {
    const NAME: &'static str = "sieve";
    const ABOUT: &'static str =
        "Ginnow's sieve / the Taxman game (A019312): proven best score on 1..N, or a good game fast";
    // 2: anytime campaigns are rounds of neighbourhood-search units with a step budget.
    // 3: their units kick out of local optima, with larger regions and band regions.
    // 4: exact searches branch on the best of several cycles (strong branching).
    // 5: exact searches may also branch on a cycle's cluster (which selected number leaves
    //    the cycle's factors), and prune by the region bound: other trees, other paths.
    // 6: exact searches weigh 16 candidate cycles at each branching node instead of 8.
    // 7: a cycle's children take its pairs largest number first (fixing the largest pairs
    //    in the later children) instead of smallest first: other trees, other paths.
    // 8: the helper edges m p -> m of a prime's family below the t_k largest primes of its
    //    k are excluded at the root (`symmetry`): smaller trees, other paths.
    const SOLVER_VERSION: u32 = 8;
    type Params = SieveParams;

    fn from_params(params: SieveParams) -> Result<Self, ProblemError> {
        let bad = |why: String| ProblemError::InvalidParams(format!("sieve: {why}"));
        if params.n_from.is_some() || params.n_to.is_some() {
            return Err(bad(
                "--n-from/--n-to name a family of campaigns; give one --n per instance".into(),
            ));
        }
        let n = params.n.ok_or_else(|| bad("--n is required".into()))?;
        if !(1..=MAX_N).contains(&n) {
            return Err(bad(format!("--n {n} is out of range: 1..={MAX_N}")));
        }
        if params.independent && params.heuristic {
            return Err(bad("--independent is an exact-mode flag".into()));
        }
        if params.unit_seconds.is_some() && !params.heuristic {
            return Err(bad("--unit-seconds needs --heuristic".into()));
        }
        if params.unit_seconds == Some(0) || params.unit_seconds.is_some_and(|s| s > 86_400) {
            return Err(bad("--unit-seconds must be in 1..=86400".into()));
        }
        if let Some(units) = params.units {
            if !(1..=100_000).contains(&units) {
                return Err(bad(format!("--units {units} is out of range: 1..=100000")));
            }
        }
        let node_cuts = (!params.heuristic && n >= NODE_CUTS_FROM).then_some(0);
        Ok(Sieve {
            params,
            n,
            start: OnceLock::new(),
            frontier: OnceLock::new(),
            solver: Self::SOLVER_VERSION,
            node_cuts,
            rank_pool: None,
            local_ranks: None,
            root_side: OnceLock::new(),
            shade_scale: SHADE_SCALE,
        })
    }

    fn family(params: &SieveParams) -> Result<Option<Vec<SieveParams>>, ProblemError> {
        let (from, to) = match (params.n_from, params.n_to) {
            (None, None) => return Ok(None),
            (Some(from), Some(to)) => (from, to),
            _ => {
                return Err(ProblemError::InvalidParams(
                    "sieve: --n-from and --n-to go together".into(),
                ))
            }
        };
        if params.n.is_some() {
            return Err(ProblemError::InvalidParams(
                "sieve: give either --n or --n-from/--n-to".into(),
            ));
        }
        if from < 1 || from > to || to > MAX_N || to - from >= MAX_FAMILY {
            return Err(ProblemError::InvalidParams(format!(
                "sieve: --n-from {from} --n-to {to} must satisfy 1 <= from <= to <= {MAX_N}, \
                 at most {MAX_FAMILY} values"
            )));
        }
        Ok(Some(
            (from..=to)
                .map(|n| SieveParams {
                    n: Some(n),
                    n_from: None,
                    n_to: None,
                    ..params.clone()
                })
                .collect(),
        ))
    }

    /// An exact proof for an N whose search tree is large enough to checkpoint and donate.
    fn examples() -> Vec<Value> {
        vec![json!({"n": 120})]
    }
}

impl SieveParams {
    /// The parameters of one exact campaign for 1..=n, every option at its default.
    pub fn exact(n: u32) -> SieveParams {
        SieveParams {
            n: Some(n),
            n_from: None,
            n_to: None,
            heuristic: false,
            unit_seconds: None,
            units: None,
            independent: false,
        }
    }
}

/// The solution document of a game.
pub fn solution(moves: &[u32], score: i64) -> Value {
    json!({"moves": moves, "score": score})
}

impl Sieve {
    /// N.
    pub fn n(&self) -> u32 {
        self.n
    }

    /// The deterministic starting game of exact mode: the best game a search of
    /// [`probe_nodes`] nodes finds (deterministic, so every coordinator derives the same
    /// units), and whether that search covered the whole tree.
    fn probe(&self) -> &Probe {
        self.start.get_or_init(|| {
            let mut searcher = Searcher::new(self.n);
            let budget = Budget::new(probe_nodes(self.n));
            searcher.set_check_interval(64);
            let end = searcher.search(&[], None, None, &budget);
            // Large N can exhaust the budget before the first leaf: fall back on the greedy
            // game, so that every campaign starts with a bound.
            let mut game = budget
                .best
                .into_inner()
                .expect("poisoned")
                .or_else(|| Some(searcher.greedy_game()));
            let complete = end == Ok(SearchEnd::Done);
            if !complete {
                if let Some(better) =
                    probe_lns(self.n).filter(|b| game.as_ref().is_none_or(|g| b.1 > g.1))
                {
                    game = Some(better);
                }
            }
            Probe { game, complete }
        })
    }

    /// The searcher of exact mode's tree: strong branching against the starting game's
    /// score ([`Searcher::set_strong_branching`]) with cluster branching
    /// ([`Searcher::set_cluster_branching`]) and the region bound
    /// ([`Searcher::set_region_bound`]), the same for the splitter, every unit and the
    /// donation check, so that paths name the same nodes everywhere.
    pub fn exact_searcher(&self) -> Searcher {
        let mut searcher = Searcher::new(self.n);
        searcher.set_strong_branching(self.starting_game().map(|g| g.1), STRONG_CANDIDATES);
        searcher.set_largest_first(true);
        searcher.set_cluster_branching(true);
        searcher.set_region_bound(REGION_CYCLES);
        if self.solver >= FIRST_SYMMETRY_SOLVER {
            for (big, small) in symmetry::needless_edges(self.n) {
                searcher.exclude_at_root(big, small);
            }
        }
        if let Some(after) = self.node_cuts {
            searcher.set_node_cuts(Some(after));
            searcher.set_warm_lp(true);
            searcher.set_side_lp(true);
            searcher.set_cut_refresh(Some(search::CUT_REFRESH_AGE));
            searcher.set_rank_pool(self.rank_pool.clone());
            searcher.set_local_ranks(self.local_ranks.filter(|_| self.rank_pool.is_some()));
            searcher
                .set_shade_scale(self.shade_scale)
                .expect("checked by Sieve::with_shade_scale and MAX_N");
            let root = self.root_side.get_or_init(|| {
                // A root that names no node or whose LP fails leaves each unit to build
                // its own, as before.
                searcher.root_side_lp().ok().flatten().map(Arc::new)
            });
            searcher.set_root_side_lp(root.clone());
        }
        searcher
    }

    /// This instance with the node cuts' LPs also taking the rank cuts of `pool` (proven
    /// for this N, [`rank_cuts::RankPool`]; they only prune, the same tree).
    pub fn with_rank_pool(mut self, pool: Arc<rank_cuts::RankPool>) -> Sieve {
        self.rank_pool = Some(pool);
        self.root_side = OnceLock::new();
        self
    }

    /// This instance with rank cuts also proven in the tree (with a rank pool): at each
    /// branching node whose subtree took `after` nodes, of unions of at most `max_union`
    /// numbers ([`search::Searcher::set_local_ranks`]; they only prune, the same tree).
    pub fn with_local_ranks(mut self, after: u64, max_union: usize) -> Sieve {
        self.local_ranks = Some((after, max_union));
        self
    }

    /// This instance with the node cuts' penalties in `1/scale` points (default
    /// [`SHADE_SCALE`]; 1: whole points, as before; [`Searcher::set_shade_scale`]). They
    /// only prune: the same tree. Errors if `scale` is below 1 or `scale * N` overflows an
    /// edge weight.
    pub fn with_shade_scale(mut self, scale: i32) -> Result<Sieve, ProblemError> {
        if scale < 1 || i64::from(scale) * i64::from(self.n) > i64::from(i32::MAX) {
            return Err(ProblemError::InvalidParams(format!(
                "sieve: shade scale {scale} is out of range for N = {}",
                self.n
            )));
        }
        self.shade_scale = scale;
        Ok(self)
    }

    /// This instance with exact units that also prune by the cut bound (`None`: not; by
    /// default from [`NODE_CUTS_FROM`] on, from each unit's first branching node), derived
    /// at the first branching node whose subtree took `after` nodes (0: a unit's first) and
    /// kept warm down its tree ([`Searcher::set_node_cuts`], [`Searcher::set_warm_lp`]),
    /// its cuts refreshed where they leave a node above the bar
    /// ([`Searcher::set_cut_refresh`], [`search::CUT_REFRESH_AGE`]). The bound only prunes (strong branching weighs children by the plain matching), so
    /// the tree, its paths, units, checkpoints and donations are the same with it or
    /// without: a proof journaled without it can be finished with it. It pays at the
    /// frontier's large units (N = 785: 1.45 to 17 times less time a unit) and costs
    /// at small N. Each unit's first frame re-optimizes the root's LP, built once per
    /// instance ([`Searcher::set_root_side_lp`]).
    pub fn with_node_cuts(mut self, after: Option<u64>) -> Sieve {
        self.node_cuts = after;
        self.root_side = OnceLock::new();
        self
    }

    /// Whether exact units prune by node cuts, and from a subtree of how many nodes
    /// ([`Sieve::with_node_cuts`]).
    pub fn node_cuts(&self) -> Option<u64> {
        self.node_cuts
    }

    /// This instance with exact mode's tree as solver version `version` searched it: the
    /// current one, or 7 (without [`symmetry`]'s exclusions), so that a local proof begun
    /// under version 7 is finished on the same tree ([`local::ProofOptions::solver`]).
    pub fn with_solver(mut self, version: u32) -> Result<Sieve, ProblemError> {
        if !(FIRST_SYMMETRY_SOLVER - 1..=Self::SOLVER_VERSION).contains(&version) {
            return Err(ProblemError::InvalidParams(format!(
                "sieve: solver version {version} is not one this build searches: {} or {}",
                FIRST_SYMMETRY_SOLVER - 1,
                Self::SOLVER_VERSION
            )));
        }
        self.solver = version;
        self.root_side = OnceLock::new();
        Ok(self)
    }

    /// The solver version whose tree exact mode searches.
    pub fn solver(&self) -> u32 {
        self.solver
    }

    /// The starting game of exact mode (see `Sieve::probe`).
    pub fn starting_game(&self) -> Option<&(Vec<u32>, i64)> {
        self.probe().game.as_ref()
    }

    fn split_units(&self) -> usize {
        self.params.units.unwrap_or(if self.params.heuristic {
            4
        } else {
            DEFAULT_SPLIT_UNITS
        }) as usize
    }

    /// The exact units: the tree expanded from the root, the node with the largest gap
    /// between its bound and the starting game first, until there are enough units. Nodes
    /// that cannot reach the starting game's score are dropped.
    pub fn frontier(&self) -> Result<&[Vec<u16>], ProblemError> {
        self.frontier
            .get_or_init(|| {
                let floor = self.starting_game().map(|g| g.1);
                // A tree the probe searched whole is one unit: splitting it costs more in
                // round trips than the search itself.
                let target = if self.probe().complete {
                    1
                } else {
                    self.split_units()
                };
                let mut searcher = self.exact_searcher();
                let root = searcher.expand(&[])?;
                // (path, bound, expandable)
                let mut open: Vec<(Vec<u16>, i64, bool)> = vec![(Vec::new(), root.bound, true)];
                while open.len() < target {
                    let Some(at) = open
                        .iter()
                        .enumerate()
                        .filter(|(_, e)| e.2)
                        .max_by(|a, b| a.1 .1.cmp(&b.1 .1).then(b.1 .0.cmp(&a.1 .0)))
                        .map(|(i, _)| i)
                    else {
                        break;
                    };
                    let (path, _, _) = open.swap_remove(at);
                    let expansion = searcher.expand(&path)?;
                    if expansion.children.is_empty() {
                        open.push((path, expansion.bound, false));
                        continue;
                    }
                    for (child, bound) in expansion.children {
                        if floor.is_none_or(|f| bound >= f) {
                            open.push((child, bound, true));
                        }
                    }
                }
                let mut paths: Vec<Vec<u16>> = open.into_iter().map(|e| e.0).collect();
                paths.sort();
                Ok(paths)
            })
            .as_ref()
            .map(Vec::as_slice)
            .map_err(|e| ProblemError::Solver(format!("sieve splitter: {e}")))
    }

    /// Reads the move list of a solution document.
    fn moves_of(&self, solution: &Value) -> Result<Vec<u64>, ProblemError> {
        let bad = |why: String| ProblemError::InvalidSolution(format!("sieve: {why}"));
        let moves = solution
            .get("moves")
            .and_then(Value::as_array)
            .ok_or_else(|| {
                bad("expected {\"moves\": [numbers in play order], \"score\": s}".into())
            })?;
        if moves.len() > self.n as usize / 2 {
            return Err(bad(format!(
                "{} moves: a game on 1..={} has at most {}",
                moves.len(),
                self.n,
                self.n / 2
            )));
        }
        moves
            .iter()
            .map(|m| {
                m.as_u64()
                    .ok_or_else(|| bad(format!("move {m} is not a non-negative integer")))
            })
            .collect()
    }

    fn solve_exact(
        &self,
        path: Vec<u16>,
        limit: Option<Vec<u16>>,
        ctx: &dyn SolveContext,
    ) -> Result<UnitOutcome, ProblemError> {
        let resume = match ctx.resume_cursor() {
            Some(bytes) => match SieveUnit::decode(bytes)? {
                SieveUnit::Exact { path: at, .. } => Some(at),
                SieveUnit::Heuristic { .. } => {
                    return Err(ProblemError::InvalidUnit(
                        "sieve: a heuristic cursor for an exact unit".into(),
                    ))
                }
            },
            None => None,
        };
        let floor = self.starting_game().map(|g| g.1 - 1);
        let observer = UnitObserver {
            ctx,
            floor,
            path: path.clone(),
            limit: Mutex::new(limit.clone()),
            best: Mutex::new(None),
        };
        let mut searcher = self.exact_searcher();
        let end = searcher
            .search(&path, resume.as_deref(), limit.as_deref(), &observer)
            .map_err(|e| ProblemError::InvalidUnit(format!("sieve: {e}")))?;
        if end == SearchEnd::Stopped {
            return Ok(UnitOutcome::Stopped);
        }
        let best = observer.best.into_inner().expect("poisoned");
        Ok(UnitOutcome::Searched {
            best: best.map(|(moves, score)| Scored {
                solution: solution(&moves, score),
                score,
            }),
            hits: Vec::new(),
        })
    }

    /// The anytime campaign's shape.
    fn plan(&self) -> anytime::Plan {
        anytime::Plan {
            n: self.n,
            units: self.split_units() as u32,
            steps: anytime::steps_for(self.n, self.params.unit_seconds.unwrap_or(10)),
        }
    }
}

impl Problem for Sieve {
    fn objective(&self) -> Objective {
        Objective::Max
    }

    fn exhaustive(&self) -> bool {
        !self.params.heuristic
    }

    /// The exact branch-and-bound reports games of its unit's own leaves.
    fn finds_stay_in_unit(&self) -> bool {
        !self.params.heuristic
    }

    fn initial_bound(&self) -> Option<i64> {
        // Exact mode searches only for games at least as good as the starting game (one of
        // the units finds it or better again).
        if self.params.heuristic {
            return None;
        }
        self.starting_game().map(|g| g.1 - 1)
    }

    fn split(&self, cursor: Option<&[u8]>, max_units: usize) -> Result<SplitBatch, ProblemError> {
        if self.params.heuristic {
            return self.plan().split_from(cursor, max_units, None);
        }
        let from = match cursor {
            None => 0,
            Some(bytes) => {
                let raw: [u8; 4] = bytes
                    .try_into()
                    .map_err(|_| ProblemError::InvalidUnit("sieve: split cursor".into()))?;
                u32::from_le_bytes(raw) as usize
            }
        };
        let units: Vec<SieveUnit> = self
            .frontier()?
            .iter()
            .map(|path| SieveUnit::Exact {
                path: path.clone(),
                limit: None,
            })
            .collect();
        if from > units.len() {
            return Err(ProblemError::InvalidUnit(format!(
                "sieve: split cursor {from} is past the {} units",
                units.len()
            )));
        }
        let to = units.len().min(from + max_units);
        let batch = units[from..to]
            .iter()
            .map(|u| UnitSpec {
                label: u.label(),
                payload: u.encode(),
            })
            .collect();
        Ok(SplitBatch {
            units: batch,
            next: (to < units.len()).then(|| (to as u32).to_le_bytes().to_vec()),
        })
    }

    fn split_from(
        &self,
        cursor: Option<&[u8]>,
        max_units: usize,
        incumbent: Option<&Value>,
    ) -> Result<SplitBatch, ProblemError> {
        if !self.params.heuristic {
            return self.split(cursor, max_units);
        }
        let game = match incumbent {
            Some(solution) => {
                let moves = self
                    .moves_of(solution)?
                    .into_iter()
                    .map(|m| u32::try_from(m).unwrap_or(u32::MAX))
                    .collect();
                Some((moves, self.score(solution)?))
            }
            None => None,
        };
        self.plan().split_from(cursor, max_units, game.as_ref())
    }

    fn waits_at(&self, cursor: &[u8]) -> bool {
        self.params.heuristic && self.plan().waits_at(cursor)
    }

    fn solve(&self, payload: &[u8], ctx: &dyn SolveContext) -> Result<UnitOutcome, ProblemError> {
        match SieveUnit::decode(payload)? {
            SieveUnit::Exact { path, limit } if !self.params.heuristic => {
                self.solve_exact(path, limit, ctx)
            }
            SieveUnit::Heuristic {
                seed, steps, start, ..
            } if self.params.heuristic => self.plan().solve(seed, steps, &start, ctx),
            _ => Err(ProblemError::InvalidUnit(
                "sieve: the unit's kind does not match the campaign's mode".into(),
            )),
        }
    }
}

impl Verification for Sieve {
    fn score(&self, solution: &Value) -> Result<i64, ProblemError> {
        let moves = self.moves_of(solution)?;
        let score = game::replay(self.n, &moves)
            .map_err(|e| ProblemError::InvalidSolution(format!("sieve N={}: {e}", self.n)))?;
        if let Some(claimed) = solution.get("score") {
            if claimed.as_u64() != Some(score) {
                return Err(ProblemError::InvalidSolution(format!(
                    "sieve: the moves score {score}, not {claimed}"
                )));
            }
        }
        Ok(score as i64)
    }
}

impl Units for Sieve {
    fn check_donation(
        &self,
        old: &[u8],
        remaining: &[u8],
        donated: &[Vec<u8>],
        bound: Option<i64>,
    ) -> Result<(), ProblemError> {
        let range = |bytes: &[u8]| match SieveUnit::decode(bytes)? {
            SieveUnit::Exact { path, limit } => Ok(RangeUnit { path, limit }),
            SieveUnit::Heuristic { .. } => Err(ProblemError::Unsupported(
                "heuristic sieve units are never split by donation".into(),
            )),
        };
        let donated = donated
            .iter()
            .map(|bytes| range(bytes))
            .collect::<Result<Vec<_>, _>>()?;
        let (old, remaining) = (range(old)?, range(remaining)?);
        let mut gaps =
            donation::GapSearch::new(self.exact_searcher(), bound.max(self.initial_bound()));
        check_range_donation(&old, &remaining, &donated, &mut gaps)
    }
}

impl Chains for Sieve {
    /// Exact mode builds on the exact campaign for N - 1 (see [`family`]).
    fn predecessor(&self) -> Option<crate::premise::Predecessor> {
        if family::builds_on_predecessor(&self.params) {
            family::predecessor(self.n)
        } else {
            None
        }
    }

    fn inherit(
        &self,
        value: i64,
        solution: &Value,
    ) -> Result<crate::premise::Inherited, ProblemError> {
        if !family::builds_on_predecessor(&self.params) {
            return Ok(crate::premise::Inherited::default());
        }
        family::inherit(self.n, value, solution)
    }
}

impl Placement for Sieve {}

impl Presentation for Sieve {
    fn parse_submission(&self, text: &str) -> Result<Value, ProblemError> {
        let text = text.trim();
        if text.starts_with('{') {
            return serde_json::from_str(text)
                .map_err(|e| ProblemError::InvalidSolution(format!("sieve: not JSON: {e}")));
        }
        // The rendered form: moves separated by spaces or commas; '#' starts a comment.
        let moves = text
            .lines()
            .map(|line| line.split('#').next().unwrap_or(""))
            .flat_map(|line| line.split(|c: char| c.is_whitespace() || c == ','))
            .filter(|w| !w.is_empty())
            .map(|w| {
                w.parse::<u64>().map_err(|_| {
                    ProblemError::InvalidSolution(format!("sieve: {w:?} is not a move"))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(json!({ "moves": moves }))
    }

    fn render(&self, value: &str, solution: Option<&Value>) -> String {
        match solution.and_then(|s| self.moves_of(s).ok()) {
            Some(moves) => format!(
                "{}\n# N = {}, score {value}\n",
                moves
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(" "),
                self.n
            ),
            None => format!("# no game found (value {value:?})\n"),
        }
    }

    fn drawing(&self, solution: &Value) -> Option<crate::drawing::Drawing> {
        drawing::draw(solution)
    }
}

/// Keeps the best game of a search that stops after a node budget (the exact campaign's
/// deterministic probe).
struct Budget {
    nodes: u64,
    spent: Mutex<u64>,
    best: Mutex<Option<(Vec<u32>, i64)>>,
}

impl Budget {
    fn new(nodes: u64) -> Budget {
        Budget {
            nodes,
            spent: Mutex::new(0),
            best: Mutex::new(None),
        }
    }
}

impl Observer for Budget {
    fn bound(&self) -> Option<i64> {
        self.best.lock().expect("poisoned").as_ref().map(|b| b.1)
    }
    fn found(&self, moves: &[u32], score: i64) {
        let mut best = self.best.lock().expect("poisoned");
        if best.as_ref().is_none_or(|b| score > b.1) {
            *best = Some((moves.to_vec(), score));
        }
    }
    fn progress(&self, nodes: u64) {
        *self.spent.lock().expect("poisoned") = nodes;
    }
    fn should_stop(&self) -> bool {
        *self.spent.lock().expect("poisoned") >= self.nodes
    }
}

/// Connects an exact search to the worker: bound, improvements, checkpoints, stop, donation.
struct UnitObserver<'a> {
    ctx: &'a dyn SolveContext,
    /// The campaign's starting bound (the worker's bound may not include it yet).
    floor: Option<i64>,
    path: Vec<u16>,
    limit: Mutex<Option<Vec<u16>>>,
    best: Mutex<Option<(Vec<u32>, i64)>>,
}

impl Observer for UnitObserver<'_> {
    fn bound(&self) -> Option<i64> {
        self.ctx.bound().max(self.floor)
    }

    fn found(&self, moves: &[u32], score: i64) {
        {
            let mut best = self.best.lock().expect("poisoned");
            if best.as_ref().is_some_and(|b| b.1 >= score) {
                return;
            }
            *best = Some((moves.to_vec(), score));
        }
        if self.ctx.bound().is_none_or(|b| score > b) {
            self.ctx.improve(Scored {
                solution: solution(moves, score),
                score,
            });
        }
    }

    fn progress(&self, nodes: u64) {
        self.ctx.progress(nodes, None);
    }

    fn checkpoint(&self, path: &[u16]) {
        let limit = self.limit.lock().expect("poisoned").clone();
        self.ctx.checkpoint(
            SieveUnit::Exact {
                path: path.to_vec(),
                limit,
            }
            .encode(),
        );
    }

    fn should_stop(&self) -> bool {
        self.ctx.stop_requested()
    }

    fn should_split(&self) -> bool {
        self.ctx.split_requested()
    }

    fn donate(&self, prefixes: Vec<Vec<u16>>, limit: Vec<u16>) -> bool {
        let units = prefixes
            .into_iter()
            .map(|path| {
                let unit = SieveUnit::Exact { path, limit: None };
                UnitSpec {
                    label: unit.label(),
                    payload: unit.encode(),
                }
            })
            .collect();
        let kept = SieveUnit::Exact {
            path: self.path.clone(),
            limit: Some(limit.clone()),
        };
        if self.ctx.donate(units, kept.encode()) {
            *self.limit.lock().expect("poisoned") = Some(limit);
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod records_tests;
#[cfg(test)]
mod tests;
