//! `primes`: the calibration problem. Counts the primes p with `from <= p < to`, in units of
//! `unit` consecutive numbers. Cheap, exactly known (pi(x) tables), evenly splittable work that
//! exercises the whole lease machinery; `--min-unit-ms` makes every unit take at least that
//! long, so tests and load benchmarks can hold leases open for a controlled time.

use clap::Args;
use num_bigint::BigUint;
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

use crate::problem::{
    codec, Chains, Objective, Placement, Presentation, Problem, ProblemError, SolveContext,
    SplitBatch, UnitOutcome, UnitSpec, Units, Verification,
};
use crate::registry::ProblemDef;

/// Largest accepted `to`: the sieve's base primes (up to sqrt(to)) stay small.
pub const MAX_TO: u64 = 100_000_000_000_000;
/// Numbers sieved between two checkpoints.
const SEGMENT: u64 = 1 << 16;

/// Parameters of the calibration problem.
#[derive(Args, Serialize, Deserialize, Clone, Debug)]
pub struct PrimesParams {
    /// First number of the range (inclusive).
    #[arg(long, default_value_t = 0)]
    #[serde(default)]
    pub from: u64,
    /// End of the range (exclusive).
    #[arg(long)]
    pub to: u64,
    /// Numbers per unit.
    #[arg(long, default_value_t = 1_000_000)]
    #[serde(default = "default_unit")]
    pub unit: u64,
    /// Make every unit take at least this many milliseconds (simulated heavier work).
    #[arg(long, default_value_t = 0)]
    #[serde(default)]
    pub min_unit_ms: u64,
}

fn default_unit() -> u64 {
    1_000_000
}

/// The calibration problem instance.
pub struct Primes {
    params: PrimesParams,
}

impl ProblemDef for Primes {
    const NAME: &'static str = "primes";
    const ABOUT: &'static str = "count primes in [from, to) in units (calibration problem)";
    const SOLVER_VERSION: u32 = 1;
    type Params = PrimesParams;

    fn from_params(params: PrimesParams) -> Result<Self, ProblemError> {
        if params.to > MAX_TO {
            return Err(ProblemError::InvalidParams(format!(
                "--to {} is larger than the maximum {MAX_TO}",
                params.to
            )));
        }
        if params.from >= params.to {
            return Err(ProblemError::InvalidParams(format!(
                "--from {} must be below --to {}",
                params.from, params.to
            )));
        }
        if params.unit == 0 {
            return Err(ProblemError::InvalidParams(
                "--unit must be at least 1".into(),
            ));
        }
        if params.min_unit_ms > 3_600_000 {
            return Err(ProblemError::InvalidParams(
                "--min-unit-ms must be at most one hour".into(),
            ));
        }
        Ok(Primes { params })
    }

    /// A few units of primes, one large enough to take checkpoints, and an offset range.
    fn examples() -> Vec<serde_json::Value> {
        vec![
            serde_json::json!({"to": 300_000, "unit": 140_000}),
            serde_json::json!({"from": 1_000, "to": 9_000, "unit": 700}),
        ]
    }
}

impl Problem for Primes {
    fn objective(&self) -> Objective {
        Objective::Count
    }

    fn split(&self, cursor: Option<&[u8]>, max_units: usize) -> Result<SplitBatch, ProblemError> {
        let mut start = match cursor {
            None => self.params.from,
            Some(bytes) => codec::decode_u64s::<1>(bytes, "primes split cursor")?[0],
        };
        if start < self.params.from || start > self.params.to {
            return Err(ProblemError::InvalidUnit(format!(
                "primes split cursor {start} outside [{}, {}]",
                self.params.from, self.params.to
            )));
        }
        let mut units = Vec::new();
        while start < self.params.to && units.len() < max_units {
            let end = start.saturating_add(self.params.unit).min(self.params.to);
            units.push(UnitSpec {
                label: format!("[{start}, {end})"),
                payload: codec::encode_u64s(&[start, end]),
            });
            start = end;
        }
        let next = (start < self.params.to).then(|| codec::encode_u64s(&[start]));
        Ok(SplitBatch { units, next })
    }

    fn solve(&self, payload: &[u8], ctx: &dyn SolveContext) -> Result<UnitOutcome, ProblemError> {
        let [start, end] = codec::decode_u64s::<2>(payload, "primes unit")?;
        if start >= end || start < self.params.from || end > self.params.to {
            return Err(ProblemError::InvalidUnit(format!(
                "primes unit [{start}, {end}) is not inside [{}, {})",
                self.params.from, self.params.to
            )));
        }
        let (mut pos, mut count) = match ctx.resume_cursor() {
            None => (start, 0),
            Some(bytes) => {
                let [pos, count] = codec::decode_u64s::<2>(bytes, "primes checkpoint")?;
                if pos < start || pos > end || count > pos - start {
                    return Err(ProblemError::InvalidUnit(format!(
                        "primes checkpoint ({pos}, {count}) does not fit unit [{start}, {end})"
                    )));
                }
                (pos, count)
            }
        };
        let base = base_primes(isqrt(end - 1) + 1);
        let span = (end - start) as f64;
        // Spread the simulated time over the part of the unit still to do.
        let pace = Duration::from_millis(self.params.min_unit_ms)
            .mul_f64((end - pos) as f64 / span)
            .div_f64(span);
        let step = if self.params.min_unit_ms > 0 {
            SEGMENT.min(((end - start) / 16).max(1))
        } else {
            SEGMENT
        };
        let began = Instant::now();
        let resumed_at = pos;
        while pos < end {
            if ctx.stop_requested() {
                return Ok(UnitOutcome::Stopped);
            }
            let seg_end = pos.saturating_add(step).min(end);
            count += count_primes_in(pos, seg_end, &base);
            pos = seg_end;
            let due = pace.mul_f64((pos - resumed_at) as f64);
            while began.elapsed() < due {
                if ctx.stop_requested() {
                    ctx.checkpoint(codec::encode_u64s(&[pos, count]));
                    return Ok(UnitOutcome::Stopped);
                }
                // Saturating: time passes between the check above and this subtraction.
                std::thread::sleep(
                    due.saturating_sub(began.elapsed())
                        .min(Duration::from_millis(5)),
                );
            }
            ctx.checkpoint(codec::encode_u64s(&[pos, count]));
            ctx.progress(pos - start, Some((pos - start) as f64 / span));
        }
        Ok(UnitOutcome::Count(BigUint::from(count)))
    }
}

impl Verification for Primes {}

impl Units for Primes {
    /// Consecutive ranges join into the one range they tile. Units slowed down with
    /// `--min-unit-ms` stay apart: their point is leases of a given length.
    fn join_units(&self, units: &[UnitSpec]) -> Option<UnitSpec> {
        if self.params.min_unit_ms > 0 {
            return None;
        }
        let mut ranges = units
            .iter()
            .map(|u| codec::decode_u64s::<2>(&u.payload, "primes unit").ok());
        let [start, mut end] = ranges.next()??;
        for range in ranges {
            let [a, b] = range?;
            if a != end {
                return None;
            }
            end = b;
        }
        Some(UnitSpec {
            label: format!("[{start}, {end})"),
            payload: codec::encode_u64s(&[start, end]),
        })
    }

    /// A range unit `[a, b)` may be split into a kept `[a, m)` and donated ranges that tile
    /// `[m, b)` in order, without gaps or overlap (the solver itself never donates; the
    /// coordinator's tests split ranges by hand).
    fn check_donation(
        &self,
        old: &[u8],
        remaining: &[u8],
        donated: &[Vec<u8>],
        _bound: Option<i64>,
    ) -> Result<(), ProblemError> {
        let refuse = |why: String| ProblemError::InvalidResult(format!("donation refused: {why}"));
        let [start, end] = codec::decode_u64s::<2>(old, "primes unit")?;
        let [kept_start, mut at] = codec::decode_u64s::<2>(remaining, "primes unit")?;
        if kept_start != start || at <= start || at >= end {
            return Err(refuse(format!(
                "[{kept_start}, {at}) is not a proper start of [{start}, {end})"
            )));
        }
        for piece in donated {
            let [a, b] = codec::decode_u64s::<2>(piece, "primes unit")?;
            if a != at || b <= a || b > end {
                return Err(refuse(format!(
                    "[{a}, {b}) does not continue at {at} inside [{start}, {end})"
                )));
            }
            at = b;
        }
        if at != end {
            return Err(refuse(format!("[{at}, {end}) is neither kept nor donated")));
        }
        Ok(())
    }
}

impl Chains for Primes {}

impl Placement for Primes {}

impl Presentation for Primes {}

/// Integer square root (floor).
pub fn isqrt(n: u64) -> u64 {
    let mut r = (n as f64).sqrt() as u64;
    while r.saturating_mul(r) > n {
        r -= 1;
    }
    while (r + 1).saturating_mul(r + 1) <= n {
        r += 1;
    }
    r
}

/// All primes below `limit` (simple sieve of Eratosthenes).
pub fn base_primes(limit: u64) -> Vec<u64> {
    let limit = limit as usize;
    let mut composite = vec![false; limit.max(2)];
    let mut primes = Vec::new();
    for i in 2..limit {
        if !composite[i] {
            primes.push(i as u64);
            let mut j = i * i;
            while j < limit {
                composite[j] = true;
                j += i;
            }
        }
    }
    primes
}

/// Counts primes in `[lo, hi)` given every prime up to sqrt(hi - 1).
pub fn count_primes_in(lo: u64, hi: u64, base: &[u64]) -> u64 {
    if hi <= lo {
        return 0;
    }
    let len = (hi - lo) as usize;
    let mut composite = vec![false; len];
    for n in lo..hi.min(2) {
        composite[(n - lo) as usize] = true;
    }
    for &p in base {
        if p * p >= hi {
            break;
        }
        let first = (p * p).max(lo.div_ceil(p) * p);
        let mut m = first;
        while m < hi {
            composite[(m - lo) as usize] = true;
            m += p;
        }
    }
    composite.iter().filter(|c| !**c).count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::LocalContext;
    use proptest::prelude::*;

    fn problem(from: u64, to: u64, unit: u64) -> Primes {
        Primes::from_params(PrimesParams {
            from,
            to,
            unit,
            min_unit_ms: 0,
        })
        .unwrap()
    }

    fn is_prime(n: u64) -> bool {
        n >= 2
            && (2..)
                .take_while(|d| d * d <= n)
                .all(|d| !n.is_multiple_of(d))
    }

    /// The campaign's total, counted by the generic local driver.
    fn solve_all(p: &Primes) -> u64 {
        let run = crate::local::run(p, &crate::local::Drive::default()).unwrap();
        u64::try_from(run.count).unwrap()
    }

    #[test]
    fn published_prime_counts() {
        // pi(10^k), published (OEIS A006880).
        assert_eq!(solve_all(&problem(0, 1_000, 100)), 168);
        assert_eq!(solve_all(&problem(0, 1_000_000, 65_537)), 78_498);
        assert_eq!(solve_all(&problem(0, 10_000_000, 1_000_000)), 664_579);
    }

    #[test]
    fn bad_params_are_rejected_by_name() {
        for (from, to, unit) in [(10, 10, 1), (0, 10, 0), (0, MAX_TO + 1, 1)] {
            let err = Primes::from_params(PrimesParams {
                from,
                to,
                unit,
                min_unit_ms: 0,
            })
            .err()
            .expect("accepted");
            assert!(err.to_string().contains("--"), "{err}");
        }
    }

    #[test]
    fn resumes_from_a_checkpoint_without_recounting() {
        let p = problem(0, 1_000_000, 1_000_000);
        let unit = p.split(None, 1).unwrap().units.remove(0);
        let first = LocalContext::stopping_after(3);
        assert_eq!(
            p.solve(&unit.payload, &first).unwrap(),
            UnitOutcome::Stopped
        );
        let cursor = first.checkpoints().last().cloned().unwrap();
        let resumed = LocalContext::resuming(cursor);
        assert_eq!(
            p.solve(&unit.payload, &resumed).unwrap(),
            UnitOutcome::Count(BigUint::from(78_498u32))
        );
    }

    #[test]
    fn garbage_payloads_are_errors_not_panics() {
        let p = problem(0, 1000, 10);
        for payload in [vec![], vec![1, 2, 3], codec::encode_u64s(&[50, 20])] {
            assert!(p.solve(&payload, &LocalContext::default()).is_err());
        }
        assert!(p.split(Some(&[9; 8]), 3).is_err());
    }

    proptest! {
        #[test]
        fn splitter_covers_the_range_exactly_once(from in 0u64..500, len in 1u64..500, unit in 1u64..60, batch in 1usize..9) {
            let p = problem(from, from + len, unit);
            let mut cursor: Option<Vec<u8>> = None;
            let mut next_expected = from;
            loop {
                let b = p.split(cursor.as_deref(), batch).unwrap();
                prop_assert!(b.units.len() <= batch);
                for u in &b.units {
                    let [s, e] = codec::decode_u64s::<2>(&u.payload, "t").unwrap();
                    prop_assert_eq!(s, next_expected);
                    prop_assert!(e > s && e - s <= unit);
                    next_expected = e;
                }
                match b.next { Some(c) => cursor = Some(c), None => break }
            }
            prop_assert_eq!(next_expected, from + len);
        }

        #[test]
        fn joined_units_count_what_their_parts_count(from in 0u64..3000, len in 1u64..3000, unit in 1u64..200, join in 1usize..40) {
            let p = problem(from, from + len, unit);
            let parts = p.split(None, usize::MAX).unwrap().units;
            let count = |payload: &[u8]| match p.solve(payload, &LocalContext::default()).unwrap() {
                UnitOutcome::Count(c) => u64::try_from(c).unwrap(),
                other => panic!("unexpected outcome {other:?}"),
            };
            let expected: u64 = parts.iter().map(|u| count(&u.payload)).sum();
            let mut joined_total = 0;
            for chunk in parts.chunks(join) {
                let joined = p.join_units(chunk).expect("consecutive ranges join");
                joined_total += count(&joined.payload);
            }
            prop_assert_eq!(joined_total, expected);
        }

        #[test]
        fn only_consecutive_ranges_join(a in 0u64..100, gap in 1u64..50) {
            let p = problem(0, 1000, 10);
            let unit = |s: u64, e: u64| UnitSpec { label: String::new(), payload: codec::encode_u64s(&[s, e]) };
            prop_assert!(p.join_units(&[unit(a, a + 10), unit(a + 10 + gap, a + 30 + gap)]).is_none());
            prop_assert!(p.join_units(&[unit(a, a + 10), unit(a + 5, a + 30)]).is_none());
            let garbage = UnitSpec { label: String::new(), payload: vec![1, 2] };
            prop_assert!(p.join_units(&[unit(a, a + 10), garbage]).is_none());
            prop_assert!(p.join_units(&[]).is_none());
        }

        #[test]
        fn unit_counts_match_trial_division(lo in 0u64..3000, len in 1u64..400) {
            let base = base_primes(isqrt(lo + len) + 1);
            let expected = (lo..lo + len).filter(|&n| is_prime(n)).count() as u64;
            prop_assert_eq!(count_primes_in(lo, lo + len, &base), expected);
        }
    }
}
