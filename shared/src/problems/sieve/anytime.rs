//! The anytime mode's campaign (`--heuristic`): rounds of neighbourhood-search units.
//!
//! Round 0 has `--units` units; each builds its own start along a chain from a smaller N
//! ([`lns::chain`]) and improves it. Every later round starts all its units from the
//! campaign's incumbent (carried in the payload) with other seeds; the splitter waits at
//! the end of each round for its results. The campaign ends after [`IDLE_ROUNDS`] rounds in
//! a row without a better game (or when `grind run --seconds` stops it).
//!
//! A unit's work is a number of steps fixed in its payload, not a time: a unit is a
//! function of its payload, so replicas agree. `--unit-seconds S` sets that number from a
//! measured rate ([`steps_for`]): about S seconds of one core.

use super::lns::{self, Lns};
use super::unit::SieveUnit;
use super::{solution, Game};
use crate::problem::{ProblemError, Scored, SolveContext, SplitBatch, UnitOutcome, UnitSpec};
use crate::rng::{Random, XorShift64Star};

/// Rounds in a row without improvement after which a campaign ends.
pub const IDLE_ROUNDS: u32 = 3;
/// Most numbers in a destroyed region (steps and chains alike; see [`region_size`]).
pub const MAX_REGION: usize = 300;
/// Branch-and-bound nodes a repair may spend.
pub const REPAIR_NODES: u64 = 2_000;
/// Steps between kicks of a unit's iterated local search ([`lns::Schedule`]).
pub const KICK_EVERY: u64 = 64;
/// Points a kick may lose.
pub const KICK_SLACK: i64 = 60;
/// Pairs a kick forbids.
pub const KICK_PAIRS: usize = 2;
/// How far below N a round-0 chain starts.
pub const CHAIN_LENGTH: u32 = 50;
/// Repair steps around m for each m of the chain.
pub const CHAIN_STEPS: u64 = 4;

/// Numbers in a destroyed region at N: a third of them, at least 40, at most
/// [`MAX_REGION`] (regions of 300 reach better games at N = 1000 than a mix of 40 to 160
/// did; a region of every number makes each step a whole exact search at small N).
pub fn region_size(n: u32) -> usize {
    (n as usize / 3).clamp(40, MAX_REGION)
}

/// Steps of about `seconds` of one core at N: a step costs about c * N microseconds (a
/// repair rebuilds the restricted matching and searches up to [`REPAIR_NODES`] nodes of
/// O(N) each), with c measured on the development machine (see BENCHMARKS.md).
pub fn steps_for(n: u32, seconds: u32) -> u64 {
    let micros_per_step = (u64::from(n.max(1)) * 3).max(50);
    (u64::from(seconds) * 1_000_000 / micros_per_step).max(1)
}

/// The anytime campaign's shape.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// N.
    pub n: u32,
    /// Units a round.
    pub units: u32,
    /// Steps a unit.
    pub steps: u64,
}

/// Where the splitter is: the round, the next unit of it, rounds in a row without a better
/// game, and the incumbent's score when the round began.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Cursor {
    round: u32,
    next: u32,
    idle: u32,
    best: i64,
}

impl Cursor {
    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(20);
        out.extend_from_slice(&self.round.to_le_bytes());
        out.extend_from_slice(&self.next.to_le_bytes());
        out.extend_from_slice(&self.idle.to_le_bytes());
        out.extend_from_slice(&self.best.to_le_bytes());
        out
    }

    fn decode(bytes: &[u8]) -> Result<Cursor, ProblemError> {
        let bad = || ProblemError::InvalidUnit("sieve: heuristic split cursor".into());
        if bytes.len() != 20 {
            return Err(bad());
        }
        let word = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().expect("4 bytes"));
        Ok(Cursor {
            round: word(0),
            next: word(4),
            idle: word(8),
            best: i64::from_le_bytes(bytes[12..20].try_into().expect("8 bytes")),
        })
    }
}

/// The seed of unit `index` of `round`.
fn seed_of(round: u32, index: u32) -> u64 {
    XorShift64Star::new((u64::from(round) << 32) | u64::from(index)).next_u64()
}

impl Plan {
    /// True at a round boundary: the next round needs every result of this one.
    pub fn waits_at(&self, cursor: &[u8]) -> bool {
        Cursor::decode(cursor).is_ok_and(|c| c.next >= self.units)
    }

    /// The next units: the rest of the current round, or the next round from `incumbent`
    /// (the campaign's best game), or nothing once the campaign has gone idle.
    pub fn split_from(
        &self,
        cursor: Option<&[u8]>,
        max_units: usize,
        incumbent: Option<&Game>,
    ) -> Result<SplitBatch, ProblemError> {
        let score = incumbent.map_or(i64::MIN, |g| g.1);
        let mut cursor = match cursor.map(Cursor::decode).transpose()? {
            None => Cursor {
                round: 0,
                next: 0,
                idle: 0,
                best: i64::MIN,
            },
            Some(c) if c.next < self.units => c,
            Some(c) => {
                let idle = if score > c.best { 0 } else { c.idle + 1 };
                if idle >= IDLE_ROUNDS || c.round == u32::MAX {
                    return Ok(SplitBatch {
                        units: Vec::new(),
                        next: None,
                    });
                }
                Cursor {
                    round: c.round + 1,
                    next: 0,
                    idle,
                    best: score,
                }
            }
        };
        let start: Vec<u32> = match (cursor.round, incumbent) {
            (0, _) | (_, None) => Vec::new(),
            (_, Some((moves, _))) => moves.clone(),
        };
        let mut units = Vec::new();
        while units.len() < max_units.max(1) && cursor.next < self.units {
            let unit = SieveUnit::Heuristic {
                round: cursor.round,
                seed: seed_of(cursor.round, cursor.next),
                steps: self.steps,
                start: start.clone(),
            };
            units.push(UnitSpec {
                label: unit.label(),
                payload: unit.encode(),
            });
            cursor.next += 1;
        }
        Ok(SplitBatch {
            units,
            next: Some(cursor.encode()),
        })
    }

    /// Runs one unit: from `start` (or, when empty, a chain start), `steps` steps.
    pub fn solve(
        &self,
        seed: u64,
        steps: u64,
        start: &[u32],
        ctx: &dyn SolveContext,
    ) -> Result<UnitOutcome, ProblemError> {
        let n = self.n;
        let moves = if start.is_empty() {
            let from = n.saturating_sub(CHAIN_LENGTH).max(1);
            let stop = || ctx.stop_requested();
            let built = lns::chain(
                from,
                n,
                seed,
                region_size(n),
                REPAIR_NODES,
                200,
                CHAIN_STEPS,
                &stop,
            )
            .map_err(ProblemError::Solver)?;
            match built {
                Some(moves) => moves,
                None => return Ok(UnitOutcome::Stopped),
            }
        } else {
            start.to_vec()
        };
        let mut run = Lns::new(n, &moves, seed)
            .map_err(|e| ProblemError::InvalidUnit(format!("sieve: starting game: {e}")))?;
        let report = |run: &Lns| {
            let (moves, score) = run.best();
            if ctx.bound().is_none_or(|b| score > b) {
                ctx.improve(Scored {
                    solution: solution(moves, score),
                    score,
                });
            }
        };
        report(&run);
        let size = region_size(n);
        let plan = lns::Schedule::anytime(&size);
        for step in 0..steps {
            if step % 32 == 0 {
                if ctx.stop_requested() {
                    return Ok(UnitOutcome::Stopped);
                }
                ctx.progress(step, Some(step as f64 / steps as f64));
            }
            if run.tick(&plan) {
                report(&run);
            }
        }
        ctx.progress(steps, Some(1.0));
        let (moves, score) = run.best();
        Ok(UnitOutcome::Searched {
            best: Some(Scored {
                solution: solution(moves, score),
                score,
            }),
            hits: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(batch: &SplitBatch) -> Vec<SieveUnit> {
        batch
            .units
            .iter()
            .map(|u| SieveUnit::decode(&u.payload).unwrap())
            .collect()
    }

    #[test]
    fn rounds_start_from_the_incumbent_and_end_when_idle() {
        let plan = Plan {
            n: 30,
            units: 3,
            steps: 5,
        };
        // Round 0: three units that build their own starts, then a round boundary.
        let first = plan.split_from(None, 2, None).unwrap();
        assert_eq!(first.units.len(), 2);
        let cursor = first.next.clone().unwrap();
        assert!(!plan.waits_at(&cursor));
        let rest = plan.split_from(Some(&cursor), 10, None).unwrap();
        assert_eq!(rest.units.len(), 1);
        let boundary = rest.next.clone().unwrap();
        assert!(plan.waits_at(&boundary));
        let mut seeds: Vec<u64> = decoded(&first)
            .into_iter()
            .chain(decoded(&rest))
            .map(|u| match u {
                SieveUnit::Heuristic {
                    round: 0,
                    seed,
                    steps: 5,
                    start,
                } if start.is_empty() => seed,
                other => panic!("{other:?}"),
            })
            .collect();
        seeds.dedup();
        assert_eq!(seeds.len(), 3);
        // Round 1 starts every unit from the incumbent.
        let game: Game = (vec![29, 25, 27, 22, 26, 28, 20, 30, 18, 24], 249);
        let round1 = plan.split_from(Some(&boundary), 10, Some(&game)).unwrap();
        for unit in decoded(&round1) {
            assert!(
                matches!(&unit, SieveUnit::Heuristic { round: 1, start, .. } if *start == game.0)
            );
        }
        // Three rounds in a row without a better incumbent end the campaign.
        let mut cursor = round1.next.unwrap();
        for round in 2..=3 {
            let batch = plan.split_from(Some(&cursor), 10, Some(&game)).unwrap();
            assert_eq!(batch.units.len(), 3, "round {round}");
            cursor = batch.next.unwrap();
        }
        let end = plan.split_from(Some(&cursor), 10, Some(&game)).unwrap();
        assert!(end.units.is_empty() && end.next.is_none());
        assert!(plan.split_from(Some(&[1, 2, 3]), 10, None).is_err());
    }
}
