//! Runs a whole exact sieve campaign in this process: every unit of the splitter on a
//! thread pool, sharing one bound. Used by tests and benchmarks; the distributed system does
//! the same through the coordinator.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;

use rayon::prelude::*;

use super::Sieve;
use crate::problem::{Problem, ProblemError, Scored, SolveContext, UnitOutcome};
use crate::registry::ProblemDef;

/// A proven optimum: its score, a game reaching it, and the work it took.
#[derive(Clone, Debug)]
pub struct Proven {
    /// The optimum.
    pub score: i64,
    /// An optimal game, in play order.
    pub moves: Vec<u64>,
    /// Units searched.
    pub units: usize,
    /// Search nodes evaluated over all units.
    pub nodes: u64,
}

/// The shared bound and best game of a local campaign.
struct Shared {
    bound: AtomicI64,
    best: Mutex<Option<Scored>>,
}

impl SolveContext for Shared {
    fn resume_cursor(&self) -> Option<&[u8]> {
        None
    }
    fn bound(&self) -> Option<i64> {
        Some(self.bound.load(Ordering::Relaxed))
    }
    fn improve(&self, found: Scored) {
        let mut best = self.best.lock().expect("poisoned");
        if best.as_ref().is_none_or(|b| found.score > b.score) {
            self.bound.fetch_max(found.score, Ordering::Relaxed);
            *best = Some(found);
        }
    }
    fn progress(&self, _nodes: u64, _fraction: Option<f64>) {}
    fn checkpoint(&self, _cursor: Vec<u8>) {}
    fn stop_requested(&self) -> bool {
        false
    }
}

/// One unit's view of the shared context: counts the unit's nodes.
struct UnitContext<'a> {
    shared: &'a Shared,
    nodes: AtomicU64,
}

impl SolveContext for UnitContext<'_> {
    fn resume_cursor(&self) -> Option<&[u8]> {
        None
    }
    fn bound(&self) -> Option<i64> {
        self.shared.bound()
    }
    fn improve(&self, found: Scored) {
        self.shared.improve(found);
    }
    fn progress(&self, nodes: u64, _fraction: Option<f64>) {
        self.nodes.store(nodes, Ordering::Relaxed);
    }
    fn checkpoint(&self, _cursor: Vec<u8>) {}
    fn stop_requested(&self) -> bool {
        false
    }
}

/// Proves the optimum for 1..=n on `threads` threads (0 = rayon's default), with the
/// splitter's default number of units; every reported game is re-scored by the verifier.
pub fn prove(n: u32, threads: usize) -> Result<Proven, ProblemError> {
    prove_after(n, threads, None)
}

/// [`prove`], building on `previous`, a proven optimum of 1..=N-1 and a game reaching it, as
/// a family campaign does ([`super::family`]): its game extended is the starting game, and
/// when that reaches the ceiling ([`super::family::ceiling`]) it is optimal without any search (0 units,
/// 0 nodes; the result then rests on `previous` being the optimum).
pub fn prove_after(
    n: u32,
    threads: usize,
    previous: Option<(i64, &[u64])>,
) -> Result<Proven, ProblemError> {
    let start = match previous {
        Some((value, moves)) => {
            let (moves, score) = super::family::extend(n, moves, value)?;
            if Some(score) == super::family::ceiling(n, value) {
                return Ok(Proven {
                    score,
                    moves,
                    units: 0,
                    nodes: 0,
                });
            }
            Some(Scored {
                solution: super::solution(
                    &moves.iter().map(|&m| m as u32).collect::<Vec<_>>(),
                    score,
                ),
                score,
            })
        }
        None => None,
    };
    prove_from(n, threads, start)
}

/// [`prove`] with `start` (a verified game) as the first incumbent.
fn prove_from(n: u32, threads: usize, start: Option<Scored>) -> Result<Proven, ProblemError> {
    let sieve = Sieve::from_params(super::SieveParams {
        n: Some(n),
        n_from: None,
        n_to: None,
        heuristic: false,
        unit_seconds: None,
        units: None,
        independent: false,
    })?;
    let batch = sieve.split(None, usize::MAX)?;
    let shared = Shared {
        bound: AtomicI64::new(sieve.initial_bound().unwrap_or(i64::MIN)),
        best: Mutex::new(None),
    };
    if let Some(start) = start {
        sieve.score(&start.solution)?;
        shared.improve(start);
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| ProblemError::Solver(e.to_string()))?;
    let outcomes: Vec<(Result<UnitOutcome, ProblemError>, u64)> = pool.install(|| {
        batch
            .units
            .par_iter()
            .map(|unit| {
                let ctx = UnitContext {
                    shared: &shared,
                    nodes: AtomicU64::new(0),
                };
                let outcome = sieve.solve(&unit.payload, &ctx);
                (outcome, ctx.nodes.load(Ordering::Relaxed))
            })
            .collect()
    });
    let mut nodes = 0;
    for (outcome, unit_nodes) in outcomes {
        nodes += unit_nodes;
        if let UnitOutcome::Searched {
            best: Some(found), ..
        } = outcome?
        {
            shared.improve(found);
        }
    }
    let best = shared
        .best
        .into_inner()
        .expect("poisoned")
        .ok_or_else(|| ProblemError::Solver(format!("sieve N={n}: no game found")))?;
    let score = sieve.score(&best.solution)?;
    if score != best.score {
        return Err(ProblemError::Solver(format!(
            "sieve N={n}: claimed {} but the game scores {score}",
            best.score
        )));
    }
    let moves = serde_json::from_value(best.solution["moves"].clone())
        .map_err(|e| ProblemError::Solver(e.to_string()))?;
    Ok(Proven {
        score,
        moves,
        units: batch.units.len(),
        nodes,
    })
}
