//! `grid`: Mikero's grid puzzle (issue 6). An n x n grid of cities joined by bridges with
//! positive costs; start anywhere, cross bridges (each crossing paid, reuse allowed) and stop
//! on entering the last unvisited city. Minimise the total cost.
//!
//! Two strategies:
//! - `exact` (default): branch-and-cut on the sparse grid graph ([`exact`]), seeded by a
//!   local-search incumbent ([`heuristic`]) that also polishes every walk the search finds.
//!   Units are lists of branch-and-bound subproblems ([`unit`](mod@unit)) carrying a cut pool
//!   ([`pool`]): one root unit that, after its root LP, splits into up to `--subtrees`
//!   subtree units (each starting from the root's tight cuts) and keeps donating open
//!   subproblems to idle workers, or (`--split endpoints`) one unit per smallest walk end.
//!   Finishing every unit proves the optimum.
//! - `tree`: the seed's best-first search over spanning trees ([`tree`]), run by the engine's
//!   expansion units: each unit is a tree, its result is the tree's neighbours, granted best
//!   first. A heuristic: it cannot see walks whose bridges contain a cycle.
//!
//! One job per file: [`instance`] (file format, generated instances, bridge lists), [`verify`]
//! (walk replay: adjacency, coverage, recomputed cost), [`closure`] (all-pairs shortest paths),
//! [`heuristic`] (iterated 2-opt/Or-opt on the closure plus a dummy city: the first incumbent),
//! [`exact`] (branch-and-cut), [`cuts`] (support graph components and Stoer-Wagner minimum cuts),
//! [`euler`] (integral LP point -> walk), [`unit`](mod@unit) (unit/checkpoint codec), [`pool`]
//! (cuts and their checked codec), [`tree`] (spanning trees: best walk = 2 w(T) - longest path,
//! one-swap neighbours); this file holds the parameters and the `Problem` impl.
//!
//! A reported walk's `lower_bound` is the best global bound the unit knows (spanning tree, root
//! LP, split bound): the finder's claim. Users see the coordinator's `bound` instead, the
//! spanning tree's weight per open unit; when a campaign finishes, `Problem::proven_solution`
//! restates the stored solution with `lower_bound` = cost. Primal side: the first incumbent is
//! the iterated 2-opt/Or-opt heuristic; every walk the branch-and-cut finds is then polished by
//! the same local search started from its order of first visits ([`heuristic::polish_walk`]),
//! which often jumps straight to the optimum (16x16 seed 2: 6,016 nodes before, 1,384 after).
//! `--strategy tree` uses `UnitOutcome::Expanded`: `child_priority` re-checks that a child is a
//! spanning tree one swap from its parent and returns its score.

pub mod closure;
pub mod cuts;
mod drawing;
pub mod euler;
pub mod exact;
pub mod heuristic;
pub mod instance;
pub mod pool;
pub mod tree;
pub mod unit;
pub mod verify;

use clap::{Args, ValueEnum};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::problem::{
    Chains, Objective, Placement, Presentation, Problem, ProblemError, Scored, SolveContext,
    SplitBatch, UnitOutcome, UnitSpec, Units, Verification,
};
use crate::registry::ProblemDef;
use closure::Closure;
use exact::{Hooks, Search, SearchEnd, Tick};
use instance::Instance;
use tree::Tree;
use unit::ExactUnit;

/// How often a running exact unit saves a checkpoint.
const CHECKPOINT_EVERY: Duration = Duration::from_secs(5);
/// Most neighbours one tree expansion hands back (the best ones).
pub const TREE_CHILDREN: usize = 64;

/// Subtree units the root unit splits into by default.
pub const DEFAULT_SUBTREES: u32 = 64;
/// Most subtree units the root unit may split into.
pub const MAX_SUBTREES: u32 = 4096;

fn default_subtrees() -> u32 {
    DEFAULT_SUBTREES
}

/// Which search a campaign runs.
#[derive(ValueEnum, Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Strategy {
    /// Branch-and-cut: proves the optimum.
    #[default]
    Exact,
    /// Best-first search over spanning trees (the seed's method; no proof).
    Tree,
}

/// How the exact strategy splits the campaign into units.
#[derive(ValueEnum, Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum SplitMode {
    /// One unit for the whole search; running units donate subtrees to idle workers.
    #[default]
    Root,
    /// One unit per city k: walks with an end at k and none at a smaller city.
    Endpoints,
}

/// Parameters: an instance file, or a generated instance (`--size n --seed S`).
#[derive(Args, Serialize, Deserialize, Clone, Debug)]
pub struct GridParams {
    /// Instance file (issue 6's format); its text is stored with the campaign.
    #[arg(long, conflicts_with = "seed")]
    #[serde(default)]
    pub file: Option<String>,
    /// Side n of a generated instance (with --seed), or the file's side.
    #[arg(long)]
    #[serde(default)]
    pub size: Option<u32>,
    /// Seed of the splitmix64 generator (with --size).
    #[arg(long)]
    #[serde(default)]
    pub seed: Option<u64>,
    /// Search strategy.
    #[arg(long, value_enum, default_value_t = Strategy::Exact)]
    #[serde(default)]
    pub strategy: Strategy,
    /// Unit split of the exact strategy.
    #[arg(long, value_enum, default_value_t = SplitMode::Root)]
    #[serde(default)]
    pub split: SplitMode,
    /// With `--split root`: the root unit splits into about this many subtree units after
    /// its first nodes (1: never; running units still donate to idle workers).
    #[arg(long, default_value_t = DEFAULT_SUBTREES)]
    #[serde(default = "default_subtrees")]
    pub subtrees: u32,
    /// The instance text (filled in from --file; workers never read files).
    #[arg(skip)]
    #[serde(default)]
    pub instance: Option<String>,
}

/// A grid puzzle campaign.
pub struct Grid {
    params: GridParams,
    grid: Instance,
    /// A proven lower bound for any walk: the minimum spanning tree's weight.
    tree_bound: u64,
}

impl ProblemDef for Grid {
    const NAME: &'static str = "grid";
    const ABOUT: &'static str =
        "Mikero's grid puzzle: the cheapest walk visiting every city of a grid, proven";
    /// 2: units carry a cut pool and a bound (workers of version 1 cannot read them).
    const SOLVER_VERSION: u32 = 2;
    type Params = GridParams;

    fn from_params(mut params: GridParams) -> Result<Self, ProblemError> {
        let invalid = |why: &str| ProblemError::InvalidParams(format!("grid: {why}"));
        let grid = match (&params.instance, &params.file, params.seed) {
            (Some(text), _, None) => Instance::parse(text)?,
            (None, Some(path), None) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| invalid(&format!("cannot read --file {path}: {e}")))?;
                let grid = Instance::parse(&text)?;
                params.instance = Some(grid.to_text());
                grid
            }
            (None, None, Some(seed)) => {
                let size = params.size.ok_or_else(|| invalid("--seed needs --size"))?;
                Instance::generate(size as usize, seed)?
            }
            (None, None, None) => {
                return Err(invalid("give --file PATH, or --size n --seed S"));
            }
            (_, _, Some(_)) => return Err(invalid("--seed goes with --size, not a file")),
        };
        if params.size.is_some_and(|n| n as usize != grid.side()) {
            return Err(invalid(&format!(
                "--size {} does not match the instance's side {}",
                params.size.unwrap_or(0),
                grid.side()
            )));
        }
        if params.subtrees == 0 || params.subtrees > MAX_SUBTREES {
            return Err(invalid(&format!(
                "--subtrees {} is not in 1..={MAX_SUBTREES}",
                params.subtrees
            )));
        }
        params.size = Some(grid.side() as u32);
        let tree_bound = Tree::minimum(&grid).weight(&grid);
        Ok(Grid {
            params,
            grid,
            tree_bound,
        })
    }

    fn canonical(&self) -> Option<GridParams> {
        Some(self.params.clone())
    }

    /// Small generated grids: each strategy and unit split (the 6 x 6 one branches, so its
    /// runs checkpoint and donate).
    fn examples() -> Vec<Value> {
        vec![
            serde_json::json!({"size": 6, "seed": 7}),
            serde_json::json!({"size": 3, "seed": 2, "split": "endpoints"}),
            serde_json::json!({"size": 3, "seed": 3, "strategy": "tree"}),
        ]
    }
}

impl Grid {
    /// The instance.
    pub fn instance(&self) -> &Instance {
        &self.grid
    }

    /// The solution document of a walk, with the best lower bound known (`lower`, from the
    /// root LP, or the spanning-tree bound).
    fn scored(&self, walk: &[usize], cost: u64, lower: u64) -> Scored {
        Scored {
            solution: verify::solution(walk, cost, self.tree_bound.max(lower).min(cost)),
            score: cost as i64,
        }
    }

    fn solve_exact(
        &self,
        payload: &[u8],
        ctx: &dyn SolveContext,
    ) -> Result<UnitOutcome, ProblemError> {
        let (bridges, cities) = (self.grid.bridges().len(), self.grid.cities());
        let mut unit = ExactUnit::decode(payload, bridges, cities)?;
        if let Some(cursor) = ctx.resume_cursor() {
            unit = ExactUnit::decode(cursor, bridges, cities)?;
        }
        let hooks = ContextHooks {
            grid: self,
            closure: Closure::new(&self.grid),
            ctx,
            best: Mutex::new(None),
            // The first node saves a checkpoint at once.
            last_checkpoint: Mutex::new(None),
            lower: Mutex::new(unit.lower),
            unreported: Mutex::new(false),
        };
        if ctx.bound().is_none() {
            let closure = &hooks.closure;
            let (order, _) = heuristic::best_order(closure, heuristic_kicks(cities), 1);
            let (walk, cost) = closure.walk_of(&order);
            // Reported with the first LP bound (a few seconds at most), not the weak
            // spanning-tree bound: until then this unit is the campaign's only one.
            *hooks.best.lock().expect("poisoned") = Some((walk, cost));
            *hooks.unreported.lock().expect("poisoned") = true;
        }
        let subtrees = match self.params.split {
            SplitMode::Root => self.params.subtrees as usize,
            SplitMode::Endpoints => 0,
        };
        let end = Search::new(&self.grid, &hooks)
            .split_into(subtrees)
            .run(unit)?;
        if end == SearchEnd::Stopped {
            hooks.report_deferred();
            return Ok(UnitOutcome::Stopped);
        }
        let best = hooks.best.into_inner().expect("poisoned");
        Ok(UnitOutcome::Searched {
            best: best.map(|(walk, cost)| {
                self.scored(&walk, cost, *hooks.lower.lock().expect("poisoned"))
            }),
            hits: Vec::new(),
        })
    }

    fn solve_tree(
        &self,
        payload: &[u8],
        ctx: &dyn SolveContext,
    ) -> Result<UnitOutcome, ProblemError> {
        let tree = Tree::decode(&self.grid, payload)?;
        let mut scored: Vec<(u64, Tree)> = tree
            .neighbours(&self.grid)
            .into_iter()
            .map(|next| (next.best_walk(&self.grid).1, next))
            .collect();
        scored.sort_by_key(|(score, _)| *score);
        scored.truncate(TREE_CHILDREN);
        ctx.progress(scored.len() as u64, Some(1.0));
        // The unit's own tree and its best neighbour: report whichever beats the bound.
        let mut best: Option<(Vec<usize>, u64)> = Some(tree.best_walk(&self.grid));
        if let Some((_, next)) = scored.first() {
            let candidate = next.best_walk(&self.grid);
            if best.as_ref().is_none_or(|b| candidate.1 < b.1) {
                best = Some(candidate);
            }
        }
        let best = best
            .filter(|(_, cost)| ctx.bound().is_none_or(|b| (*cost as i64) < b))
            .map(|(walk, cost)| self.scored(&walk, cost, 0));
        let children = scored
            .into_iter()
            .map(|(score, next)| UnitSpec {
                label: format!("tree scoring {score}"),
                payload: next.encode(),
            })
            .collect();
        Ok(UnitOutcome::Expanded { best, children })
    }
}

/// A locally solved instance.
#[derive(Clone, Debug)]
pub struct Solved {
    /// The best walk found.
    pub walk: Vec<usize>,
    /// Its cost.
    pub cost: u64,
    /// True when the search finished: `cost` is then the proven optimum.
    pub proven: bool,
    /// Branch-and-cut nodes processed.
    pub nodes: u64,
    /// The root LP bound, rounded up.
    pub root_bound: Option<u64>,
}

/// Solves `grid` on this thread: heuristic incumbent, then branch-and-cut, stopping after
/// `time_limit` if given.
pub fn solve_instance(
    grid: &Instance,
    time_limit: Option<Duration>,
) -> Result<Solved, ProblemError> {
    let closure = Closure::new(grid);
    let (order, _) = heuristic::best_order(&closure, heuristic_kicks(grid.cities()), 1);
    let (walk, cost) = closure.walk_of(&order);
    let mut hooks = exact::LocalHooks::with_incumbent(walk, cost);
    hooks.time_limit = time_limit;
    hooks.polish = Some(closure);
    let end = Search::new(grid, &hooks).run(ExactUnit::root())?;
    let (walk, cost) = hooks.best().expect("an incumbent exists");
    let (proven, nodes, root_bound) = match end {
        SearchEnd::Finished { nodes, root_bound } => (true, nodes, root_bound),
        SearchEnd::Stopped => (false, 0, None),
    };
    Ok(Solved {
        walk,
        cost,
        proven,
        nodes,
        root_bound,
    })
}

/// Kicks of the local search that polishes each walk the branch-and-cut finds.
pub const POLISH_KICKS: usize = 100;

/// Iterated local search effort for a grid of `cities` cities.
pub fn heuristic_kicks(cities: usize) -> usize {
    (2 * cities).clamp(50, 2000)
}

/// Connects the exact search to the worker: bound, improvements, checkpoints, stop, donation.
struct ContextHooks<'a> {
    grid: &'a Grid,
    closure: Closure,
    ctx: &'a dyn SolveContext,
    best: Mutex<Option<(Vec<usize>, u64)>>,
    last_checkpoint: Mutex<Option<Instant>>,
    /// The best global lower bound known (root LP, split bound, the unit's own `lower`).
    lower: Mutex<u64>,
    /// True while `best` holds the heuristic's walk, not yet reported.
    unreported: Mutex<bool>,
}

impl ContextHooks<'_> {
    /// Reports the heuristic's walk if it is still waiting for a better lower bound.
    fn report_deferred(&self) {
        if std::mem::take(&mut *self.unreported.lock().expect("poisoned")) {
            if let Some((walk, cost)) = self.best.lock().expect("poisoned").clone() {
                if self.ctx.bound().is_none_or(|b| (cost as i64) < b) {
                    let lower = *self.lower.lock().expect("poisoned");
                    self.ctx.improve(self.grid.scored(&walk, cost, lower));
                }
            }
        }
    }
}

impl Hooks for ContextHooks<'_> {
    fn incumbent(&self) -> Option<u64> {
        let mine = self.best.lock().expect("poisoned").as_ref().map(|b| b.1);
        let shared = self.ctx.bound().map(|b| b.max(0) as u64);
        match (mine, shared) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn improved(&self, walk: &[usize], cost: u64) {
        let polished = heuristic::polish_walk(&self.closure, walk, cost, POLISH_KICKS);
        let (walk, cost) = match &polished {
            Some((better, better_cost)) => (better.as_slice(), *better_cost),
            None => (walk, cost),
        };
        {
            let mut best = self.best.lock().expect("poisoned");
            if best.as_ref().is_some_and(|b| b.1 <= cost) {
                return;
            }
            *best = Some((walk.to_vec(), cost));
            *self.unreported.lock().expect("poisoned") = false;
        }
        if self.ctx.bound().is_none_or(|b| (cost as i64) < b) {
            let lower = *self.lower.lock().expect("poisoned");
            self.ctx.improve(self.grid.scored(walk, cost, lower));
        }
    }

    fn tick(&self, nodes: u64, open: &dyn Fn() -> ExactUnit) -> Tick {
        self.ctx.progress(nodes, None);
        let stop = self.ctx.stop_requested();
        let mut last = self.last_checkpoint.lock().expect("poisoned");
        if stop || last.is_none_or(|at| at.elapsed() >= CHECKPOINT_EVERY) {
            self.ctx.checkpoint(open().encode(self.grid.grid.cities()));
            *last = Some(Instant::now());
        }
        if stop {
            Tick::Stop
        } else {
            Tick::Continue
        }
    }

    fn donate(&self, give: Vec<ExactUnit>, keep: ExactUnit) -> bool {
        let cities = self.grid.grid.cities();
        let units = give
            .into_iter()
            .map(|unit| UnitSpec {
                label: unit.label(),
                payload: unit.encode(cities),
            })
            .collect();
        let donated = self.ctx.donate(units, keep.encode(cities));
        if donated {
            // The next node saves a checkpoint of what this unit still covers.
            *self.last_checkpoint.lock().expect("poisoned") = None;
        }
        donated
    }

    fn wants_donation(&self) -> bool {
        self.ctx.split_requested()
    }

    fn global_bound(&self, bound: u64) {
        {
            let mut lower = self.lower.lock().expect("poisoned");
            *lower = (*lower).max(bound);
        }
        self.report_deferred();
    }
}

impl Problem for Grid {
    fn objective(&self) -> Objective {
        Objective::Min
    }

    fn exhaustive(&self) -> bool {
        self.params.strategy == Strategy::Exact
    }

    fn split(&self, cursor: Option<&[u8]>, max_units: usize) -> Result<SplitBatch, ProblemError> {
        let done = SplitBatch {
            units: Vec::new(),
            next: None,
        };
        let root = |payload: Vec<u8>, label: String| SplitBatch {
            units: vec![UnitSpec { label, payload }],
            next: None,
        };
        match (self.params.strategy, self.params.split) {
            (Strategy::Tree, _) => Ok(match cursor {
                Some(_) => done,
                None => root(
                    Tree::minimum(&self.grid).encode(),
                    "minimum spanning tree".into(),
                ),
            }),
            (Strategy::Exact, SplitMode::Root) => Ok(match cursor {
                Some(_) => done,
                None => root(
                    ExactUnit::root().encode(self.grid.cities()),
                    ExactUnit::root().label(),
                ),
            }),
            (Strategy::Exact, SplitMode::Endpoints) => {
                let start = match cursor {
                    None => 0,
                    Some(bytes) => {
                        let [k] = crate::problem::codec::decode_u64s::<1>(bytes, "grid cursor")?;
                        k as usize
                    }
                };
                let cities = self.grid.cities();
                if cities == 1 {
                    return Ok(if start == 0 {
                        root(
                            ExactUnit::root().encode(self.grid.cities()),
                            ExactUnit::root().label(),
                        )
                    } else {
                        done
                    });
                }
                // The largest city is never the smaller end: its class is empty.
                let end = (start + max_units.max(1)).min(cities - 1);
                let units = (start..end)
                    .map(|k| {
                        let unit = ExactUnit::endpoint_class(k);
                        UnitSpec {
                            label: unit.label(),
                            payload: unit.encode(cities),
                        }
                    })
                    .collect();
                let next =
                    (end < cities - 1).then(|| crate::problem::codec::encode_u64s(&[end as u64]));
                Ok(SplitBatch { units, next })
            }
        }
    }

    fn solve(&self, payload: &[u8], ctx: &dyn SolveContext) -> Result<UnitOutcome, ProblemError> {
        match self.params.strategy {
            Strategy::Exact => self.solve_exact(payload, ctx),
            Strategy::Tree => self.solve_tree(payload, ctx),
        }
    }
}

impl Verification for Grid {
    fn score(&self, solution: &Value) -> Result<i64, ProblemError> {
        verify::score(&self.grid, solution).map(|cost| cost as i64)
    }
}

impl Units for Grid {
    /// Grid donations are checked for containment only: every kept or donated subproblem
    /// must carry all the restrictions of one of the donor's subproblems (so it lies inside
    /// the unit), and no piece may repeat another. Whether the pieces leave part of the unit
    /// out cannot be decided without the LP (a dropped branch may be one the donor pruned by
    /// its bound): that part rests on replication (see RELIABILITY.md).
    fn check_donation(
        &self,
        old: &[u8],
        remaining: &[u8],
        donated: &[Vec<u8>],
        bound: Option<i64>,
    ) -> Result<(), ProblemError> {
        let _ = bound;
        if self.params.strategy != Strategy::Exact {
            return Err(ProblemError::Unsupported(
                "only exact grid units are split by donation".into(),
            ));
        }
        let (bridges, cities) = (self.grid.bridges().len(), self.grid.cities());
        let old = ExactUnit::decode(old, bridges, cities)?;
        let refuse = |why: String| ProblemError::InvalidResult(format!("donation refused: {why}"));
        if donated.is_empty() {
            return Err(refuse("nothing was donated".into()));
        }
        let mut seen = std::collections::HashSet::new();
        for (i, bytes) in std::iter::once(remaining)
            .chain(donated.iter().map(Vec::as_slice))
            .enumerate()
        {
            let piece = ExactUnit::decode(bytes, bridges, cities)?;
            for sub in &piece.subproblems {
                let inside = old
                    .subproblems
                    .iter()
                    .any(|parent| parent.iter().all(|r| sub.contains(r)));
                if !inside {
                    return Err(refuse(format!(
                        "piece {i} holds a subproblem outside the donor's unit"
                    )));
                }
                let mut key = sub.clone();
                key.sort_by_key(|r| format!("{r:?}"));
                if !seen.insert(format!("{key:?}")) {
                    return Err(refuse(format!("piece {i} repeats a subproblem")));
                }
            }
        }
        Ok(())
    }

    /// Every walk costs at least the minimum spanning tree's weight, whichever subproblems
    /// the unit holds; the `lower` a unit carries is its creator's word (a worker's, for
    /// donated units), so it is not used here.
    fn bound_of_unit(&self, payload: &[u8]) -> Option<i64> {
        let _ = payload;
        (self.params.strategy == Strategy::Exact).then_some(self.tree_bound as i64)
    }

    fn child_priority(&self, parent: &[u8], child: &[u8]) -> Result<i64, ProblemError> {
        if self.params.strategy != Strategy::Tree {
            return Err(ProblemError::Unsupported(
                "grid: only --strategy tree expands units".into(),
            ));
        }
        let parent = Tree::decode(&self.grid, parent)?;
        let child = Tree::decode(&self.grid, child)?;
        if !parent.is_neighbour(&child) {
            return Err(ProblemError::InvalidUnit(
                "grid tree unit: the child does not differ from its parent by one bridge".into(),
            ));
        }
        Ok(child.best_walk(&self.grid).1 as i64)
    }
}

impl Chains for Grid {
    fn proven_solution(&self, solution: &Value) -> Option<Value> {
        // Only the exact strategy proves anything; its optimum is its own lower bound.
        if self.params.strategy != Strategy::Exact {
            return None;
        }
        let walk = verify::walk_of(&self.grid, solution).ok()?;
        let cost = verify::walk_cost(&self.grid, &walk).ok()?;
        Some(verify::solution(&walk, cost, cost))
    }
}

impl Placement for Grid {}

impl Presentation for Grid {
    fn render(&self, value: &str, solution: Option<&Value>) -> String {
        match solution.and_then(|s| verify::walk_of(&self.grid, s).ok()) {
            Some(walk) => {
                let cities: Vec<String> = walk.iter().map(usize::to_string).collect();
                format!("{}\n# cost {value}\n", cities.join(" "))
            }
            None => format!("# no walk found (value {value:?})\n"),
        }
    }

    fn drawing(&self, solution: &Value) -> Option<crate::drawing::Drawing> {
        drawing::draw(self.instance().side(), solution)
    }
}

#[cfg(test)]
mod tests;
