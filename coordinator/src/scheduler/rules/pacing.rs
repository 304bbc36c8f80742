//! Pacing: how much work one lease should carry, measured from the units already done. Tiny
//! units travel in runs (several units per requested slot, each its own lease) and, where
//! the problem's splitter allows, are created coarser (consecutive units joined into one
//! that covers exactly their union). Pure: the grant flow reads the measure and the lanes.

/// Most units granted per requested slot.
pub const MAX_RUN: usize = 256;
/// Most splitter units joined into one new unit.
pub const MAX_JOIN: usize = 256;
/// Results a campaign needs before its unit size is trusted.
const SAMPLES_NEEDED: i64 = 4;
/// How many of the latest results the measure averages.
pub const SAMPLES_AVERAGED: i64 = 32;

/// The latest mean wall time of a campaign's results, per unit and per splitter unit (a
/// joined unit counts as its parts), with the campaign's target lease time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Measure {
    target_seconds: f64,
    per_unit: f64,
    per_part: f64,
}

impl Measure {
    /// The measure from the campaign's own target lease time (ms; 0: `server_target_ms`,
    /// negative: pacing off), the mean wall seconds per unit and per part of its latest
    /// results and how many there were; `None` until enough results are in or when pacing
    /// is off.
    pub fn new(
        own_target_ms: i64,
        server_target_ms: i64,
        per_unit: Option<f64>,
        per_part: Option<f64>,
        samples: i64,
    ) -> Option<Measure> {
        let target_ms = if own_target_ms != 0 {
            own_target_ms
        } else {
            server_target_ms
        };
        match (per_unit, per_part) {
            (Some(per_unit), Some(per_part)) if samples >= SAMPLES_NEEDED && target_ms > 0 => {
                Some(Measure {
                    target_seconds: target_ms as f64 / 1000.0,
                    per_unit: per_unit.max(1e-6),
                    per_part: per_part.max(1e-6),
                })
            }
            _ => None,
        }
    }
}

/// How many units one requested slot of a campaign receives: as many as fill the campaign's
/// target lease duration at the mean wall time of its latest results (1 until measured).
/// Each unit keeps its own lease, result, provenance and checkpoint.
pub fn run_length(measure: Option<Measure>) -> usize {
    measure.map_or(1, |m| {
        ((m.target_seconds / m.per_unit).floor() as usize).clamp(1, MAX_RUN)
    })
}

/// How many consecutive splitter units the next units of a campaign should join (1 until
/// measured): enough for one unit to take a fraction of the target lease time, so that a
/// campaign of tiny units costs few leases while runs still spread work over every slot
/// to the end.
pub fn join_factor(measure: Option<Measure>) -> usize {
    measure.map_or(1, |m| {
        let per_unit_goal = m.target_seconds / JOINED_UNITS_PER_LEASE;
        ((per_unit_goal / m.per_part).floor() as usize).clamp(1, MAX_JOIN)
    })
}

/// A joined unit aims at this fraction of the target lease time: a lease still carries a
/// run of several units, and the last units of a campaign stay small enough to share.
const JOINED_UNITS_PER_LEASE: f64 = 8.0;

/// Near a campaign's end, a request takes its lanes' fraction of the pending work divided by
/// this (factoring).
const SHARE_DIVISOR: i64 = 2;

/// A worker's share of a campaign's last pending work (see [`even_finish`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EndShare {
    /// Most splitter units (`units.parts`) the request may take.
    pub parts: i64,
    /// Units it may take whatever their parts: one per lane of the worker, so that a free
    /// lane never waits while units are pending.
    pub at_least: usize,
}

impl EndShare {
    /// How many of `parts` (the parts of the units about to be granted, in grant order) fit
    /// the share; at least one.
    pub fn units_within(&self, parts: impl IntoIterator<Item = i64>) -> usize {
        let mut taken = 0usize;
        let mut sum = 0i64;
        for unit_parts in parts {
            sum += unit_parts.max(1);
            if taken >= self.at_least.max(1) && sum > self.parts {
                break;
            }
            taken += 1;
        }
        taken
    }
}

/// Even finish: once a campaign has nothing left to split, one request takes at most half
/// its worker's lanes' fraction of the pending work (`ceil(pending parts x worker lanes /
/// (2 x all lanes))`: guided self-scheduling with factoring's halving, so that a lane that
/// started late or runs slow is not left holding a whole fair share), so grants shrink as
/// the campaign ends and every lane finishes at about the same time instead of one holding
/// a full run while the others idle.
/// Lanes are the `cores` (solve threads) of the workers that hold active leases of the
/// campaign, plus the requesting worker's (`own`); `all` counts them all. Returns how many
/// pending parts to count (the scan can stop once the share exceeds a grant of
/// `granting_parts`), or `None` when nobody shares the campaign's end with this worker.
pub fn even_finish_scan(own: i64, all: i64, granting_parts: i64) -> Option<i64> {
    if all <= own {
        // Nobody to share with: shorter runs would only cost round trips.
        return None;
    }
    let all = all.saturating_mul(SHARE_DIVISOR);
    // share < granting  <=>  pending x own < granting x all (pending counted to that point).
    Some(ceil_div(granting_parts.saturating_mul(all), own).saturating_add(1))
}

/// The worker's share of a campaign's last `pending` parts (see [`even_finish_scan`]);
/// `None` when it does not limit a grant of `granting_parts` parts.
pub fn even_finish(own: i64, all: i64, pending: i64, granting_parts: i64) -> Option<EndShare> {
    let all = all.saturating_mul(SHARE_DIVISOR);
    let parts = ceil_div(pending.saturating_mul(own), all);
    (parts < granting_parts).then_some(EndShare {
        parts: parts.max(1),
        at_least: own as usize,
    })
}

/// `a / b` rounded up, for `a >= 0` and `b >= 1`.
fn ceil_div(a: i64, b: i64) -> i64 {
    (a.max(0) as u64).div_ceil(b.max(1) as u64) as i64
}

/// Sizes of the units a split batch of `count` splitter units is joined into, in order.
/// Joined `join` at a time; when the batch is a campaign's last (`last`), its tail tapers
/// (from the end: `per_level` units of 1 part, then of 2, 4, ... below `join`), so that the
/// campaign ends on small units that every lane can share.
pub fn join_sizes(count: usize, join: usize, last: bool, per_level: usize) -> Vec<usize> {
    let join = join.max(1);
    let mut tail = Vec::new();
    let mut left = count;
    if last {
        let mut size = 1;
        while size < join && left > 0 {
            for _ in 0..per_level.max(1) {
                if left == 0 {
                    break;
                }
                let take = size.min(left);
                tail.push(take);
                left -= take;
            }
            size *= 2;
        }
    }
    // A short unit first (the remainder), then full ones, then the tail: never growing
    // after the first.
    let mut sizes = Vec::with_capacity(left.div_ceil(join) + tail.len());
    if !left.is_multiple_of(join) {
        sizes.push(left % join);
    }
    sizes.extend(std::iter::repeat_n(join, left / join));
    sizes.extend(tail.into_iter().rev());
    sizes
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_last_batch_ends_on_units_of_one_part() {
        assert_eq!(join_sizes(10, 4, false, 2), vec![2, 4, 4]);
        // From the end: 2 units of 1 part, 2 of 2, then 4 at a time.
        assert_eq!(join_sizes(20, 4, true, 2), vec![2, 4, 4, 4, 2, 2, 1, 1]);
        assert_eq!(join_sizes(3, 4, true, 2), vec![1, 1, 1]);
        assert_eq!(join_sizes(5, 1, true, 2), vec![1; 5]);
    }

    #[test]
    fn pacing_fills_the_target_lease_time_once_measured() {
        assert_eq!(run_length(None), 1);
        assert_eq!(Measure::new(0, 10_000, Some(0.5), Some(0.5), 3), None);
        assert_eq!(Measure::new(-1, 10_000, Some(0.5), Some(0.5), 30), None);
        let m = Measure::new(0, 10_000, Some(0.5), Some(0.25), 30);
        assert_eq!(run_length(m), 20);
        // A unit aims at 10 s / 8; a part takes 0.25 s.
        assert_eq!(join_factor(m), 5);
        let own = Measure::new(2_000, 10_000, Some(0.5), Some(0.5), 30);
        assert_eq!(run_length(own), 4);
    }

    #[test]
    fn an_even_finish_shares_the_last_parts_among_lanes() {
        assert_eq!(even_finish_scan(4, 4, 10), None, "alone: no share");
        // 100 pending parts, 4 of 16 lanes: a quarter, halved, is 13.
        assert!(even_finish_scan(4, 16, 50).is_some());
        assert_eq!(
            even_finish(4, 16, 100, 50),
            Some(EndShare {
                parts: 13,
                at_least: 4
            })
        );
        assert_eq!(even_finish(4, 16, 100, 10), None);
    }

    #[test]
    fn a_share_takes_units_up_to_its_parts_and_one_per_lane() {
        let share = EndShare {
            parts: 10,
            at_least: 1,
        };
        assert_eq!(share.units_within([4, 4, 4, 4]), 2);
        assert_eq!(share.units_within([20, 1]), 1, "at least one unit");
        let share = EndShare {
            parts: 1,
            at_least: 3,
        };
        assert_eq!(share.units_within([5, 5, 5, 5]), 3, "one per lane");
    }

    proptest! {
        #[test]
        fn join_sizes_cover_the_batch(count in 0usize..5_000, join in 1usize..300,
                                      last: bool, per_level in 1usize..20) {
            let sizes = join_sizes(count, join, last, per_level);
            prop_assert_eq!(sizes.iter().sum::<usize>(), count);
            prop_assert!(sizes.iter().all(|&s| s >= 1 && s <= join));
            if count > 0 {
                prop_assert!(sizes[1..].windows(2).all(|w| w[0] >= w[1]), "{:?}", sizes);
            }
            if last && count > 0 {
                prop_assert_eq!(*sizes.last().unwrap(), 1);
            }
        }
    }
}
