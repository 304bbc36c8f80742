//! The coordinator's check of a sieve donation: the kept range plus the donated subtrees
//! must cover the donor's unit exactly ([`crate::coverage`]). Honest sieve donors hand out
//! every untried child, so there are no gaps; a gap is accepted only when the sieve's own
//! search shows, within a small budget, that it cannot beat the campaign's bound.

use std::cell::Cell;

use super::search::{Observer, SearchEnd, Searcher};
use crate::coverage::RangeTree;
use crate::problem::ProblemError;

/// Most nodes one dropped subtree may take to show it holds nothing.
const NODES_PER_GAP: u64 = 2_000;
/// Most nodes all the dropped subtrees of one donation may take together.
const NODES_PER_DONATION: u64 = 100_000;

/// The search tree as [`crate::coverage::check_range_donation`] sees it.
pub(super) struct GapSearch {
    searcher: Searcher,
    bound: Option<i64>,
    nodes_left: u64,
}

impl GapSearch {
    /// Searches gaps with `searcher` (a fresh one of the campaign's tree) under the
    /// campaign's `bound`.
    pub(super) fn new(mut searcher: Searcher, bound: Option<i64>) -> GapSearch {
        searcher.set_check_interval(64);
        GapSearch {
            searcher,
            bound,
            nodes_left: NODES_PER_DONATION,
        }
    }
}

impl RangeTree<u16> for GapSearch {
    fn children(&mut self, parent: &[u16]) -> Result<Vec<u16>, ProblemError> {
        Ok(match self.searcher.expand(parent) {
            Ok(expansion) => expansion
                .children
                .iter()
                .filter_map(|(path, _)| path.last().copied())
                .collect(),
            // A path naming no node has no children.
            Err(_) => Vec::new(),
        })
    }

    fn holds_nothing(&mut self, path: &[u16]) -> Result<bool, ProblemError> {
        let before = self.searcher.stats().nodes;
        let watch = GapObserver {
            bound: self.bound,
            budget: NODES_PER_GAP.min(self.nodes_left),
            nodes: Cell::new(0),
            found: Cell::new(false),
        };
        let end = self
            .searcher
            .search(path, None, None, &watch)
            .map_err(|e| ProblemError::InvalidResult(format!("donation check: {e}")))?;
        let nodes = self.searcher.stats().nodes.saturating_sub(before);
        self.nodes_left = self.nodes_left.saturating_sub(nodes);
        Ok(end == SearchEnd::Done && !watch.found.get())
    }
}

/// Watches a gap search: stops at the budget, notes any find.
struct GapObserver {
    bound: Option<i64>,
    budget: u64,
    nodes: Cell<u64>,
    found: Cell<bool>,
}

impl Observer for GapObserver {
    fn bound(&self) -> Option<i64> {
        self.bound
    }
    fn found(&self, _moves: &[u32], _score: i64) {
        self.found.set(true);
    }
    fn progress(&self, nodes: u64) {
        self.nodes.set(nodes);
    }
    fn should_stop(&self) -> bool {
        self.found.get() || self.nodes.get() >= self.budget
    }
}
