//! The dual LP of the cut bound ([`super::cuts`]), kept solved down a search path.
//!
//! A child node's LP is its parent's with rows dropped: the edges the child excluded, and
//! every edge at a number it fixed. So the parent's optimum stays feasible for the child,
//! and re-optimizing from it takes tens of pivots (39 a node at N = 737, BENCHMARKS.md)
//! where a fresh solve takes the whole LP (about 0.1 s there). microlp re-optimizes warm
//! after `fix_var`, so each edge row carries a slack `s_e >= 0` of cost 2: while `s_e` is
//! free it is 0 in every optimum (the row's dual is a matching value, at most 1, so raising
//! a `y` is cheaper), and fixing it at the edge's weight drops the row (it then always
//! holds) at a constant cost that moves no optimum. All rows of a fixed number are dropped
//! at once by fixing its `y` at N (no weight exceeds N). A cut that stops being a cluster at
//! the node (one of its numbers or factors fixed) gets `z_c` fixed at 0.
//!
//! Nothing rests on the LP: its `z` only proposes penalties, which [`super::cuts::apply_at`]
//! checks exactly (each cut a cluster at the node, each penalty an integer >= 0) before the
//! integer matching of the penalized graph bounds the node.

use microlp::{Solution, Variable};

use super::cuts::{Cut, DualLp, Penalties};
use super::matching::{Graph, Matching};

/// Cost of an edge row's slack: above every row dual (at most 1), so a free slack is 0 in
/// every optimum.
const SLACK_COST: f64 = 2.0;

/// One edge row of the LP.
#[derive(Clone)]
struct Row {
    big: u32,
    small: u32,
    slack: Variable,
    /// Dropped (its slack fixed) at this node or above.
    dropped: bool,
}

/// One cut column of the LP.
#[derive(Clone)]
struct Column {
    cut: Cut,
    z: Variable,
    /// Still a cluster at this node (else `z` is fixed at 0).
    valid: bool,
}

/// The cut bound's dual LP, solved for one search node (see the module docs).
#[derive(Clone)]
pub struct NodeLp {
    solution: Solution,
    rows: Vec<Row>,
    columns: Vec<Column>,
    /// `y_v` per number v.
    y: Vec<Variable>,
    /// Numbers fixed at this node or above: `y_v` is fixed at N, which drops all of v's
    /// rows in one edit.
    gone: Vec<bool>,
    /// What the edits add to the objective (dropped rows' slacks, gone numbers' `y`).
    offset: f64,
    /// Edits (`fix_var` calls) since the LP was built, down this path.
    edits: u64,
    /// The search's node count when the LP was built (its re-optimizations keep it): how
    /// old its cuts are ([`super::search::Searcher::set_cut_refresh`]).
    pub built_at: u64,
}

impl NodeLp {
    /// Builds and solves the LP of `node`'s live graph with `cuts` (each a cluster at the
    /// node). `None` if the LP fails.
    pub fn build(g: &Graph, node: &Matching, cuts: &[Cut]) -> Option<NodeLp> {
        let n = g.n();
        let lp = DualLp::new(g, node, cuts, Some(SLACK_COST));
        let columns = cuts
            .iter()
            .zip(&lp.z)
            .map(|(c, &z)| Column {
                cut: c.clone(),
                z,
                valid: true,
            })
            .collect();
        let rows = lp
            .rows
            .iter()
            .map(|&(big, small, slack)| Row {
                big,
                small,
                slack: slack.expect("rows built with slacks"),
                dropped: false,
            })
            .collect();
        let y = lp.y;
        let solution = lp.problem.solve().ok()?.into_solution().ok()?;
        let gone = (0..=n).map(|v| v == 0 || node.is_fixed(v)).collect();
        Some(NodeLp {
            solution,
            rows,
            columns,
            y,
            gone,
            offset: 0.0,
            edits: 0,
            built_at: 0,
        })
    }

    /// This LP re-optimized for `node`, a descendant of the node it was solved for: the
    /// rows of edges dead at `node` dropped, the cuts no longer clusters there zeroed.
    /// `None` if an edit fails.
    pub fn at(&self, g: &Graph, node: &Matching) -> Option<NodeLp> {
        let mut rows = self.rows.clone();
        let mut columns = self.columns.clone();
        let mut gone = self.gone.clone();
        let mut offset = self.offset;
        let mut edits = self.edits;
        let mut solution = self.solution.clone();
        for v in 1..=g.n() {
            if !gone[v as usize] && node.is_fixed(v) {
                // Every row at v holds with y_v = N (no weight exceeds N).
                gone[v as usize] = true;
                offset += f64::from(g.n());
                edits += 1;
                solution = solution
                    .fix_var(self.y[v as usize], f64::from(g.n()))
                    .ok()?
                    .into_solution()
                    .ok()?;
            }
        }
        for row in rows.iter_mut().filter(|r| !r.dropped) {
            if gone[row.big as usize] || gone[row.small as usize] {
                row.dropped = true;
                continue;
            }
            if !node.is_live(g, row.big, row.small) {
                row.dropped = true;
                offset += SLACK_COST * f64::from(row.big);
                edits += 1;
                solution = solution
                    .fix_var(row.slack, f64::from(row.big))
                    .ok()?
                    .into_solution()
                    .ok()?;
            }
        }
        for column in columns.iter_mut().filter(|c| c.valid) {
            // Below the node it was a cluster at, a cut stays one (exclusions drop
            // bijections, fixed pairs only add precedences) until one of its numbers or
            // factors is fixed ([`Cut::is_cluster_at`]); `apply_at` checks in full.
            let members = column.cut.numbers.iter().chain(&column.cut.factors);
            if members.into_iter().any(|&v| node.is_fixed(v)) {
                column.valid = false;
                edits += 1;
                solution = solution.fix_var(column.z, 0.0).ok()?.into_solution().ok()?;
            }
        }
        Some(NodeLp {
            solution,
            rows,
            columns,
            y: self.y.clone(),
            gone,
            offset,
            edits,
            built_at: self.built_at,
        })
    }

    /// The LP's optimum for its node: the cut bound before rounding (the edits' constant
    /// costs taken off).
    pub fn value(&self) -> f64 {
        self.solution.objective() - self.offset
    }

    /// Simplex pivots and edits (`fix_var` calls) since the LP was built, down this path
    /// (measurement: what a warm derivation costs).
    pub fn work(&self) -> (u64, u64) {
        (self.solution.stats().lp_iterations, self.edits)
    }

    /// The cuts that are still clusters at the LP's node (its columns not zeroed).
    pub fn cuts(&self) -> Vec<Cut> {
        self.columns
            .iter()
            .filter(|c| c.valid)
            .map(|c| c.cut.clone())
            .collect()
    }

    /// The floors of the LP's `z` as penalties (valid cuts only).
    pub fn penalties(&self) -> Penalties {
        let cuts = self
            .columns
            .iter()
            .filter(|c| c.valid)
            .filter_map(|c| {
                let lambda = (self.solution[c.z] + 1e-6).floor() as i32;
                (lambda > 0).then(|| (c.cut.clone(), lambda))
            })
            .collect();
        Penalties { cuts }
    }
}

/// One step down a test path: excludes a matched free pair the cuts of `pool` see (or the
/// first one), or fixes it every third `step`. False once no free pair is left.
#[cfg(test)]
pub(crate) fn step_down(
    g: &Graph,
    node: &mut Matching,
    pool: &[Cut],
    step: usize,
    scratch: &mut super::matching::Scratch,
) -> bool {
    let pairs: Vec<(u32, u32)> = node
        .pairs()
        .into_iter()
        .filter(|p| !node.is_fixed(p.0))
        .collect();
    let Some(&(big, small)) = pairs
        .iter()
        .find(|p| pool.iter().any(|c| c.numbers.contains(&p.0)))
        .or(pairs.first())
    else {
        return false;
    };
    if step % 3 == 2 {
        node.fix(g, big, small, scratch);
    } else {
        node.exclude(g, big, small, scratch);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problems::sieve::cuts;
    use crate::problems::sieve::matching::Scratch;

    /// The cuts of `lp` that are still columns (clusters at its node).
    fn columns(lp: &NodeLp) -> Vec<Cut> {
        lp.columns
            .iter()
            .filter(|c| c.valid)
            .map(|c| c.cut.clone())
            .collect()
    }

    #[test]
    fn warm_edits_reach_the_fresh_optimum_of_each_node() {
        // Down a path of exclusions and fixed pairs, the LP re-optimized warm from the node
        // above has the optimum of the LP built from scratch at the node with the same cuts.
        // Dropping a row too few or too many, or a cut left in after one of its numbers is
        // fixed, changes that optimum.
        let n = 200;
        let g = Graph::new(n);
        let mut scratch = Scratch::default();
        let mut node = Matching::new(&g, &[(199, 1)], &mut scratch);
        let (_, _, pool) = cuts::derive_all_at(&g, &node, Vec::new(), 40);
        assert!(!pool.is_empty());
        let mut lp = NodeLp::build(&g, &node, &pool).unwrap();
        let mut steps = 0;
        for _ in 0..12 {
            // Exclude a matched pair of a cut (a change the cuts see), or fix one.
            if !step_down(&g, &mut node, &pool, steps, &mut scratch) {
                break;
            }
            steps += 1;
            lp = lp.at(&g, &node).unwrap();
            let fresh = NodeLp::build(&g, &node, &columns(&lp)).unwrap();
            assert!(
                (lp.value() - fresh.value()).abs() < 1e-6,
                "step {steps}: warm {} fresh {}",
                lp.value(),
                fresh.value()
            );
        }
        assert!(steps >= 6, "the path ended after {steps} steps");
    }
}
