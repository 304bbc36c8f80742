//! The exact solver: branch-and-cut on the sparse grid graph.
//!
//! A walk visiting every city, plus a dummy vertex joined to its two ends, is a connected
//! multigraph with even degrees in which each bridge is crossed 0, 1 or 2 times (a third
//! crossing can always be dropped with a second one). The LP relaxation has one column per
//! bridge (`x_e` in [0, 2], cost c_e) and one per city (`y_v` in [0, 1], the dummy edge),
//! `sum y = 2`, and the connectivity cuts `x(delta(S)) + y(S) >= 2` for every set S of
//! cities, separated by minimum cuts; its optimum is the subtour (Held-Karp) bound of the
//! free-ends path TSP on the metric closure. Branching, cuts and distribution: below.
//! The LP is `microlp` (pure Rust), re-solved warm by its dual simplex after each edit.
//!
//! # The model
//!
//! The exact model lives on the sparse grid graph, not the dense closure: a walk plus a dummy
//! vertex joined to its two ends is a connected even multigraph, each bridge crossed 0..2 times.
//! LP columns `x_e` in [0, 2] per bridge and `y_v` in [0, 1] per city, `sum y = 2`, cuts
//! `x(delta(S)) + y(S) >= 2` separated by components and Stoer-Wagner ([`super::cuts`]), and
//! blossom combs (`x(delta(H)) + sum x(delta(T_i)) >= 3k + 1`; valid for walks because a walk
//! crosses every set at least as often as the Hamiltonian cycle its shortcut makes in the
//! closure). Children re-solve warm from a clone of the parent's LP with one row added.
//!
//! # Branching
//!
//! A city whose LP degree is nearly odd (within 1/2 of 2k+1) splits into `degree <= 2k` /
//! `degree >= 2k+2` (this cut the node counts tenfold at 12x12); otherwise the most fractional
//! column (nearer side first). A subproblem is a list of such restrictions; a unit
//! ([`super::unit`]) is a list of subproblems plus a cut pool and the global lower bound its
//! creator knew, and units, checkpoints (the open subproblems every 5 s) and donations share
//! that one encoding. [`super::pool`] holds the cuts and their codec (a city set as a `u16` list
//! or a bitset, whichever is shorter); decoding checks every cut's shape (proper sets; a comb has
//! an odd number >= 3 of disjoint two-vertex teeth each crossing the handle), so a payload can
//! only name valid inequalities.
//!
//! # Distribution
//!
//! With `--split root` (the default) the campaign starts as one whole-problem unit; after its
//! root LP it searches best-bound first until it has `--subtrees` open nodes (default 64) or a
//! worker is idle, then donates every open node but the best as its own subtree unit and dives
//! into the kept one with its warm LP. Every donated unit carries the cuts that were tight at
//! the root LP, so it starts from the root's strong LP instead of separating everything again,
//! and the smallest open-node bound (capped by the incumbent) as its `lower`. Running units still
//! donate the shallower half of their DFS stack (at most 16 subtrees, the largest ones left)
//! whenever the coordinator reports an idle worker. The incumbent reaches running units through
//! `SolveContext::bound` (the worker's shared bound, fed by the `WatchBounds` stream), which the
//! search re-reads before every prune. `--split endpoints` makes one unit per smallest walk end
//! instead.

use microlp::{ComparisonOp, LinearExpr, OptimizationDirection, Solution, Variable};
use std::time::{Duration, Instant};

use super::cuts::Support;
use super::euler::walk_from_crossings;
use super::instance::Instance;
use super::pool::Cut;
use super::unit::{ExactUnit, Restriction, Subproblem, Target};
use crate::problem::ProblemError;

const EPS: f64 = 1e-6;
/// Cuts added per separation round at most.
const CUTS_PER_ROUND: usize = 40;

/// What the search reports to and asks of its caller (the unit's solve context).
pub trait Hooks {
    /// The best walk cost known anywhere (only strictly better walks are searched for).
    fn incumbent(&self) -> Option<u64>;
    /// A walk better than every incumbent seen so far.
    fn improved(&self, walk: &[usize], cost: u64);
    /// Called before each node; `open` is the unit of the open subproblems (the node's
    /// first), for a checkpoint. Returns whether to go on.
    fn tick(&self, nodes: u64, open: &dyn Fn() -> ExactUnit) -> Tick;
    /// Hands the units `give` away; true when accepted, and the search then covers only
    /// `keep`.
    fn donate(&self, give: Vec<ExactUnit>, keep: ExactUnit) -> bool;
    /// True when the caller would like a donation now.
    fn wants_donation(&self) -> bool;
    /// A lower bound valid for every walk of the instance (the unrestricted root LP).
    fn global_bound(&self, bound: u64) {
        let _ = bound;
    }
}

/// What [`Hooks::tick`] asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tick {
    /// Keep searching.
    Continue,
    /// Stop now (the caller has saved the open subproblems).
    Stop,
}

/// How a search ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SearchEnd {
    /// Every subproblem was searched.
    Finished {
        /// Nodes processed.
        nodes: u64,
        /// The root LP bound (rounded up) of the first subproblem, when it was solved.
        root_bound: Option<u64>,
    },
    /// Stopped at the caller's request.
    Stopped,
}

/// An LP point: its value, the bridge columns and the end columns.
#[derive(Clone, Debug)]
pub struct Relaxation {
    /// The objective.
    pub value: f64,
    /// Crossings per bridge.
    pub bridges: Vec<f64>,
    /// Per city: how much it is an end of the walk.
    pub ends: Vec<f64>,
}

/// The LP model of one grid: column handles and the base rows.
struct Model<'a> {
    grid: &'a Instance,
    x: Vec<Variable>,
    y: Vec<Variable>,
    problem: microlp::Problem,
}

impl<'a> Model<'a> {
    fn new(grid: &'a Instance) -> Model<'a> {
        let mut problem = microlp::Problem::new(OptimizationDirection::Minimize);
        let x: Vec<Variable> = grid
            .bridges()
            .iter()
            .map(|b| problem.add_var(f64::from(b.cost), (0.0, 2.0)))
            .collect();
        let y: Vec<Variable> = (0..grid.cities())
            .map(|_| problem.add_var(0.0, (0.0, 1.0)))
            .collect();
        problem.add_constraint(
            y.iter().map(|&v| (v, 1.0)).collect::<LinearExpr>(),
            ComparisonOp::Eq,
            2.0,
        );
        let mut model = Model {
            grid,
            x,
            y,
            problem,
        };
        for city in 0..grid.cities() {
            let expr = model.degree_expr(city);
            model.problem.add_constraint(expr, ComparisonOp::Ge, 2.0);
        }
        model
    }

    fn degree_expr(&self, city: usize) -> LinearExpr {
        let mut expr: LinearExpr = self
            .grid
            .neighbours(city)
            .iter()
            .map(|&(_, bridge)| (self.x[bridge], 1.0))
            .collect();
        expr.add(self.y[city], 1.0);
        expr
    }

    /// The row of `cut`: the cut values of its sets, summed column by column.
    fn cut_row(&self, cut: &Cut, inside: &mut [bool]) -> LinearExpr {
        let bridges = self.x.len();
        let mut coefficients = vec![0.0f64; bridges + self.y.len()];
        for set in &cut.sets {
            for &v in set {
                inside[v] = true;
            }
            for (index, bridge) in self.grid.bridges().iter().enumerate() {
                if inside[bridge.a] != inside[bridge.b] {
                    coefficients[index] += 1.0;
                }
            }
            for &v in set {
                coefficients[bridges + v] += 1.0;
                inside[v] = false;
            }
        }
        coefficients
            .iter()
            .enumerate()
            .filter(|(_, &c)| c != 0.0)
            .map(|(i, &c)| {
                let var = if i < bridges {
                    self.x[i]
                } else {
                    self.y[i - bridges]
                };
                (var, c)
            })
            .collect()
    }

    fn restriction_row(&self, r: &Restriction) -> (LinearExpr, ComparisonOp, f64) {
        let expr = match r.target {
            Target::Bridge(i) => [(self.x[i as usize], 1.0)].into_iter().collect(),
            Target::End(i) => [(self.y[i as usize], 1.0)].into_iter().collect(),
            Target::Degree(i) => self.degree_expr(i as usize),
        };
        let op = if r.upper {
            ComparisonOp::Le
        } else {
            ComparisonOp::Ge
        };
        (expr, op, f64::from(r.value))
    }
}

/// Maps microlp's answer: `Ok(None)` when infeasible.
fn outcome(
    result: Result<microlp::SolveOutcome, microlp::Error>,
) -> Result<Option<Solution>, ProblemError> {
    match result {
        Ok(outcome) => outcome
            .into_solution()
            .map(Some)
            .map_err(|_| ProblemError::Solver("grid: the LP was interrupted".into())),
        Err(microlp::Error::Infeasible) => Ok(None),
        Err(e) => Err(ProblemError::Solver(format!("grid: LP failed: {e}"))),
    }
}

/// A node waiting on the DFS stack.
struct Open {
    /// The parent's LP (with its cuts), to which `pending` is added; `None` to rebuild.
    base: Option<Solution>,
    pending: Option<Restriction>,
    /// The parent's LP value (a lower bound for this node).
    bound: f64,
    restrictions: Subproblem,
}

/// The branch-and-cut search over one unit.
pub struct Search<'a> {
    grid: &'a Instance,
    model: Model<'a>,
    hooks: &'a dyn Hooks,
    /// Cuts found so far, reused across nodes.
    pool: Vec<Cut>,
    /// The cuts handed on with checkpoints and donated units: the unit's own, or the cuts
    /// tight at its first LP.
    carried: Vec<Cut>,
    /// A lower bound on every walk of the instance (0 until one is known).
    lower: u64,
    /// Split a whole-problem unit into about this many subtree units after its first nodes
    /// (0 or 1: never).
    split_into: usize,
    best: Option<u64>,
    nodes: u64,
    inside: Vec<bool>,
}

/// Rounds an LP value up to the integer bound it proves.
fn integer_bound(lp: f64) -> u64 {
    (lp - EPS).ceil().max(0.0) as u64
}

impl<'a> Search<'a> {
    /// A search on `grid` reporting to `hooks`.
    pub fn new(grid: &'a Instance, hooks: &'a dyn Hooks) -> Search<'a> {
        Search {
            grid,
            model: Model::new(grid),
            hooks,
            pool: Vec::new(),
            carried: Vec::new(),
            lower: 0,
            split_into: 0,
            best: None,
            nodes: 0,
            inside: vec![false; grid.cities()],
        }
    }

    /// Splits a unit covering the whole problem into about `subtrees` subtree units (searched
    /// best-bound first until there are that many open nodes, then all but the best one are
    /// donated, carrying the root's tight cuts).
    pub fn split_into(mut self, subtrees: usize) -> Self {
        self.split_into = subtrees;
        self
    }

    fn upper(&self) -> Option<u64> {
        match (self.best, self.hooks.incumbent()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// True when an LP value `lp` cannot lead to a walk cheaper than the incumbent.
    fn pruned(&self, lp: f64) -> bool {
        self.upper()
            .is_some_and(|ub| (lp - EPS).ceil() >= ub as f64)
    }

    /// The unit of `subproblems` with the carried cuts and the known lower bound.
    fn unit_of(&self, subproblems: Vec<Subproblem>) -> ExactUnit {
        ExactUnit {
            subproblems,
            cuts: self.carried.clone(),
            lower: self.lower,
        }
    }

    fn raise_lower(&mut self, bound: u64) {
        if bound > self.lower {
            self.lower = bound;
            self.hooks.global_bound(bound);
        }
    }

    /// Searches every subproblem of `unit`.
    pub fn run(&mut self, unit: ExactUnit) -> Result<SearchEnd, ProblemError> {
        if self.grid.cities() == 1 {
            if self.upper().is_none_or(|ub| ub > 0) {
                self.best = Some(0);
                self.hooks.improved(&[0], 0);
            }
            return Ok(SearchEnd::Finished {
                nodes: 1,
                root_bound: Some(0),
            });
        }
        self.pool.extend(unit.cuts.iter().cloned());
        self.carried = unit.cuts;
        self.raise_lower(unit.lower);
        let whole = unit.subproblems.len() == 1 && unit.subproblems[0].is_empty();
        let mut splitting = whole && self.split_into > 1;
        let mut stack: Vec<Open> = unit
            .subproblems
            .into_iter()
            .rev()
            .map(|restrictions| Open {
                base: None,
                pending: None,
                bound: f64::NEG_INFINITY,
                restrictions,
            })
            .collect();
        let mut root_bound = None;
        let first_node = self.nodes;
        loop {
            let next = if splitting {
                // Best bound first while splitting: the open nodes stay near the root.
                let best =
                    (0..stack.len()).min_by(|&a, &b| stack[a].bound.total_cmp(&stack[b].bound));
                best.map(|i| stack.remove(i))
            } else {
                stack.pop()
            };
            let Some(open) = next else { break };
            let tick = self.hooks.tick(self.nodes, &|| {
                self.unit_of(
                    std::iter::once(open.restrictions.clone())
                        .chain(stack.iter().rev().map(|o| o.restrictions.clone()))
                        .collect(),
                )
            });
            if tick == Tick::Stop {
                return Ok(SearchEnd::Stopped);
            }
            let split_now = splitting
                && (stack.len() + 1 >= self.split_into
                    || (!stack.is_empty() && self.hooks.wants_donation()));
            if split_now {
                splitting = false;
                // A walk cheaper than the incumbent lies in an open node: the smallest node
                // bound (or the incumbent) is a global bound.
                let lowest = stack.iter().map(|o| o.bound).fold(open.bound, f64::min);
                let upper = self.upper().unwrap_or(u64::MAX);
                self.raise_lower(integer_bound(lowest).min(upper));
                let give: Vec<ExactUnit> = stack
                    .iter()
                    .map(|o| self.unit_of(vec![o.restrictions.clone()]))
                    .collect();
                if self
                    .hooks
                    .donate(give, self.unit_of(vec![open.restrictions.clone()]))
                {
                    stack.clear();
                }
            } else if !splitting && stack.len() >= 2 && self.hooks.wants_donation() {
                // The bottom of the stack holds the shallowest nodes: the largest subtrees.
                let give_count = stack.len().div_ceil(2).min(16);
                let give: Vec<ExactUnit> = stack[..give_count]
                    .iter()
                    .map(|o| self.unit_of(vec![o.restrictions.clone()]))
                    .collect();
                let keep = self.unit_of(
                    std::iter::once(open.restrictions.clone())
                        .chain(
                            stack[give_count..]
                                .iter()
                                .rev()
                                .map(|o| o.restrictions.clone()),
                        )
                        .collect(),
                );
                if self.hooks.donate(give, keep) {
                    stack.drain(..give_count);
                }
            }
            if self.pruned(open.bound) {
                continue;
            }
            self.nodes += 1;
            let solution = match (open.base, open.pending) {
                (Some(base), Some(r)) => {
                    let (expr, op, rhs) = self.model.restriction_row(&r);
                    outcome(base.add_constraint(expr, op, rhs))?
                }
                _ => self.build(&open.restrictions)?,
            };
            let Some(solution) = solution else { continue };
            let Some(solution) = self.separate(solution)? else {
                continue;
            };
            let value = solution.objective();
            if self.nodes == first_node + 1 {
                root_bound = Some(integer_bound(value));
                if open.restrictions.is_empty() {
                    self.raise_lower(integer_bound(value));
                }
                // Every cut is valid for every walk: later units start from these.
                if self.carried.is_empty() {
                    self.carried = self.tight_cuts(&solution);
                }
            }
            if self.pruned(value) {
                continue;
            }
            match self.branch_on(&solution)? {
                Branch::Feasible(walk, cost) => {
                    if self.upper().is_none_or(|ub| cost < ub) {
                        self.best = Some(cost);
                        self.hooks.improved(&walk, cost);
                    }
                }
                Branch::Split(first, second) => {
                    // Explore `first` first: push `second` below it.
                    for r in [second, first] {
                        let mut restrictions = open.restrictions.clone();
                        restrictions.push(r);
                        stack.push(Open {
                            base: Some(solution.clone()),
                            pending: Some(r),
                            bound: value,
                            restrictions,
                        });
                    }
                }
            }
        }
        Ok(SearchEnd::Finished {
            nodes: self.nodes,
            root_bound,
        })
    }

    /// The LP point's x (bridge) and y values, in model order.
    fn lp_point(&self, solution: &Solution) -> (Vec<f64>, Vec<f64>) {
        let values = |vars: &[Variable]| -> Vec<f64> {
            vars.iter().map(|&v| solution.var_value(v)).collect()
        };
        (values(&self.model.x), values(&self.model.y))
    }

    /// The pool's cuts that hold with equality at the LP point.
    fn tight_cuts(&mut self, solution: &Solution) -> Vec<Cut> {
        let (xs, ys) = self.lp_point(solution);
        let mut tight = Vec::new();
        for cut in &self.pool {
            if cut.value(self.grid, &mut self.inside, &xs, &ys) < cut.rhs + 1e-4 {
                tight.push(cut.clone());
            }
        }
        tight
    }

    /// The root relaxation with every cut the separators find (for diagnostics); `None`
    /// when infeasible.
    pub fn root_relaxation(&mut self) -> Result<Option<Relaxation>, ProblemError> {
        let Some(solution) = self.build(&[])? else {
            return Ok(None);
        };
        let Some(solution) = self.separate(solution)? else {
            return Ok(None);
        };
        let value = |v: &Variable| solution.var_value(*v);
        Ok(Some(Relaxation {
            value: solution.objective(),
            bridges: self.model.x.iter().map(value).collect(),
            ends: self.model.y.iter().map(value).collect(),
        }))
    }

    /// The LP of a subproblem built from scratch.
    fn build(&self, restrictions: &[Restriction]) -> Result<Option<Solution>, ProblemError> {
        let mut problem = self.model.problem.clone();
        for r in restrictions {
            let (expr, op, rhs) = self.model.restriction_row(r);
            problem.add_constraint(expr, op, rhs);
        }
        outcome(problem.solve())
    }

    /// Adds violated cuts until none is left (or the node is pruned); `None` if infeasible.
    fn separate(&mut self, mut solution: Solution) -> Result<Option<Solution>, ProblemError> {
        loop {
            if self.pruned(solution.objective()) {
                return Ok(Some(solution));
            }
            let cuts = self.violated_cuts(&solution);
            if cuts.is_empty() {
                return Ok(Some(solution));
            }
            for cut in cuts {
                let expr = self.model.cut_row(&cut, &mut self.inside);
                match outcome(solution.add_constraint(expr, ComparisonOp::Ge, cut.rhs))? {
                    Some(next) => solution = next,
                    None => return Ok(None),
                }
            }
        }
    }

    /// Violated cuts of the LP point: from the pool first, then new connectivity cuts, then
    /// (when the point is connected) blossom combs.
    fn violated_cuts(&mut self, solution: &Solution) -> Vec<Cut> {
        let cities = self.grid.cities();
        let (xs, ys) = self.lp_point(solution);
        let mut found: Vec<Cut> = Vec::new();
        for cut in &self.pool {
            if cut.value(self.grid, &mut self.inside, &xs, &ys) < cut.rhs - EPS {
                found.push(cut.clone());
                if found.len() >= CUTS_PER_ROUND {
                    return found;
                }
            }
        }
        if !found.is_empty() {
            return found;
        }
        let mut support = Support::new(cities + 1);
        for (bridge, &x) in self.grid.bridges().iter().zip(&xs) {
            support.add(bridge.a, bridge.b, x);
        }
        for (city, &y) in ys.iter().enumerate() {
            support.add(city, cities, y);
        }
        let components = support.components(EPS);
        let candidates = if components.len() > 1 {
            components
        } else {
            support.light_cuts(2.0 - EPS)
        };
        for set in candidates {
            let sorted = city_side(&set, cities);
            if sorted.is_empty() || sorted.len() == cities {
                continue;
            }
            let cut = Cut::connectivity(sorted);
            if cut.value(self.grid, &mut self.inside, &xs, &ys) < 2.0 - EPS && !found.contains(&cut)
            {
                found.push(cut);
                if found.len() >= CUTS_PER_ROUND {
                    break;
                }
            }
        }
        if found.is_empty() {
            found = self.blossoms(&xs, &ys);
        }
        self.pool.extend(found.iter().cloned());
        found
    }
}

impl Search<'_> {
    /// Blossom combs `x(delta(H)) + sum x(delta(T_i)) >= 3k + 1` (k odd, at least 3, teeth
    /// disjoint two-vertex sets each with one end in H), valid for walks because a walk's
    /// crossings of any set are at least those of the Hamiltonian cycle its shortcut makes in
    /// the closure. Handles are the components of the bridges with fractional values (the
    /// dummy vertex included); teeth are the edges with value at least 1 leaving a handle.
    fn blossoms(&mut self, xs: &[f64], ys: &[f64]) -> Vec<Cut> {
        let cities = self.grid.cities();
        let dummy = cities;
        // Edges of the support: (a, b, value) over cities + dummy.
        let mut edges: Vec<(usize, usize, f64)> = self
            .grid
            .bridges()
            .iter()
            .zip(xs)
            .map(|(b, &x)| (b.a, b.b, x))
            .collect();
        edges.extend(ys.iter().enumerate().map(|(v, &y)| (v, dummy, y)));
        let fractional = |x: f64| {
            let f = x - x.floor();
            f > EPS && f < 1.0 - EPS
        };
        let mut support = Support::new(cities + 1);
        for &(a, b, x) in &edges {
            if fractional(x) {
                support.add(a, b, 1.0);
            }
        }
        let mut found = Vec::new();
        for handle in support.components(0.5) {
            if handle.len() < 2 {
                continue;
            }
            let mut in_handle = vec![false; cities + 1];
            for &v in &handle {
                in_handle[v] = true;
            }
            let mut teeth: Vec<(usize, usize, f64)> = edges
                .iter()
                .copied()
                .filter(|&(a, b, x)| in_handle[a] != in_handle[b] && x >= 1.0 - EPS)
                .collect();
            teeth.sort_by(|p, q| q.2.total_cmp(&p.2));
            let mut used = vec![false; cities + 1];
            teeth.retain(|&(a, b, _)| {
                let free = !used[a] && !used[b];
                used[a] = true;
                used[b] = true;
                free
            });
            if teeth.len().is_multiple_of(2) {
                teeth.pop();
            }
            if teeth.len() < 3 {
                continue;
            }
            let cut = Cut::comb(
                city_side(&handle, cities),
                teeth
                    .iter()
                    .map(|&(a, b, _)| city_side(&[a, b], cities))
                    .collect(),
            );
            if cut.value(self.grid, &mut self.inside, xs, ys) < cut.rhs - EPS {
                found.push(cut);
            }
        }
        found
    }
}

/// The side of a vertex set (over cities and the dummy vertex `cities`) without the dummy,
/// sorted: the set itself or its complement (both have the same cut).
fn city_side(set: &[usize], cities: usize) -> Vec<usize> {
    let mut member = vec![false; cities + 1];
    for &v in set {
        member[v] = true;
    }
    let keep = !member[cities];
    (0..cities).filter(|&v| member[v] == keep).collect()
}

impl Search<'_> {
    /// The branching decision at a cut-feasible LP point.
    fn branch_on(&self, solution: &Solution) -> Result<Branch, ProblemError> {
        // A city whose degree is nearly odd splits best: degree <= 2k or >= 2k + 2.
        let mut odd: Option<(f64, usize, f64)> = None;
        for city in 0..self.grid.cities() {
            let degree: f64 = self
                .grid
                .neighbours(city)
                .iter()
                .map(|&(_, b)| solution.var_value(self.model.x[b]))
                .sum::<f64>()
                + solution.var_value(self.model.y[city]);
            let nearest_odd = 2.0 * ((degree - 1.0) / 2.0).round() + 1.0;
            let oddness = 1.0 - (degree - nearest_odd).abs();
            if oddness > 0.5 + EPS && odd.is_none_or(|(o, _, _)| oddness > o) {
                odd = Some((oddness, city, degree));
            }
        }
        if let Some((_, city, degree)) = odd {
            let below = 2.0 * ((degree - 1.0) / 2.0).round();
            let down = Restriction {
                target: Target::Degree(city as u32),
                upper: true,
                value: below as u8,
            };
            let up = Restriction {
                target: Target::Degree(city as u32),
                upper: false,
                value: below as u8 + 2,
            };
            return Ok(if degree - below > 1.0 {
                Branch::Split(up, down)
            } else {
                Branch::Split(down, up)
            });
        }
        let mut best: Option<(f64, Target, f64)> = None;
        let columns = self
            .model
            .x
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                (
                    Target::Bridge(i as u32),
                    v,
                    f64::from(self.grid.bridges()[i].cost),
                )
            })
            .chain(
                self.model
                    .y
                    .iter()
                    .enumerate()
                    .map(|(i, &v)| (Target::End(i as u32), v, 0.0)),
            );
        for (target, var, cost) in columns {
            let value = solution.var_value(var);
            let frac = value - value.floor();
            if frac > EPS && frac < 1.0 - EPS {
                // Most fractional first; ties to the dearer bridge.
                let score = frac.min(1.0 - frac) * 1000.0 + cost;
                if best.is_none_or(|(s, _, _)| score > s) {
                    best = Some((score, target, value));
                }
            }
        }
        if let Some((_, target, value)) = best {
            let down = Restriction {
                target,
                upper: true,
                value: value.floor() as u8,
            };
            let up = Restriction {
                target,
                upper: false,
                value: value.ceil() as u8,
            };
            // The side nearer the LP value first (a dive towards rounding).
            return Ok(if value - value.floor() > 0.5 {
                Branch::Split(up, down)
            } else {
                Branch::Split(down, up)
            });
        }
        // Integral: check the degrees.
        let crossings: Vec<u8> = self
            .model
            .x
            .iter()
            .map(|&v| solution.var_value(v).round() as u8)
            .collect();
        let ends: Vec<usize> = self
            .model
            .y
            .iter()
            .enumerate()
            .filter(|(_, &v)| solution.var_value(v).round() as u8 == 1)
            .map(|(i, _)| i)
            .collect();
        for city in 0..self.grid.cities() {
            let degree: u32 = self
                .grid
                .neighbours(city)
                .iter()
                .map(|&(_, b)| u32::from(crossings[b]))
                .sum::<u32>()
                + u32::from(ends.contains(&city));
            if degree % 2 == 1 {
                let d = degree as u8;
                return Ok(Branch::Split(
                    Restriction {
                        target: Target::Degree(city as u32),
                        upper: true,
                        value: d - 1,
                    },
                    Restriction {
                        target: Target::Degree(city as u32),
                        upper: false,
                        value: d + 1,
                    },
                ));
            }
        }
        let cost: u64 = crossings
            .iter()
            .zip(self.grid.bridges())
            .map(|(&x, b)| u64::from(x) * u64::from(b.cost))
            .sum();
        let walk = match ends.as_slice() {
            [a, b] => walk_from_crossings(self.grid, &crossings, [*a, *b]),
            _ => None,
        };
        // A cut-feasible integral point with even degrees and two ends always has an Euler
        // walk; anything else is a numerical failure of the LP.
        walk.map(|walk| Branch::Feasible(walk, cost))
            .ok_or_else(|| ProblemError::Solver("grid: an integral LP point is not a walk".into()))
    }
}

enum Branch {
    /// The LP point is a walk.
    Feasible(Vec<usize>, u64),
    /// Two restrictions splitting the node, the one to search first first.
    Split(Restriction, Restriction),
}

/// Hooks for a plain local solve: no sharing, no stopping.
#[derive(Default)]
pub struct LocalHooks {
    best: std::sync::Mutex<Option<(Vec<usize>, u64)>>,
    /// Stop after this much time (the search then ends with [`SearchEnd::Stopped`]).
    pub time_limit: Option<Duration>,
    /// Polish every walk found with local search on this closure.
    pub polish: Option<super::closure::Closure>,
    started: std::sync::OnceLock<Instant>,
}

impl LocalHooks {
    /// Hooks starting from a known walk.
    pub fn with_incumbent(walk: Vec<usize>, cost: u64) -> LocalHooks {
        LocalHooks {
            best: std::sync::Mutex::new(Some((walk, cost))),
            ..Default::default()
        }
    }

    /// The best walk seen.
    pub fn best(&self) -> Option<(Vec<usize>, u64)> {
        self.best.lock().expect("poisoned").clone()
    }
}

impl Hooks for LocalHooks {
    fn incumbent(&self) -> Option<u64> {
        self.best.lock().expect("poisoned").as_ref().map(|b| b.1)
    }
    fn improved(&self, walk: &[usize], cost: u64) {
        let polished = self.polish.as_ref().and_then(|closure| {
            super::heuristic::polish_walk(closure, walk, cost, super::POLISH_KICKS)
        });
        let (walk, cost) = match &polished {
            Some((better, better_cost)) => (better.as_slice(), *better_cost),
            None => (walk, cost),
        };
        let mut best = self.best.lock().expect("poisoned");
        if best.as_ref().is_none_or(|b| cost < b.1) {
            *best = Some((walk.to_vec(), cost));
        }
    }
    fn tick(&self, _nodes: u64, _open: &dyn Fn() -> ExactUnit) -> Tick {
        let started = *self.started.get_or_init(Instant::now);
        match self.time_limit {
            Some(limit) if started.elapsed() > limit => Tick::Stop,
            _ => Tick::Continue,
        }
    }
    fn donate(&self, _give: Vec<ExactUnit>, _keep: ExactUnit) -> bool {
        false
    }
    fn wants_donation(&self) -> bool {
        false
    }
}
