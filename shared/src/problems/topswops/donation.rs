//! The coordinator's check of a topswops donation: the kept range plus the donated subtrees
//! must cover the donor's unit exactly ([`crate::coverage`]); the subtrees the donor dropped
//! because they cannot beat the bound are re-checked here with the same search.

use std::cell::Cell;

use super::search::{Mode, Observer, SearchEnd, Searcher};
use crate::coverage::RangeTree;
use crate::problem::ProblemError;

/// Most nodes one dropped subtree may take to show it holds nothing (honest donors drop only
/// subtrees the search prunes at their root).
const NODES_PER_GAP: u64 = 20_000;
/// Most nodes all the dropped subtrees of one donation may take together.
const NODES_PER_DONATION: u64 = 2_000_000;

/// The search tree as [`crate::coverage::check_range_donation`] sees it.
pub(super) struct GapSearch {
    searcher: Searcher,
    n: u8,
    mode: Mode,
    bound: Option<u32>,
    nodes_left: u64,
}

impl GapSearch {
    /// Searches gaps with `searcher` (configured as the campaign's solver), in `mode`, under
    /// the campaign's `bound`.
    pub(super) fn new(mut searcher: Searcher, mode: Mode, bound: Option<i64>) -> GapSearch {
        searcher.set_skip_fixed_points(true);
        searcher.set_check_interval(256);
        GapSearch {
            n: searcher.n() as u8,
            searcher,
            mode,
            bound: bound.map(|b| b.clamp(0, i64::from(u32::MAX)) as u32),
            nodes_left: NODES_PER_DONATION,
        }
    }
}

impl RangeTree<u8> for GapSearch {
    fn children(&mut self, parent: &[u8]) -> Result<Vec<u8>, ProblemError> {
        let mut path = parent.to_vec();
        path.push(0);
        Ok((1..=self.n)
            .filter(|&v| {
                *path.last_mut().expect("pushed") = v;
                self.searcher.is_node(&path)
            })
            .collect())
    }

    fn holds_nothing(&mut self, path: &[u8]) -> Result<bool, ProblemError> {
        let budget = NODES_PER_GAP.min(self.nodes_left);
        let watch = GapObserver {
            bound: self.bound,
            budget,
            nodes: Cell::new(0),
            found: Cell::new(false),
        };
        let end = self
            .searcher
            .search(path, None, None, self.mode, &watch)
            .map_err(|e| ProblemError::InvalidResult(format!("donation check: {e}")))?;
        let nodes = self.searcher.stats().nodes;
        self.nodes_left = self.nodes_left.saturating_sub(nodes);
        Ok(end == SearchEnd::Exhausted && !watch.found.get())
    }
}

/// Watches a gap search: stops at the budget, notes any find.
struct GapObserver {
    bound: Option<u32>,
    budget: u64,
    nodes: Cell<u64>,
    found: Cell<bool>,
}

impl Observer for GapObserver {
    fn bound(&self) -> Option<u32> {
        self.bound
    }
    fn found(&self, _deck: &[u8], _flips: u32) {
        self.found.set(true);
    }
    fn progress(&self, nodes: u64) {
        self.nodes.set(nodes);
    }
    fn should_stop(&self) -> bool {
        self.found.get() || self.nodes.get() >= self.budget
    }
    fn donate(&self, _prefixes: Vec<Vec<u8>>, _new_limit: Vec<u8>) {}
}
