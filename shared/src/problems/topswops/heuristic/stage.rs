//! One stage's search: every k-arrangement of a pool of values, in a range of arrangement
//! numbers, fed as the next heads after a shared prefix state. Arrangements sharing their
//! first j values share the flips those values cause: the search walks the arrangement
//! tree depth first, keeping one state per depth, so most of the work is the last level.

use super::arrangement::subtree;
use crate::problems::topswops::scorer::{Card, HeadState, Kernel};

/// The arrangements of `k` values out of `pool` after the state `base`.
pub struct Stage<'a> {
    /// The state after the prefix, awaiting the next head.
    pub base: &'a HeadState,
    /// The values to arrange (the arrangement numbers index this order).
    pub pool: &'a [Card],
    /// How many of them each arrangement feeds.
    pub k: usize,
    /// The reversal kernel.
    pub kernel: Kernel,
}

impl Stage<'_> {
    /// Visits arrangements numbered `from..to` in order: `visit(number, values, state)` sees
    /// the state after feeding them, and returns false to stop. Returns false when stopped.
    pub fn run(
        &self,
        from: u64,
        to: u64,
        visit: &mut dyn FnMut(u64, &[Card], &HeadState) -> bool,
    ) -> bool {
        let mut states = vec![self.base.untracked(); self.k + 1];
        let mut chosen = Vec::with_capacity(self.k);
        let mut free = vec![true; self.pool.len()];
        self.walk(0, 0, from, to, &mut states, &mut chosen, &mut free, visit)
    }

    #[allow(clippy::too_many_arguments)]
    fn walk(
        &self,
        depth: usize,
        start: u64,
        from: u64,
        to: u64,
        states: &mut [HeadState],
        chosen: &mut Vec<Card>,
        free: &mut [bool],
        visit: &mut dyn FnMut(u64, &[Card], &HeadState) -> bool,
    ) -> bool {
        if depth == self.k {
            return visit(start, chosen, &states[depth]);
        }
        let block = subtree(self.pool.len(), self.k, depth);
        let mut child = start;
        for item in 0..self.pool.len() {
            if !free[item] {
                continue;
            }
            if child >= to {
                break;
            }
            let end = child.saturating_add(block);
            if end > from {
                let (done, rest) = states.split_at_mut(depth + 1);
                rest[0].copy_from(&done[depth]);
                rest[0].feed_unchecked(self.kernel, self.pool[item]);
                free[item] = false;
                chosen.push(self.pool[item]);
                let go = self.walk(depth + 1, child, from, to, states, chosen, free, visit);
                chosen.pop();
                free[item] = true;
                if !go {
                    return false;
                }
            }
            child = end;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::arrangement::{count, unrank};
    use super::*;

    #[test]
    fn every_arrangement_in_range_is_scored_like_a_fresh_replay() {
        let n = 12;
        let kernel = Kernel::detect();
        let mut base = HeadState::new(n).unwrap();
        for h in [3, 5, 2, 4] {
            base.feed(kernel, h).unwrap();
        }
        let pool: Vec<Card> = vec![6, 7, 8, 9, 10];
        let stage = Stage {
            base: &base,
            pool: &pool,
            k: 3,
            kernel,
        };
        let total = count(5, 3).unwrap();
        let (from, to) = (7, total - 5);
        let mut seen = Vec::new();
        stage.run(from, to, &mut |index, values, state| {
            let expected: Vec<Card> = unrank(5, 3, index)
                .unwrap()
                .iter()
                .map(|&i| pool[i])
                .collect();
            assert_eq!(values, expected.as_slice());
            let mut fresh = HeadState::new(n).unwrap();
            for h in [3, 5, 2, 4].iter().chain(values) {
                fresh.feed(Kernel::Portable, *h).unwrap();
            }
            assert_eq!(state.flips(), fresh.flips());
            seen.push(index);
            true
        });
        assert_eq!(seen, (from..to).collect::<Vec<_>>());
        // Stopping early stops at once.
        let mut visits = 0;
        assert!(!stage.run(0, total, &mut |_, _, _| {
            visits += 1;
            visits < 4
        }));
        assert_eq!(visits, 4);
    }
}
