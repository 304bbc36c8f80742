//! Verifier runs spared without trusting anyone: a user's checker is a process start per
//! run, so the coordinator runs it only where its answer can matter.
//! - An improvement whose *claimed* score cannot change its campaign's incumbent is not
//!   re-scored: whatever the solution really scores, it changes nothing (the unit's final
//!   result is still checked when it arrives).
//! - A unit's final best that its own lease already had checked as an improvement, byte for
//!   byte, keeps that verified score instead of being checked a second time.

use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::Mutex;

/// Most leases remembered at once; past it the memory is cleared (a forgotten entry only
/// costs one more checker run).
const MAX_REMEMBERED: usize = 4096;

/// The last solution each lease had verified as an improvement, by digest, with its score.
#[derive(Default)]
pub(super) struct CheckedClaims {
    by_lease: Mutex<HashMap<i64, ([u8; 32], i64)>>,
}

impl CheckedClaims {
    /// Remembers that `solution_json`, improved by `lease_id`, verified at `score`.
    pub(super) fn remember(&self, lease_id: i64, solution_json: &str, score: i64) {
        let mut by_lease = self.by_lease.lock().expect("poisoned");
        if by_lease.len() >= MAX_REMEMBERED && !by_lease.contains_key(&lease_id) {
            by_lease.clear();
        }
        by_lease.insert(lease_id, (digest(solution_json), score));
    }

    /// The verified score of `solution_json` if it is the last solution `lease_id` had
    /// verified; the lease is forgotten either way (its result has arrived).
    pub(super) fn recall(&self, lease_id: i64, solution_json: &str) -> Option<i64> {
        let (known, score) = self.by_lease.lock().expect("poisoned").remove(&lease_id)?;
        (known == digest(solution_json)).then_some(score)
    }
}

fn digest(text: &str) -> [u8; 32] {
    Sha256::digest(text.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_recalls_only_the_very_solution_it_had_verified() {
        let checked = CheckedClaims::default();
        checked.remember(7, r#"{"v":"0101"}"#, 12);
        assert_eq!(checked.recall(7, r#"{"v":"0110"}"#), None, "other bytes");
        checked.remember(7, r#"{"v":"0101"}"#, 12);
        assert_eq!(checked.recall(8, r#"{"v":"0101"}"#), None, "other lease");
        assert_eq!(checked.recall(7, r#"{"v":"0101"}"#), Some(12));
        assert_eq!(checked.recall(7, r#"{"v":"0101"}"#), None, "recalled once");
    }

    #[test]
    fn a_newer_improvement_replaces_the_older_one() {
        let checked = CheckedClaims::default();
        checked.remember(3, "a", 5);
        checked.remember(3, "b", 4);
        assert_eq!(checked.recall(3, "a"), None);
    }

    #[test]
    fn the_memory_stays_bounded() {
        let checked = CheckedClaims::default();
        for lease in 0..(MAX_REMEMBERED as i64 + 10) {
            checked.remember(lease, "s", 1);
        }
        assert!(checked.by_lease.lock().unwrap().len() <= MAX_REMEMBERED);
    }
}
