//! The cut bound's LP in its primal form, solved by a dual simplex that knows its shape.
//!
//! ```text
//! max Σ_e w_e x_e   s.t.  x(δ(v)) <= b_v per number v,  x(E_c) <= |S_c| - 1 per cut c,
//!                         0 <= x_e <= u_e
//! ```
//!
//! The row duals are the `y` and `z` of [`super::cuts`]' dual LP. A search node changes
//! only bounds: an excluded edge gets `u_e = 0`, a fixed number `b_v = 0`, and a new cut is
//! a new row whose slack is basic. So the parent's optimal basis stays dual feasible, and a
//! dual simplex re-optimizes from it. A cut that stops being a cluster (one of its members
//! fixed) keeps its row: over the live edges it is then implied by the rows of its other
//! members, so it moves no optimum, and its dual can be moved onto theirs at no cost; its
//! penalty is simply left out ([`SideLp::penalties`]).
//!
//! The basis has a row per number and per cut. Its columns on the number rows hold a
//! spanning forest of the bipartite graph, each tree rooted at one basic number slack: the
//! *key* columns, solved by walking the forest. The other basic columns (one per cut row)
//! meet the forest through the Schur complement `W = S_L - S_K N_K^-1 N_L` on the cut rows,
//! which is the identity on the cuts whose own slack is basic and a small dense matrix on
//! the others (the cuts that bind). The basis is factored afresh every `REFACTOR_EVERY`
//! pivots, with an eta column per pivot in between (the product form, `Inverse`), and the
//! optimal basis is always factored afresh before its values and duals are read.
//!
//! Nothing rests on this LP: its duals only propose penalties, which
//! [`super::cuts::apply_at`] checks exactly.

use std::collections::HashMap;
use std::sync::Arc;

use super::cuts::{Cut, Penalties};
use super::matching::{Graph, Matching};
use super::rank_cuts::RankPool;

/// How far a pool cut must be violated to become a row.
const VIOLATION: f64 = 1e-6;

/// Primal and dual feasibility tolerance.
const TOL: f64 = 1e-9;
/// Pivot tolerance of the ratio test and of the dense factorization.
const PIVOT_TOL: f64 = 1e-9;
/// Most pivots of one solve before it gives up (a safeguard against cycling).
const MAX_PIVOTS: u64 = 20_000;
/// Pivots between factorizations of the basis (eta columns in between, see
/// [`SideLp::solve`]).
const REFACTOR_EVERY: usize = 32;

/// The rows and columns, shared by every node's LP.
struct Shape {
    /// Numbers 0..=N (row v; 0 has no edges).
    rows_v: usize,
    /// Edges as (big, small), with weight `big` (shared by every shape of one graph).
    edges: Arc<Vec<(u32, u32)>>,
    /// The edges at each number.
    number_edges: Arc<Vec<Vec<u32>>>,
    /// The cut rows (index into `cuts`) of each edge.
    edge_cuts: Vec<Vec<u32>>,
    /// The edges of each cut.
    cut_edges: Vec<Vec<u32>>,
    /// The cuts, in row order.
    cuts: Vec<Cut>,
    /// Edge index by (big, small).
    index: Arc<HashMap<(u32, u32), u32>>,
}

/// Where a variable stands.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum At {
    Basic,
    Lower,
    Upper,
}

/// The LP of one search node, solved (see the module docs).
#[derive(Clone)]
pub struct SideLp {
    shape: Arc<Shape>,
    /// Upper bound per edge (1, or 0 once dead).
    upper: Vec<f64>,
    /// Right-hand side per number row (1, or 0 once fixed).
    rhs_v: Vec<f64>,
    /// Per variable: edges, then number slacks, then cut slacks.
    at: Vec<At>,
    /// Basic variable per basis position.
    head: Vec<usize>,
    /// Row duals at the optimum (numbers, then cuts).
    duals: Vec<f64>,
    /// Objective at the optimum.
    value: f64,
    /// Edge values at the optimum.
    primal: Vec<f64>,
    /// Dual steepest-edge weights per basis position (squared norms of the rows of the
    /// basis inverse, kept by the update formulas; 1 for a row never priced).
    weights: Vec<f64>,
    /// Pivots since the LP was built, down this path.
    pub pivots: u64,
    /// The search's node count when the LP last took new cuts (how old its cuts are,
    /// [`super::search::Searcher::set_cut_refresh`]).
    pub built_at: u64,
}

/// A column's entries (all 1): number rows and cut rows.
struct Column<'a> {
    numbers: [Option<usize>; 2],
    cuts: &'a [u32],
    cut_slack: Option<usize>,
}

/// The basis, factored: its key forest and the dense Schur complement on the binding cuts.
struct Factor {
    /// Key variable per number row.
    key: Vec<usize>,
    /// Parent number of each number in the forest (`usize::MAX`: a root).
    parent: Vec<usize>,
    /// Numbers, parents before children.
    order: Vec<usize>,
    /// Basis position of each variable that is basic.
    pos: Vec<usize>,
    /// Non-key basic edge columns (variables) and `N_K^-1 N_l` of each (sparse: the
    /// forest path between the edge's ends, or from each end to its root).
    side: Vec<usize>,
    side_g: Vec<Vec<(usize, f64)>>,
    /// `W[:, l]` over all cut rows, per side column (its nonzero entries).
    side_w: Vec<Vec<(usize, f64)>>,
    /// Cut rows whose slack is basic (not binding in the factor's sense).
    slack_rows: Vec<bool>,
    /// The other cut rows, in the order of the dense system.
    bind_rows: Vec<usize>,
    /// LU of `W[bind_rows, side]` with row pivots.
    lu: Vec<f64>,
    /// The same, transposed (column-major).
    lu_t: Vec<f64>,
    perm: Vec<usize>,
}

/// The basis inverse as its last factorization and the pivots since:
/// `B^-1 = E_t^-1 ... E_1^-1 B_0^-1`, where `E_i` is the identity with the pivot's column
/// `B_{i-1}^-1 a_q` at the leaving position.
struct Inverse {
    factor: Factor,
    etas: Vec<Eta>,
}

impl Inverse {
    /// Records a pivot at basis position `r` whose entering column is `column` (`B^-1 a_q`
    /// before the pivot).
    fn push_eta(&mut self, r: usize, column: &[f64]) {
        let entries = column
            .iter()
            .enumerate()
            .filter(|&(i, &a)| i != r && a != 0.0)
            .map(|(i, &a)| (i, a))
            .collect();
        self.etas.push(Eta {
            r,
            pivot: column[r],
            entries,
        });
    }
}

/// One pivot of the product form: its position, pivot entry and the column's other
/// nonzero entries.
struct Eta {
    r: usize,
    pivot: f64,
    entries: Vec<(usize, f64)>,
}

impl Eta {
    /// `d <- E^-1 d`.
    fn apply(&self, d: &mut [f64]) {
        let x = d[self.r] / self.pivot;
        d[self.r] = x;
        if x != 0.0 {
            for &(i, a) in &self.entries {
                d[i] -= a * x;
            }
        }
    }

    /// `h <- E^-T h`.
    fn apply_transposed(&self, h: &mut [f64]) {
        let t: f64 = self.entries.iter().map(|&(i, a)| a * h[i]).sum();
        h[self.r] = (h[self.r] - t) / self.pivot;
    }
}

impl SideLp {
    /// Builds and solves the LP of `node`'s live graph with `cuts` (each a cluster at the
    /// node). `None` if the solve fails.
    pub fn build(g: &Graph, node: &Matching, cuts: &[Cut]) -> Option<SideLp> {
        let n = g.n();
        let edges = g.numbered_edges();
        let index = edges
            .iter()
            .enumerate()
            .map(|(i, &e)| (e, i as u32))
            .collect();
        let mut number_edges = vec![Vec::new(); n as usize + 1];
        for (i, &(big, small)) in edges.iter().enumerate() {
            number_edges[big as usize].push(i as u32);
            number_edges[small as usize].push(i as u32);
        }
        let shape = Shape {
            rows_v: n as usize + 1,
            edge_cuts: vec![Vec::new(); edges.len()],
            edges: Arc::new(edges),
            number_edges: Arc::new(number_edges),
            cut_edges: Vec::new(),
            cuts: Vec::new(),
            index: Arc::new(index),
        };
        let rows_v = shape.rows_v;
        let count = shape.edges.len();
        let mut lp = SideLp {
            shape: Arc::new(shape),
            upper: vec![1.0; count],
            rhs_v: vec![1.0; rows_v],
            // Every edge at its upper bound (its reduced cost, its weight, is positive),
            // every slack basic: dual feasible, with the duals at 0.
            at: (0..count + rows_v)
                .map(|j| if j < count { At::Upper } else { At::Basic })
                .collect(),
            head: (count..count + rows_v).collect(),
            duals: Vec::new(),
            value: 0.0,
            primal: Vec::new(),
            weights: vec![1.0; rows_v],
            pivots: 0,
            built_at: 0,
        };
        lp.add_cuts(g, cuts);
        lp.restrict(g, node);
        lp.solve().then_some(lp)
    }

    /// This LP re-optimized for `node`, a descendant of the node it was solved for, with
    /// `new_cuts` (clusters at `node`) added as rows. `None` if the solve fails.
    pub fn at(&self, g: &Graph, node: &Matching, new_cuts: &[Cut]) -> Option<SideLp> {
        let mut lp = self.clone();
        lp.add_cuts(g, new_cuts);
        lp.restrict(g, node);
        lp.solve().then_some(lp)
    }

    /// Like [`SideLp::at`], but first without the cut rows that this optimum leaves at
    /// least `min_slack` below their bound (`SideLp::drop_loose_cuts`).
    pub fn at_trimmed(
        &self,
        g: &Graph,
        node: &Matching,
        new_cuts: &[Cut],
        min_slack: f64,
    ) -> Option<SideLp> {
        let mut lp = self.clone();
        lp.drop_loose_cuts(min_slack);
        lp.add_cuts(g, new_cuts);
        lp.restrict(g, node);
        lp.solve().then_some(lp)
    }

    /// Drops the cut rows whose slack is basic in the optimum with at least `min_slack` to
    /// spare. Their duals are 0, so the optimum and the other rows' duals stay; the basis
    /// loses each such row with its slack, which leaves the rest a basis (and every other
    /// basis position's row of the inverse, so its steepest-edge weight, as it was).
    fn drop_loose_cuts(&mut self, min_slack: f64) -> usize {
        let (ne, rv) = (self.edge_count(), self.shape.rows_v);
        let count = self.shape.cuts.len();
        let keep: Vec<bool> = (0..count)
            .map(|c| {
                if self.at[ne + rv + c] != At::Basic {
                    return true;
                }
                let load: f64 = self.shape.cut_edges[c]
                    .iter()
                    .map(|&e| self.primal[e as usize])
                    .sum();
                self.shape.cuts[c].most as f64 - load < min_slack
            })
            .collect();
        let dropped = keep.iter().filter(|&&k| !k).count();
        if dropped == 0 {
            return 0;
        }
        let mut new_row = vec![u32::MAX; count];
        let mut next = 0u32;
        for (c, &k) in keep.iter().enumerate() {
            if k {
                new_row[c] = next;
                next += 1;
            }
        }
        let shape = Shape {
            rows_v: rv,
            edges: Arc::clone(&self.shape.edges),
            number_edges: Arc::clone(&self.shape.number_edges),
            edge_cuts: self
                .shape
                .edge_cuts
                .iter()
                .map(|rows| {
                    rows.iter()
                        .map(|&c| new_row[c as usize])
                        .filter(|&c| c != u32::MAX)
                        .collect()
                })
                .collect(),
            cut_edges: (0..count)
                .filter(|&c| keep[c])
                .map(|c| self.shape.cut_edges[c].clone())
                .collect(),
            cuts: (0..count)
                .filter(|&c| keep[c])
                .map(|c| self.shape.cuts[c].clone())
                .collect(),
            index: Arc::clone(&self.shape.index),
        };
        self.shape = Arc::new(shape);
        let variable = |j: usize| -> Option<usize> {
            if j < ne + rv {
                Some(j)
            } else {
                let c = new_row[j - ne - rv];
                (c != u32::MAX).then(|| ne + rv + c as usize)
            }
        };
        let mut at = self.at[..ne + rv].to_vec();
        at.extend(
            (0..count)
                .filter(|&c| keep[c])
                .map(|c| self.at[ne + rv + c]),
        );
        self.at = at;
        let mut head = Vec::with_capacity(self.head.len() - dropped);
        let mut weights = Vec::with_capacity(self.head.len() - dropped);
        for (&j, &w) in self.head.iter().zip(&self.weights) {
            if let Some(j) = variable(j) {
                head.push(j);
                weights.push(w);
            }
        }
        self.head = head;
        self.weights = weights;
        if self.duals.len() == rv + count {
            let mut duals = self.duals[..rv].to_vec();
            duals.extend((0..count).filter(|&c| keep[c]).map(|c| self.duals[rv + c]));
            self.duals = duals;
        }
        dropped
    }

    /// The edges (big, small) above 0 in the LP's optimum whose numbers are free at `node`,
    /// with their values.
    pub fn fractional_pairs(&self, node: &Matching) -> Vec<((u32, u32), f64)> {
        self.shape
            .edges
            .iter()
            .zip(&self.primal)
            .filter(|&(&(big, _), &x)| x > VIOLATION && !node.is_fixed(big))
            .map(|(&e, &x)| (e, x))
            .collect()
    }

    /// The LP's optimum.
    pub fn value(&self) -> f64 {
        self.value
    }

    /// The cuts of `pool` that hold at `node`, are not rows yet and that the LP's optimum
    /// violates, most violated first, at most `limit` of them.
    pub fn violated(&self, node: &Matching, pool: &RankPool, limit: usize) -> Vec<Cut> {
        pool.violated_at(node, &self.primal, VIOLATION)
            .into_iter()
            .filter(|c| !self.shape.cuts.contains(c))
            .take(limit)
            .collect()
    }

    /// Unions of two of the LP's clusters that its optimum would violate with a bound 2
    /// below |S| (S and T, sorted): both clusters free at `node` and tight, disjoint (S
    /// against T), of at most `max_union` numbers, with flow on an edge between them; the
    /// most flow between them first.
    /// Candidates for rank cuts proven at the node ([`RankPool::proven_at`]).
    pub fn linked_tight_pairs(
        &self,
        node: &Matching,
        max_union: usize,
    ) -> Vec<(Vec<u32>, Vec<u32>)> {
        let tight: Vec<&Cut> = self
            .shape
            .cuts
            .iter()
            .zip(&self.shape.cut_edges)
            .filter(|(c, edges)| {
                let load: f64 = edges.iter().map(|&e| self.primal[e as usize]).sum();
                c.is_cluster_shaped() && load >= c.most as f64 - 1e-6 && members_free(c, node)
            })
            .map(|(c, _)| c)
            .collect();
        let flow = |x: &Cut, y: &Cut| -> f64 {
            x.numbers
                .iter()
                .flat_map(|&k| y.factors.iter().map(move |&f| (k, f)))
                .filter_map(|e| self.shape.index.get(&e))
                .map(|&e| self.primal[e as usize])
                .sum()
        };
        let disjoint = |x: &Cut, y: &Cut| {
            x.numbers.iter().all(|k| !y.factors.contains(k))
                && y.numbers.iter().all(|k| !x.factors.contains(k))
        };
        let mut pairs = Vec::new();
        for (i, a) in tight.iter().enumerate() {
            for b in &tight[i + 1..] {
                if a.numbers.len() + b.numbers.len() > max_union || !disjoint(a, b) {
                    continue;
                }
                let between = flow(a, b) + flow(b, a);
                if between <= VIOLATION {
                    continue;
                }
                let mut s: Vec<u32> = a.numbers.iter().chain(&b.numbers).copied().collect();
                let mut t: Vec<u32> = a.factors.iter().chain(&b.factors).copied().collect();
                s.sort_unstable();
                s.dedup();
                t.sort_unstable();
                t.dedup();
                pairs.push((between, s, t));
            }
        }
        pairs.sort_by(|x, y| {
            y.0.total_cmp(&x.0)
                .then_with(|| (&x.1, &x.2).cmp(&(&y.1, &y.2)))
        });
        let mut seen = std::collections::HashSet::new();
        pairs
            .into_iter()
            .filter(|(_, s, t)| seen.insert((s.clone(), t.clone())))
            .map(|(_, s, t)| (s, t))
            .collect()
    }

    /// The cuts of the LP that are clusters at `node` (their members all free).
    pub fn cuts_at(&self, node: &Matching) -> Vec<Cut> {
        self.shape
            .cuts
            .iter()
            .filter(|c| members_free(c, node))
            .cloned()
            .collect()
    }

    /// The floors of the cut rows' duals as penalties in `1/scale` points (for a graph of
    /// that scale, [`Graph::scaled`]), for the cuts whose members are all free at `node`
    /// (see the module docs).
    pub fn penalties(&self, node: &Matching, scale: i32) -> Penalties {
        let rows_v = self.shape.rows_v;
        let cuts = self
            .shape
            .cuts
            .iter()
            .enumerate()
            .filter(|(_, c)| members_free(c, node))
            .filter_map(|(i, c)| {
                let lambda = (self.duals[rows_v + i] * f64::from(scale) + 1e-6).floor() as i32;
                (lambda > 0).then(|| (c.clone(), lambda))
            })
            .collect();
        Penalties { cuts }
    }

    /// Appends a row per cut not already a row, its slack basic.
    fn add_cuts(&mut self, g: &Graph, cuts: &[Cut]) {
        let mut fresh: Vec<&Cut> = Vec::new();
        for cut in cuts {
            // Each cut one row: not one already, nor twice in `cuts`.
            if !self.shape.cuts.contains(cut) && !fresh.contains(&cut) {
                fresh.push(cut);
            }
        }
        if fresh.is_empty() {
            return;
        }
        let mut shape = Shape {
            rows_v: self.shape.rows_v,
            edges: Arc::clone(&self.shape.edges),
            number_edges: Arc::clone(&self.shape.number_edges),
            edge_cuts: self.shape.edge_cuts.clone(),
            cut_edges: self.shape.cut_edges.clone(),
            cuts: self.shape.cuts.clone(),
            index: Arc::clone(&self.shape.index),
        };
        for cut in fresh {
            let row = shape.cuts.len() as u32;
            let members: Vec<u32> = cut
                .edges(g)
                .iter()
                .filter_map(|e| shape.index.get(e).copied())
                .collect();
            for &e in &members {
                shape.edge_cuts[e as usize].push(row);
            }
            shape.cut_edges.push(members);
            shape.cuts.push(cut.clone());
            self.at.push(At::Basic);
            self.head.push(self.at.len() - 1);
            self.weights.push(1.0);
        }
        self.shape = Arc::new(shape);
    }

    /// Bounds for `node`: dead edges get upper bound 0, fixed numbers right-hand side 0.
    fn restrict(&mut self, g: &Graph, node: &Matching) {
        for (i, &(big, small)) in self.shape.edges.iter().enumerate() {
            if self.upper[i] > 0.0 && !node.is_live(g, big, small) {
                self.upper[i] = 0.0;
            }
        }
        for v in 1..self.shape.rows_v {
            if node.is_fixed(v as u32) {
                self.rhs_v[v] = 0.0;
            }
        }
        self.rhs_v[0] = 0.0;
    }

    fn edge_count(&self) -> usize {
        self.shape.edges.len()
    }

    fn column(&self, j: usize) -> Column<'_> {
        let (ne, rv) = (self.edge_count(), self.shape.rows_v);
        if j < ne {
            let (a, b) = self.shape.edges[j];
            Column {
                numbers: [Some(a as usize), Some(b as usize)],
                cuts: &self.shape.edge_cuts[j],
                cut_slack: None,
            }
        } else if j < ne + rv {
            Column {
                numbers: [Some(j - ne), None],
                cuts: &[],
                cut_slack: None,
            }
        } else {
            Column {
                numbers: [None, None],
                cuts: &[],
                cut_slack: Some(j - ne - rv),
            }
        }
    }

    fn cost(&self, j: usize) -> f64 {
        if j < self.edge_count() {
            f64::from(self.shape.edges[j].0)
        } else {
            0.0
        }
    }

    fn upper_of(&self, j: usize) -> f64 {
        if j < self.edge_count() {
            self.upper[j]
        } else {
            f64::INFINITY
        }
    }

    /// The bounded dual simplex from the current (dual feasible) basis. False if it fails.
    ///
    /// The basis is factored afresh every [`REFACTOR_EVERY`] pivots; in between, each pivot
    /// adds an eta column to the inverse ([`Inverse`]). The row duals and the basic values
    /// are carried from pivot to pivot: `pi += (d_q / alpha_q) rho` keeps every basic
    /// column's reduced cost at 0, and `x_B -= t B^-1 a_q` moves the entering column to
    /// where the leaving one reaches its bound. The basic values are solved afresh at each
    /// factorization, and the final basis is factored afresh and must be primal feasible
    /// on its own values. The pivot row is priced only on the columns that meet its
    /// nonzero rows.
    ///
    /// The leaving row is chosen by dual steepest edge: the largest squared infeasibility
    /// over the row's weight, the squared norm of its row of `B^-1`, kept by the update
    /// formulas (one more solve a pivot, [`SideLp::update_weights`]) and carried down the
    /// tree with the basis. Measured against the most infeasible row (BENCHMARKS.md "Dual
    /// steepest edge in the side LP"): 2.6 times fewer pivots.
    fn solve(&mut self) -> bool {
        let vars = self.at.len();
        let mut duals: Option<Vec<f64>> = None;
        let mut inverse: Option<Inverse> = None;
        let mut x_b: Vec<f64> = Vec::new();
        let mut seen = vec![false; vars];
        let mut cands: Vec<usize> = Vec::new();
        // Each basis position's upper bound (kept in step with `head`).
        let mut upper_b: Vec<f64> = self.head.iter().map(|&j| self.upper_of(j)).collect();
        // The unit vector of the leaving row (all zero between pivots).
        let mut unit = vec![0.0; self.head.len()];
        loop {
            let inv = match inverse.take() {
                Some(inv) if inv.etas.len() < REFACTOR_EVERY => inv,
                _ => {
                    let Some(factor) = self.factor() else {
                        return false;
                    };
                    let inv = Inverse {
                        factor,
                        etas: Vec::new(),
                    };
                    x_b = self.basic_values(&inv);
                    inv
                }
            };
            let Some((r, below)) = self.leaving(&x_b, &upper_b) else {
                if !inv.etas.is_empty() {
                    // Optimal on carried values: confirm on a fresh factorization.
                    continue;
                }
                let costs: Vec<f64> = self.head.iter().map(|&j| self.cost(j)).collect();
                self.duals = self.btran(&inv, &costs);
                self.primal = (0..self.edge_count())
                    .map(|j| match self.at[j] {
                        At::Upper => self.upper[j],
                        At::Basic => x_b[inv.factor.pos[j]],
                        At::Lower => 0.0,
                    })
                    .collect();
                self.value = (0..self.edge_count())
                    .map(|j| self.primal[j] * self.cost(j))
                    .sum();
                return true;
            };
            if self.pivots >= MAX_PIVOTS {
                return false;
            }
            let duals = duals.get_or_insert_with(|| {
                let costs: Vec<f64> = self.head.iter().map(|&j| self.cost(j)).collect();
                self.btran(&inv, &costs)
            });
            unit[r] = 1.0;
            let rho = self.btran(&inv, &unit);
            unit[r] = 0.0;
            self.pivot_row_columns(&rho, &mut seen, &mut cands);
            // Ratio test (Harris): candidates whose move pushes x_r toward its bound.
            let rv = self.shape.rows_v;
            let mut ratios = Vec::new();
            for &j in &cands {
                if self.at[j] == At::Basic || self.upper_of(j) == 0.0 {
                    continue;
                }
                let col = self.column(j);
                let alpha = dot(&col, &rho, rv);
                let up = self.at[j] == At::Lower;
                // x_r changes by -alpha per unit of x_j.
                let helps = if below == up {
                    alpha < -PIVOT_TOL
                } else {
                    alpha > PIVOT_TOL
                };
                if !helps {
                    continue;
                }
                let d = self.cost(j) - dot(&col, duals, rv);
                ratios.push((j, d, alpha));
            }
            let Some(bound) = ratios
                .iter()
                .map(|&(_, d, a)| (d.abs() + TOL) / a.abs())
                .min_by(f64::total_cmp)
            else {
                return false;
            };
            let Some(&(q, d_q, alpha_q)) = ratios
                .iter()
                .filter(|&&(_, d, a)| d.abs() / a.abs() <= bound)
                .max_by(|x, y| x.2.abs().total_cmp(&y.2.abs()))
            else {
                return false;
            };
            let column_q = self.column_ftran(&inv, q);
            if (column_q[r] - alpha_q).abs() > 1e-7 * alpha_q.abs().max(1.0) && !inv.etas.is_empty()
            {
                // The row and the column disagree on the pivot: factor afresh and retry.
                continue;
            }
            self.update_weights(&inv, r, &rho, &column_q);
            let theta = d_q / alpha_q;
            for (pi, r) in duals.iter_mut().zip(&rho) {
                *pi += theta * r;
            }
            // The entering column moves by t, which takes x_r to the bound it leaves at.
            let target = if below { 0.0 } else { upper_b[r] };
            let t = (x_b[r] - target) / column_q[r];
            for (x, a) in x_b.iter_mut().zip(&column_q) {
                *x -= t * a;
            }
            let from = if self.at[q] == At::Upper {
                self.upper[q]
            } else {
                0.0
            };
            x_b[r] = from + t;
            let out = self.head[r];
            self.at[out] = if below { At::Lower } else { At::Upper };
            self.at[q] = At::Basic;
            self.head[r] = q;
            upper_b[r] = self.upper_of(q);
            self.pivots += 1;
            let mut inv = inv;
            inv.push_eta(r, &column_q);
            inverse = Some(inv);
        }
    }

    /// The basic values solved from the basis: `B x_B = b - Σ` over the columns at their
    /// upper bounds.
    fn basic_values(&self, inv: &Inverse) -> Vec<f64> {
        let mut rv_rhs = self.rhs_v.clone();
        let mut rc_rhs: Vec<f64> = self.shape.cuts.iter().map(|c| c.most as f64).collect();
        for j in 0..self.edge_count() {
            if self.at[j] == At::Upper && self.upper[j] > 0.0 {
                let col = self.column(j);
                for v in col.numbers.into_iter().flatten() {
                    rv_rhs[v] -= self.upper[j];
                }
                for &c in col.cuts {
                    rc_rhs[c as usize] -= self.upper[j];
                }
            }
        }
        self.ftran(inv, rv_rhs, rc_rhs)
    }

    /// The basis position and direction (below its lower bound) of the basic variable
    /// to leave: of those outside their bounds, the one whose infeasibility is largest
    /// against its steepest-edge weight, if any is outside.
    /// `upper_b`: each basis position's upper bound.
    fn leaving(&self, x_b: &[f64], upper_b: &[f64]) -> Option<(usize, bool)> {
        let mut leave = None;
        let mut worst = 0.0;
        for (p, ((&x, &upper), &weight)) in x_b.iter().zip(upper_b).zip(&self.weights).enumerate() {
            let gap = if x < 0.0 { -x } else { x - upper };
            if gap > TOL * 100.0 {
                let score = gap * gap / weight;
                if score > worst {
                    worst = score;
                    leave = Some((p, x < 0.0));
                }
            }
        }
        leave
    }

    /// The dual steepest-edge update for a pivot on basis position `r` with pivot row
    /// `rho` (`B^-T e_r`) and entering column `alpha` (`B^-1 a_q`), before the pivot.
    fn update_weights(&mut self, inv: &Inverse, r: usize, rho: &[f64], alpha: &[f64]) {
        let rv = self.shape.rows_v;
        let tau = self.ftran(inv, rho[..rv].to_vec(), rho[rv..].to_vec());
        let w_r: f64 = rho.iter().map(|x| x * x).sum();
        let a_r = alpha[r];
        for (p, w) in self.weights.iter_mut().enumerate() {
            if p == r || alpha[p] == 0.0 {
                continue;
            }
            let ratio = alpha[p] / a_r;
            *w = (*w - 2.0 * ratio * tau[p] + ratio * ratio * w_r).max(1e-4);
        }
        self.weights[r] = (w_r / (a_r * a_r)).max(1e-4);
    }

    /// `B^-1 a_j`, by basis position.
    fn column_ftran(&self, inv: &Inverse, j: usize) -> Vec<f64> {
        let rv = self.shape.rows_v;
        let mut a_v = vec![0.0; rv];
        let mut a_c = vec![0.0; self.shape.cuts.len()];
        let col = self.column(j);
        for v in col.numbers.into_iter().flatten() {
            a_v[v] += 1.0;
        }
        for &c in col.cuts {
            a_c[c as usize] += 1.0;
        }
        if let Some(c) = col.cut_slack {
            a_c[c] += 1.0;
        }
        self.ftran(inv, a_v, a_c)
    }

    /// The columns that meet a nonzero row of `rho` (the others have `alpha = 0` in the
    /// pivot row), into `cands` (in an order fixed by `rho`'s pattern, so that solves are
    /// deterministic); `seen` is all false before and after.
    fn pivot_row_columns(&self, rho: &[f64], seen: &mut [bool], cands: &mut Vec<usize>) {
        let (rv, ne) = (self.shape.rows_v, self.edge_count());
        cands.clear();
        let mut take = |j: usize, cands: &mut Vec<usize>| {
            if !seen[j] {
                seen[j] = true;
                cands.push(j);
            }
        };
        for (v, &r) in rho[..rv].iter().enumerate() {
            if r != 0.0 {
                for &e in &self.shape.number_edges[v] {
                    take(e as usize, cands);
                }
                take(ne + v, cands);
            }
        }
        for (c, &r) in rho[rv..].iter().enumerate() {
            if r != 0.0 {
                for &e in &self.shape.cut_edges[c] {
                    take(e as usize, cands);
                }
                take(ne + rv + c, cands);
            }
        }
        for &j in cands.iter() {
            seen[j] = false;
        }
    }

    /// Factors the basis (see the module docs); `None` if it is singular.
    fn factor(&self) -> Option<Factor> {
        let (rv, nc, ne) = (self.shape.rows_v, self.shape.cuts.len(), self.edge_count());
        let mut pos = vec![usize::MAX; self.at.len()];
        for (p, &j) in self.head.iter().enumerate() {
            pos[j] = p;
        }
        // The basic edges around each number, in compressed rows.
        let mut start = vec![0usize; rv + 1];
        for &j in self.head.iter().filter(|&&j| j < ne) {
            let (a, b) = self.shape.edges[j];
            start[a as usize + 1] += 1;
            start[b as usize + 1] += 1;
        }
        for v in 0..rv {
            start[v + 1] += start[v];
        }
        let mut fill = start.clone();
        let mut adj = vec![(0usize, 0usize); start[rv]];
        for &j in self.head.iter().filter(|&&j| j < ne) {
            let (a, b) = (
                self.shape.edges[j].0 as usize,
                self.shape.edges[j].1 as usize,
            );
            adj[fill[a]] = (b, j);
            fill[a] += 1;
            adj[fill[b]] = (a, j);
            fill[b] += 1;
        }
        let mut key = vec![usize::MAX; rv];
        let mut parent = vec![usize::MAX; rv];
        let mut order = Vec::with_capacity(rv);
        for (v, k) in key.iter_mut().enumerate() {
            if self.at[ne + v] == At::Basic {
                *k = ne + v;
                order.push(v);
            }
        }
        let mut used = vec![false; ne];
        let mut i = 0;
        while i < order.len() {
            let v = order[i];
            i += 1;
            for &(u, j) in &adj[start[v]..start[v + 1]] {
                if key[u] == usize::MAX {
                    key[u] = j;
                    parent[u] = v;
                    used[j] = true;
                    order.push(u);
                }
            }
        }
        if order.len() != rv {
            return None;
        }
        let side: Vec<usize> = self
            .head
            .iter()
            .copied()
            .filter(|&j| j < ne && !used[j])
            .collect();
        let mut slack_rows = vec![false; nc];
        for &j in &self.head {
            if j >= ne + rv {
                slack_rows[j - ne - rv] = true;
            }
        }
        let bind_rows: Vec<usize> = (0..nc).filter(|&c| !slack_rows[c]).collect();
        if bind_rows.len() != side.len() {
            return None;
        }
        let mut f = Factor {
            key,
            parent,
            order,
            pos,
            side,
            side_g: Vec::new(),
            side_w: Vec::new(),
            slack_rows,
            bind_rows,
            lu: Vec::new(),
            lu_t: Vec::new(),
            perm: Vec::new(),
        };
        let mut depth = vec![0usize; rv];
        for &v in &f.order {
            if f.parent[v] != usize::MAX {
                depth[v] = depth[f.parent[v]] + 1;
            }
        }
        for &l in &f.side {
            let (a, b) = self.shape.edges[l];
            let gl = edge_path(&f, &depth, a as usize, b as usize);
            let mut w = vec![0.0; nc];
            for &c in &self.shape.edge_cuts[l] {
                w[c as usize] += 1.0;
            }
            self.sub_key_cuts(&f, &gl, &mut w);
            f.side_g.push(gl);
            f.side_w.push(
                w.into_iter()
                    .enumerate()
                    .filter(|&(_, x)| x != 0.0)
                    .collect(),
            );
        }
        let k = f.side.len();
        // Each cut row's place in the dense system, if it binds.
        let mut bind_at = vec![usize::MAX; nc];
        for (row, &c) in f.bind_rows.iter().enumerate() {
            bind_at[c] = row;
        }
        let mut lu = vec![0.0; k * k];
        for (col, w) in f.side_w.iter().enumerate() {
            for &(c, x) in w {
                if bind_at[c] != usize::MAX {
                    lu[bind_at[c] * k + col] = x;
                }
            }
        }
        let perm = lu_factor(&mut lu, k)?;
        f.lu_t = transposed(&lu, k);
        f.lu = lu;
        f.perm = perm;
        Some(f)
    }

    /// `out -= S_K g`: each key edge's value in `g` taken off its cut rows.
    fn sub_key_cuts(&self, f: &Factor, g: &[(usize, f64)], out: &mut [f64]) {
        let ne = self.edge_count();
        for &(v, gv) in g {
            if f.key[v] < ne {
                for &c in &self.shape.edge_cuts[f.key[v]] {
                    out[c as usize] -= gv;
                }
            }
        }
    }

    /// Solves `B d = a` (a over number rows, then cut rows); `d` by basis position.
    fn ftran(&self, inv: &Inverse, a_v: Vec<f64>, a_c: Vec<f64>) -> Vec<f64> {
        let mut d = self.factor_ftran(&inv.factor, a_v, a_c);
        for eta in &inv.etas {
            eta.apply(&mut d);
        }
        d
    }

    /// Solves `B^T pi = h` (h by basis position); `pi` over number rows, then cut rows.
    fn btran(&self, inv: &Inverse, h: &[f64]) -> Vec<f64> {
        let mut h = h.to_vec();
        for eta in inv.etas.iter().rev() {
            eta.apply_transposed(&mut h);
        }
        self.factor_btran(&inv.factor, &h)
    }

    /// Solves `B_0 d = a` for the factored basis `B_0`.
    fn factor_ftran(&self, f: &Factor, a_v: Vec<f64>, mut a_c: Vec<f64>) -> Vec<f64> {
        let (rv, ne) = (self.shape.rows_v, self.edge_count());
        let u = forest_solve(f, a_v);
        let dense: Vec<(usize, f64)> = u
            .iter()
            .enumerate()
            .filter(|(_, &x)| x != 0.0)
            .map(|(v, &x)| (v, x))
            .collect();
        self.sub_key_cuts(f, &dense, &mut a_c);
        let k = f.side.len();
        let mut rhs: Vec<f64> = f.bind_rows.iter().map(|&c| a_c[c]).collect();
        lu_solve(&f.lu_t, &f.perm, k, &mut rhs);
        let d_side = rhs;
        let mut d = vec![0.0; self.head.len()];
        let mut d_k = u;
        for (i, g) in f.side_g.iter().enumerate() {
            for &(v, gv) in g {
                d_k[v] -= gv * d_side[i];
            }
        }
        for (&key, &value) in f.key.iter().zip(&d_k) {
            d[f.pos[key]] = value;
        }
        for (i, &l) in f.side.iter().enumerate() {
            d[f.pos[l]] = d_side[i];
        }
        for (w, &x) in f.side_w.iter().zip(&d_side) {
            if x != 0.0 {
                for &(c, wc) in w {
                    a_c[c] -= wc * x;
                }
            }
        }
        for (c, &slack) in f.slack_rows.iter().enumerate() {
            if slack {
                d[f.pos[ne + rv + c]] = a_c[c];
            }
        }
        d
    }

    /// Solves `B_0^T pi = h` for the factored basis `B_0`.
    fn factor_btran(&self, f: &Factor, h: &[f64]) -> Vec<f64> {
        let (rv, nc, ne) = (self.shape.rows_v, self.shape.cuts.len(), self.edge_count());
        let h_k: Vec<f64> = (0..rv).map(|v| h[f.pos[f.key[v]]]).collect();
        let mut pi_c = vec![0.0; nc];
        for (c, &slack) in f.slack_rows.iter().enumerate() {
            if slack {
                pi_c[c] = h[f.pos[ne + rv + c]];
            }
        }
        let k = f.side.len();
        let mut rhs: Vec<f64> = f
            .side
            .iter()
            .enumerate()
            .map(|(i, &l)| {
                let mut t = h[f.pos[l]];
                t -= f.side_g[i].iter().map(|&(v, g)| g * h_k[v]).sum::<f64>();
                // Only the slack rows' duals are set yet (the binding rows' are 0).
                t -= f.side_w[i].iter().map(|&(c, w)| w * pi_c[c]).sum::<f64>();
                t
            })
            .collect();
        lu_solve_transposed(&f.lu, &f.perm, k, &mut rhs);
        for (row, &c) in f.bind_rows.iter().enumerate() {
            pi_c[c] = rhs[row];
        }
        let mut pi = vec![0.0; rv + nc];
        for &v in &f.order {
            let mut t = h_k[v];
            let j = f.key[v];
            if j < ne {
                for &c in &self.shape.edge_cuts[j] {
                    t -= pi_c[c as usize];
                }
            }
            if f.parent[v] != usize::MAX {
                t -= pi[f.parent[v]];
            }
            pi[v] = t;
        }
        pi[rv..].copy_from_slice(&pi_c);
        pi
    }
}

/// True when none of the cut's numbers or factors is fixed at `node`.
fn members_free(cut: &Cut, node: &Matching) -> bool {
    cut.numbers
        .iter()
        .chain(&cut.factors)
        .all(|&v| !node.is_fixed(v))
}

/// The column's entries dotted with a row vector `pi` (numbers, then cuts).
fn dot(col: &Column, pi: &[f64], rows_v: usize) -> f64 {
    let mut t: f64 = col.numbers.iter().flatten().map(|&v| pi[v]).sum();
    t += col
        .cuts
        .iter()
        .map(|&c| pi[rows_v + c as usize])
        .sum::<f64>();
    if let Some(c) = col.cut_slack {
        t += pi[rows_v + c];
    }
    t
}

/// Solves `N_K f = a` on the forest (children before parents); `f` per number (the value
/// of its key column).
fn forest_solve(f: &Factor, mut a: Vec<f64>) -> Vec<f64> {
    for &v in f.order.iter().rev() {
        let p = f.parent[v];
        if p != usize::MAX {
            a[p] -= a[v];
        }
    }
    a
}

/// `N_K^-1 (e_a + e_b)` for an edge (a, b) off the forest: `N_K^-1 e_v` alternates +1, -1
/// up the path from v to its root, so the two paths cancel above their meeting point (a
/// and b, adjacent in a bipartite graph, sit at depths of opposite parity).
fn edge_path(f: &Factor, depth: &[usize], a: usize, b: usize) -> Vec<(usize, f64)> {
    let mut out = Vec::new();
    let (mut a, mut b) = (a, b);
    let (mut sa, mut sb) = (1.0, 1.0);
    loop {
        if a == b {
            // At the meeting point the signs are opposite and cancel from there up (or
            // both paths ended at their roots).
            debug_assert!(a == usize::MAX || sa + sb == 0.0);
            break;
        }
        let step_a = b == usize::MAX || (a != usize::MAX && depth[a] >= depth[b]);
        let (v, s) = if step_a {
            (&mut a, &mut sa)
        } else {
            (&mut b, &mut sb)
        };
        if *v == usize::MAX {
            break;
        }
        out.push((*v, *s));
        *v = f.parent[*v];
        *s = -*s;
        if a == usize::MAX && b == usize::MAX {
            break;
        }
    }
    out.sort_unstable_by_key(|&(v, _)| v);
    out
}

/// In-place LU with partial pivoting of the `k x k` row-major `m`; the row permutation,
/// or `None` if singular.
fn lu_factor(m: &mut [f64], k: usize) -> Option<Vec<usize>> {
    let mut perm: Vec<usize> = (0..k).collect();
    for col in 0..k {
        let best =
            (col..k).max_by(|&a, &b| m[a * k + col].abs().total_cmp(&m[b * k + col].abs()))?;
        if m[best * k + col].abs() < PIVOT_TOL {
            return None;
        }
        if best != col {
            for j in 0..k {
                m.swap(best * k + j, col * k + j);
            }
            perm.swap(best, col);
        }
        let pivot = m[col * k + col];
        for row in col + 1..k {
            let factor = m[row * k + col] / pivot;
            m[row * k + col] = factor;
            if factor != 0.0 {
                for j in col + 1..k {
                    m[row * k + j] -= factor * m[col * k + j];
                }
            }
        }
    }
    Some(perm)
}

/// Solves `M x = b` in place from [`lu_factor`]'s output, given also as `lu_t`, its
/// transpose (column-major): column by column, skipping zeros.
fn lu_solve(lu_t: &[f64], perm: &[usize], k: usize, b: &mut [f64]) {
    let permuted: Vec<f64> = perm.iter().map(|&p| b[p]).collect();
    b.copy_from_slice(&permuted);
    // L y = b (unit diagonal): column j of L is row j of lu_t, below the diagonal.
    for j in 0..k {
        let x = b[j];
        if x != 0.0 {
            let column = &lu_t[j * k..(j + 1) * k];
            for (bi, &l) in b[j + 1..].iter_mut().zip(&column[j + 1..]) {
                *bi -= l * x;
            }
        }
    }
    // U x = y: column j of U is row j of lu_t, above the diagonal.
    for j in (0..k).rev() {
        let column = &lu_t[j * k..(j + 1) * k];
        let x = b[j] / column[j];
        b[j] = x;
        if x != 0.0 {
            for (bi, &u) in b[..j].iter_mut().zip(&column[..j]) {
                *bi -= u * x;
            }
        }
    }
}

/// Solves `M^T x = b` in place from [`lu_factor`]'s output: row by row of the factors,
/// skipping zeros.
fn lu_solve_transposed(lu: &[f64], perm: &[usize], k: usize, b: &mut [f64]) {
    // P M = L U, so M^T = U^T L^T P: solve U^T s = b, L^T t = s, x = P^T t.
    for j in 0..k {
        let row = &lu[j * k..(j + 1) * k];
        let x = b[j] / row[j];
        b[j] = x;
        if x != 0.0 {
            for (bi, &u) in b[j + 1..].iter_mut().zip(&row[j + 1..]) {
                *bi -= u * x;
            }
        }
    }
    for j in (0..k).rev() {
        let x = b[j];
        if x != 0.0 {
            let row = &lu[j * k..(j + 1) * k];
            for (bi, &l) in b[..j].iter_mut().zip(&row[..j]) {
                *bi -= l * x;
            }
        }
    }
    let mut x = vec![0.0; k];
    for (i, &p) in perm.iter().enumerate() {
        x[p] = b[i];
    }
    b.copy_from_slice(&x);
}

/// The transpose of the `k x k` row-major `m`.
fn transposed(m: &[f64], k: usize) -> Vec<f64> {
    let mut t = vec![0.0; k * k];
    for i in 0..k {
        for j in 0..k {
            t[j * k + i] = m[i * k + j];
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problems::sieve::cuts;
    use crate::problems::sieve::matching::Scratch;
    use crate::problems::sieve::warm_lp::{step_down, NodeLp};

    #[test]
    fn dense_solves_invert_the_matrix() {
        let m = [2.0, 1.0, 0.0, 1.0, 3.0, 1.0, 0.0, 1.0, 4.0];
        let mut lu = m.to_vec();
        let perm = lu_factor(&mut lu, 3).unwrap();
        let mut b = vec![1.0, 2.0, 3.0];
        lu_solve(&transposed(&lu, 3), &perm, 3, &mut b);
        for i in 0..3 {
            let row: f64 = (0..3).map(|j| m[i * 3 + j] * b[j]).sum();
            assert!((row - [1.0, 2.0, 3.0][i]).abs() < 1e-12);
        }
        let mut c = vec![1.0, 2.0, 3.0];
        lu_solve_transposed(&lu, &perm, 3, &mut c);
        for j in 0..3 {
            let col: f64 = (0..3).map(|i| m[i * 3 + j] * c[i]).sum();
            assert!((col - [1.0, 2.0, 3.0][j]).abs() < 1e-12);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(96))]

        /// Down any path of exclusions and fixed pairs (each step one of the node's matched
        /// pairs, picked by `picks`), with a cut of the pool added as a row now and then,
        /// the warm forest simplex has the optimum microlp finds for the node's dual LP
        /// with the same cuts built afresh; dropping its loose cut rows changes nothing.
        #[test]
        fn warm_solves_match_microlp_anywhere(
            n in 12u32..150,
            picks in proptest::collection::vec((0usize..64, 0u8..4), 1..10),
        ) {
            let g = Graph::new(n);
            let mut scratch = Scratch::default();
            let root = [(crate::problems::sieve::search::largest_prime(n), 1)];
            let mut node = Matching::new(&g, &root, &mut scratch);
            let (_, _, pool) = cuts::derive_all_at(&g, &node, Vec::new(), 40);
            let (first, later) = pool.split_at(pool.len() / 2);
            let mut side = SideLp::build(&g, &node, first).unwrap();
            let mut later = later.to_vec();
            for (pick, action) in picks {
                let pairs: Vec<(u32, u32)> = node
                    .pairs()
                    .into_iter()
                    .filter(|p| !node.is_fixed(p.0))
                    .collect();
                if pairs.is_empty() {
                    break;
                }
                let (big, small) = pairs[pick % pairs.len()];
                if action == 0 {
                    node.fix(&g, big, small, &mut scratch);
                } else {
                    node.exclude(&g, big, small, &mut scratch);
                }
                let added: Vec<Cut> = if action == 3 {
                    later.drain(..).filter(|c| c.is_cluster_at(&g, &node)).collect()
                } else {
                    Vec::new()
                };
                side = side.at(&g, &node, &added).unwrap();
                let fresh = NodeLp::build(&g, &node, &side.cuts_at(&node)).unwrap();
                proptest::prop_assert!(
                    (side.value() - fresh.value()).abs() < 1e-6,
                    "{} {}",
                    side.value(),
                    fresh.value()
                );
                for (cut, lambda) in side.penalties(&node, 1).cuts {
                    proptest::prop_assert!(lambda > 0 && cut.is_cluster_at(&g, &node));
                }
                // Without its loose rows the LP keeps its optimum and basis (no pivot),
                // and the path goes on from it now and then.
                let trimmed = side.at_trimmed(&g, &node, &[], 0.25).unwrap();
                proptest::prop_assert!((trimmed.value() - side.value()).abs() < 1e-6);
                proptest::prop_assert_eq!(trimmed.pivots, side.pivots);
                proptest::prop_assert!(trimmed.shape.cuts.len() <= side.shape.cuts.len());
                if action == 2 {
                    side = trimmed;
                }
            }
        }
    }

    #[test]
    fn the_side_lp_reaches_the_dual_lps_optimum_down_a_path() {
        // The primal LP solved by the forest simplex, cold and then warm down a path of
        // exclusions and fixed pairs, has the optimum of the dual LP microlp solves.
        for n in [60u32, 200] {
            let g = Graph::new(n);
            let mut scratch = Scratch::default();
            let root = [(crate::problems::sieve::search::largest_prime(n), 1)];
            let mut node = Matching::new(&g, &root, &mut scratch);
            let (_, _, pool) = cuts::derive_all_at(&g, &node, Vec::new(), 40);
            let mut side = SideLp::build(&g, &node, &pool).unwrap();
            let reference = NodeLp::build(&g, &node, &pool).unwrap();
            assert!(
                (side.value() - reference.value()).abs() < 1e-6,
                "n = {n}: {} {}",
                side.value(),
                reference.value()
            );
            for step in 0..12 {
                if !step_down(&g, &mut node, &pool, step, &mut scratch) {
                    break;
                }
                side = side.at(&g, &node, &[]).unwrap();
                let fresh = NodeLp::build(&g, &node, &side.cuts_at(&node)).unwrap();
                assert!(
                    (side.value() - fresh.value()).abs() < 1e-6,
                    "n = {n} step {step}: {} {}",
                    side.value(),
                    fresh.value()
                );
            }
        }
    }
}
