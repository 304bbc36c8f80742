//! Runs a whole exact sieve campaign in this process: every unit of the splitter on a
//! thread pool, sharing one bound. Used by tests and benchmarks; the distributed system does
//! the same through the coordinator.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rayon::prelude::*;

use super::rank_cuts::RankPool;
use super::unit::SieveUnit;
use super::work_queue::{FinishedFamily, OpenFamily, WorkQueue};

use super::Sieve;
use crate::problem::{Problem, ProblemError, Scored, SolveContext, Verification};
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
    /// Pieces units donated to threads left without work ([`super::work_queue`]).
    pub donated: u64,
}

/// Which proof a [`UnitLog`] belongs to: units are indices into the split of N under one
/// solver version, first searched against the starting score.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProofId {
    /// N.
    pub n: u32,
    /// The sieve's solver version (the split and the trees depend on it).
    pub solver: u32,
    /// Units of the split.
    pub units: usize,
    /// The starting game's score.
    pub start: i64,
}

/// A unit a proof has searched to the end.
#[derive(Clone, Debug, PartialEq)]
pub struct FinishedUnit {
    /// Its index in the split.
    pub index: usize,
    /// Its payload (checked against the split when resumed).
    pub payload: Vec<u8>,
    /// Nodes it took.
    pub nodes: u64,
    /// The best game it found above the bound it was searched against, if any.
    pub best: Option<Scored>,
}

/// Where a local proof records its finished units, so that a run that stops is resumed
/// without searching them again ([`prove_with`]; a file: [`super::journal::Journal`]).
pub trait UnitLog: Sync {
    /// Called once the split is known: checks that the log is this proof's and returns
    /// the units earlier runs finished.
    fn begin(&self, proof: &ProofId) -> Result<Vec<FinishedUnit>, ProblemError>;
    /// Records a unit just finished; an error stops the proof.
    fn finish(&self, unit: &FinishedUnit) -> Result<(), ProblemError>;
    /// The families earlier runs left open when they were asked to stop (asked after
    /// [`UnitLog::begin`]; see [`super::work_queue::OpenFamily`]). Default: none.
    fn open_families(&self) -> Vec<OpenFamily> {
        Vec::new()
    }
    /// Records a family a stop left open, to be resumed from its pieces' checkpoints. Default:
    /// forgotten (the family is searched again from its start).
    fn leave_open(&self, _family: &OpenFamily) -> Result<(), ProblemError> {
        Ok(())
    }
}

/// The shared bound and best game of a local campaign, and its ceiling (a proven upper bound
/// on the optimum: the campaign stops once a game reaches it).
struct Shared<'a> {
    bound: AtomicI64,
    best: Mutex<Option<Scored>>,
    ceiling: Option<i64>,
    /// A game found so far reaches the ceiling.
    reached: AtomicBool,
    /// Says when the proof should stop ([`ProofOptions::stop`]).
    stop: Option<&'a (dyn Fn() -> bool + Sync)>,
    /// `stop` said so.
    asked_to_stop: AtomicBool,
}

impl Shared<'_> {
    /// Whether a game found reaches the ceiling (nothing left to search). The bound alone
    /// does not say so: it starts from the probe's promise, not from a game in hand.
    fn at_ceiling(&self) -> bool {
        self.reached.load(Ordering::Relaxed)
    }
}

impl SolveContext for Shared<'_> {
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
            if self.ceiling.is_some_and(|c| found.score >= c) {
                self.reached.store(true, Ordering::Relaxed);
            }
            *best = Some(found);
        }
    }
    fn progress(&self, _nodes: u64, _fraction: Option<f64>) {}
    fn checkpoint(&self, _cursor: Vec<u8>) {}
    fn stop_requested(&self) -> bool {
        if self.at_ceiling() || self.asked_to_stop.load(Ordering::Relaxed) {
            return true;
        }
        let asked = self.stop.is_some_and(|stop| stop());
        if asked {
            self.asked_to_stop.store(true, Ordering::Relaxed);
        }
        asked
    }
}

/// Proves the optimum for 1..=n on `threads` threads (0 = rayon's default), with the
/// splitter's default number of units; every reported game is re-scored by the verifier.
pub fn prove(n: u32, threads: usize) -> Result<Proven, ProblemError> {
    prove_after(n, threads, None)
}

/// [`prove`], building on `previous`, a proven optimum of 1..=N-1 and a game reaching it, as
/// a family campaign does (see [`ProofOptions::previous`]).
pub fn prove_after(
    n: u32,
    threads: usize,
    previous: Option<(i64, &[u64])>,
) -> Result<Proven, ProblemError> {
    prove_with(
        n,
        ProofOptions {
            threads,
            previous,
            ..ProofOptions::default()
        },
    )
}

/// How [`prove_with`] runs a local proof.
#[derive(Clone, Copy, Default)]
pub struct ProofOptions<'a> {
    /// Threads (0 = rayon's default).
    pub threads: usize,
    /// A proven optimum of 1..=N-1 and a game reaching it, as a family campaign builds on
    /// ([`super::family`]): its game extended is the starting game, and the campaign ends as
    /// soon as a game reaches the ceiling ([`super::family::ceiling`]), before any search (0
    /// units, 0 nodes) when the starting game does; the result then rests on it being the
    /// optimum. A game beating the ceiling is an error: it was not the optimum of N - 1.
    pub previous: Option<(i64, &'a [u64])>,
    /// Steps per run of [`polish_start`], which first raises the starting game when it is
    /// below the ceiling (0: no polish; the records' runs use [`POLISH_STEPS`]; a game the
    /// polish brings to the ceiling closes N with 0 units, as the plain starting game does).
    /// In a family proof still below its ceiling after the polish, up to [`CHAIN_ROUNDS`]
    /// rounds of [`chain_starts`] (with as many steps) follow.
    pub polish_steps: u64,
    /// Units to split into (the splitter's default when `None`; a finer split loses less
    /// when stopped). Units donate to threads left without work
    /// ([`super::work_queue`]), so the split need not be fine to keep them busy.
    pub units: Option<u32>,
    /// Where each finished unit is recorded; the units it says earlier runs finished are
    /// skipped (their nodes and games count as if searched now). The starting game is
    /// rebuilt as before, so the resumed units see the same bound.
    pub log: Option<&'a dyn UnitLog>,
    /// Asked every few hundred nodes of each search: once it says true, every search stops
    /// at its next checkpoint, the families left open go to `log`
    /// ([`UnitLog::leave_open`]) to be resumed from their checkpoints, and the proof ends
    /// with an error saying it stopped.
    pub stop: Option<&'a (dyn Fn() -> bool + Sync)>,
    /// The solver version whose tree to search ([`Sieve::with_solver`]; the current one when
    /// `None`): a proof journaled under an earlier version is finished on its tree.
    pub solver: Option<u32>,
    /// Units also prune by cut bounds kept warm down their trees, from a branching node whose
    /// subtree took this many nodes ([`Sieve::with_node_cuts`]; the same tree, so a journal
    /// begun without them is finished with them); `None`: as campaigns do (from
    /// [`super::NODE_CUTS_FROM`] on).
    pub node_cuts: Option<u64>,
    /// With node cuts, the units' LPs also take the rank cuts of unions of two root
    /// clusters of at most this many numbers ([`super::rank_cuts`], proven once for the N
    /// on the proof's threads; they only prune, the same tree). `None`: no rank cuts.
    pub rank_union: Option<usize>,
    /// With rank cuts, also prove them in the tree, at each branching node whose subtree
    /// took this many nodes ([`Sieve::with_local_ranks`]; they only prune, the same tree).
    /// `None`: only the root's.
    pub local_ranks: Option<u64>,
    /// With a `log`, every this long the families being searched are also written to it as
    /// left open ([`UnitLog::leave_open`], from [`WorkQueue::snapshot`]), so that a run
    /// killed instead of stopped loses only the work since. `None`: only at a stop.
    pub snapshot_every: Option<std::time::Duration>,
}

/// Proves the optimum for 1..=n as `options` say (see [`ProofOptions`]).
pub fn prove_with(n: u32, options: ProofOptions) -> Result<Proven, ProblemError> {
    let ceiling = options
        .previous
        .and_then(|(value, _)| super::family::ceiling(n, value));
    let start = match options.previous {
        Some((value, moves)) => {
            let (moves, score) = super::family::extend(n, moves, value)?;
            if Some(score) == ceiling {
                return Ok(Proven {
                    score,
                    moves,
                    units: 0,
                    nodes: 0,
                    donated: 0,
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
    prove_from(n, start, ceiling, &options)
}

/// Seeds of [`polish_start`]'s neighbourhood searches (one run each, in parallel).
pub const POLISH_RUNS: u64 = 4;
/// Steps of each [`polish_start`] run in the records' proofs (about 3 s of a core at
/// N = 750).
pub const POLISH_STEPS: u64 = 3_000;

/// Rounds of [`chain_starts`] a family proof runs while its polished start is below the
/// ceiling.
pub const CHAIN_ROUNDS: u64 = 4;

/// Starting games of another lineage: [`POLISH_RUNS`] games built along a chain from
/// N - [`super::anytime::CHAIN_LENGTH`], as the anytime mode's first round builds its
/// starts ([`super::lns::chain`], seeds from `first_seed` on), each then improved by `steps`
/// neighbourhood steps, stopping early once one reaches `ceiling`; the best game found. At
/// N = 783 the polish from 782's game stayed 13 below the ceiling (the published optimum)
/// while the anytime mode reached it in 46 s. Only the incumbent changes, never the tree.
pub fn chain_starts(
    n: u32,
    steps: u64,
    ceiling: Option<i64>,
    first_seed: u64,
    pool: &rayon::ThreadPool,
) -> Result<Option<(Vec<u32>, i64)>, ProblemError> {
    let from = n.saturating_sub(super::anytime::CHAIN_LENGTH).max(1);
    let size = super::anytime::region_size(n);
    let seeds = first_seed..=first_seed + POLISH_RUNS - 1;
    best_of_runs(n, seeds, steps, ceiling, pool, &|seed, stop| {
        super::lns::chain(
            from,
            n,
            seed,
            size,
            super::anytime::REPAIR_NODES,
            200,
            super::anytime::CHAIN_STEPS,
            stop,
        )
    })
}

/// The game a run of [`best_of_runs`] starts from, given its seed and when to stop.
type StartOf<'a> = dyn Fn(u64, &dyn Fn() -> bool) -> Result<Option<Vec<u32>>, String> + Sync + 'a;

/// Starts one neighbourhood search per seed, in parallel on `pool`, from the game `start`
/// gives for it (none: the run is skipped; it may stop early when the closure it is given
/// says so), `steps` steps each, all stopping once one reaches `ceiling`; the best game.
fn best_of_runs(
    n: u32,
    seeds: std::ops::RangeInclusive<u64>,
    steps: u64,
    ceiling: Option<i64>,
    pool: &rayon::ThreadPool,
    start: &StartOf<'_>,
) -> Result<Option<(Vec<u32>, i64)>, ProblemError> {
    let reached = AtomicBool::new(false);
    let size = super::anytime::region_size(n);
    let plan = super::lns::Schedule::anytime(&size);
    let stop = || reached.load(Ordering::Relaxed);
    type Run = Result<Option<(Vec<u32>, i64)>, String>;
    let runs: Vec<Run> = pool.install(|| {
        seeds
            .into_par_iter()
            .map(|seed| {
                let Some(moves) = start(seed, &stop)? else {
                    return Ok(None);
                };
                let mut run = super::lns::Lns::new(n, &moves, seed)?;
                for _ in 0..steps {
                    if stop() {
                        break;
                    }
                    if run.tick(&plan) && ceiling.is_some_and(|c| run.best().1 >= c) {
                        reached.store(true, Ordering::Relaxed);
                    }
                }
                let (moves, score) = run.best();
                Ok(Some((moves.to_vec(), score)))
            })
            .collect()
    });
    let mut best: Option<(Vec<u32>, i64)> = None;
    for run in runs {
        if let Some(run) = run.map_err(ProblemError::Solver)? {
            if best.as_ref().is_none_or(|b| run.1 > b.1) {
                best = Some(run);
            }
        }
    }
    Ok(best)
}

/// A better starting game for an exact proof: [`POLISH_RUNS`] neighbourhood searches
/// ([`super::lns`], fixed seeds, `steps` steps each, stopping early once one reaches
/// `ceiling`) from the legal game `start`, run on `pool`; the best game found (`start`
/// itself when none is better). The proof stays exact whatever this finds: a higher
/// incumbent only prunes more (at N = 741 it lifts the campaign's own starting game, 69
/// below the optimum, to the optimum).
pub fn polish_start(
    n: u32,
    start: &[u32],
    steps: u64,
    ceiling: Option<i64>,
    pool: &rayon::ThreadPool,
) -> Result<(Vec<u32>, i64), ProblemError> {
    let best = best_of_runs(n, 1..=POLISH_RUNS, steps, ceiling, pool, &|_, _| {
        Ok(Some(start.to_vec()))
    })?;
    Ok(best.expect("at least one run"))
}

/// [`prove`] with `start` (a verified game) as the first incumbent, stopping when a game
/// reaches `ceiling`; with a polish, the better of `start` and the campaign's own starting
/// game is first raised by [`polish_start`].
fn prove_from(
    n: u32,
    start: Option<Scored>,
    ceiling: Option<i64>,
    options: &ProofOptions,
) -> Result<Proven, ProblemError> {
    let ProofOptions {
        threads,
        polish_steps,
        units,
        log,
        stop,
        solver,
        node_cuts,
        rank_union,
        local_ranks,
        snapshot_every,
        ..
    } = *options;
    let sieve = Sieve::from_params(super::SieveParams {
        units,
        ..super::SieveParams::exact(n)
    })?
    .with_solver(solver.unwrap_or(Sieve::SOLVER_VERSION))?;
    let sieve = match node_cuts {
        Some(after) => sieve.with_node_cuts(Some(after)),
        None => sieve,
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| ProblemError::Solver(e.to_string()))?;
    let sieve = match (rank_union, sieve.node_cuts()) {
        (Some(max_union), Some(_)) => {
            let ranks = pool.install(|| RankPool::at_root(n, max_union));
            let sieve = sieve.with_rank_pool(Arc::new(ranks));
            match local_ranks {
                Some(after) => sieve.with_local_ranks(after, max_union),
                None => sieve,
            }
        }
        _ => sieve,
    };
    let shared = Shared {
        bound: AtomicI64::new(sieve.initial_bound().unwrap_or(i64::MIN)),
        best: Mutex::new(None),
        ceiling,
        reached: AtomicBool::new(false),
        stop,
        asked_to_stop: AtomicBool::new(false),
    };
    if let Some(start) = start {
        sieve.score(&start.solution)?;
        shared.improve(start);
    }
    if polish_steps > 0 && !shared.at_ceiling() {
        let own = sieve.starting_game().cloned();
        let inherited = shared.best.lock().expect("poisoned").clone();
        let from = match (inherited, own) {
            (Some(i), Some(o)) if o.1 > i.score => o.0,
            (Some(i), _) => serde_json::from_value(i.solution["moves"].clone())
                .map_err(|e| ProblemError::Solver(e.to_string()))?,
            (None, Some(o)) => o.0,
            (None, None) => Vec::new(),
        };
        if !from.is_empty() {
            let (moves, score) = polish_start(n, &from, polish_steps, ceiling, &pool)?;
            let found = Scored {
                solution: super::solution(&moves, score),
                score,
            };
            sieve.score(&found.solution)?;
            shared.improve(found);
        }
        // Still below a ceiling (a family proof): starts of another lineage.
        for round in 0..CHAIN_ROUNDS {
            if ceiling.is_none() || shared.at_ceiling() {
                break;
            }
            let first_seed = 1 + round * POLISH_RUNS;
            if let Some((moves, score)) = chain_starts(n, polish_steps, ceiling, first_seed, &pool)?
            {
                let found = Scored {
                    solution: super::solution(&moves, score),
                    score,
                };
                sieve.score(&found.solution)?;
                shared.improve(found);
            }
        }
    }
    if shared.at_ceiling() {
        let best = shared.best.into_inner().expect("poisoned").expect("a game");
        return Ok(Proven {
            score: best.score,
            moves: serde_json::from_value(best.solution["moves"].clone())
                .map_err(|e| ProblemError::Solver(e.to_string()))?,
            units: 0,
            nodes: 0,
            donated: 0,
        });
    }
    let batch = sieve.split(None, usize::MAX)?;
    let (mut nodes, mut searched) = (0, 0);
    let mut done = vec![false; batch.units.len()];
    if let Some(log) = log {
        let start = shared.bound.load(Ordering::Relaxed);
        let proof = ProofId {
            n,
            solver: sieve.solver(),
            units: batch.units.len(),
            start,
        };
        for unit in log.begin(&proof)? {
            let fits = batch
                .units
                .get(unit.index)
                .is_some_and(|u| u.payload == unit.payload);
            if !fits || done[unit.index] {
                return Err(ProblemError::Solver(format!(
                    "sieve N={n}: the log's unit {} is not a unit of this split, or is \
                     there twice",
                    unit.index
                )));
            }
            done[unit.index] = true;
            nodes += unit.nodes;
            searched += 1;
            if let Some(found) = unit.best {
                // A claim above the game's real score would raise the bound and prune
                // games that beat the real one: re-scored, and refused unless equal.
                let score = sieve.score(&found.solution)?;
                if score != found.score {
                    return Err(ProblemError::Solver(format!(
                        "sieve N={n}: the log's unit {} claims {} for a game scoring {score}",
                        unit.index, found.score
                    )));
                }
                shared.improve(found);
            }
        }
    }
    let open = match log {
        Some(log) => log.open_families(),
        None => Vec::new(),
    };
    for family in &open {
        check_open(n, family, &batch.units, &done)?;
        done[family.index] = true;
        nodes += family.nodes;
        if let Some(found) = &family.best {
            let score = sieve.score(&found.solution)?;
            if score != found.score {
                return Err(ProblemError::Solver(format!(
                    "sieve N={n}: the log's open unit {} claims {} for a game scoring {score}",
                    family.index, found.score
                )));
            }
            shared.improve(found.clone());
        }
    }
    let queue = WorkQueue::resume(
        open,
        batch
            .units
            .iter()
            .enumerate()
            .filter(|(index, _)| !done[*index])
            .map(|(index, unit)| (index, unit.payload.clone()))
            .collect(),
    );
    let finished_units = AtomicU64::new(0);
    let snapshots = Snapshots::default();
    let worked = std::thread::scope(|scope| {
        if let (Some(log), Some(every)) = (log, snapshot_every) {
            let (snapshots, queue) = (&snapshots, &queue);
            scope.spawn(move || snapshots.write_every(queue, log, every));
        }
        // Ends the snapshot thread however the search ends (a panic too), so that the
        // scope never waits for it.
        let _ending = EndSnapshots(&snapshots);
        queue.run(
            &pool,
            pool.current_num_threads(),
            &|payload, ctx| sieve.solve(payload, ctx),
            &shared,
            &|family: FinishedFamily| {
                finished_units.fetch_add(1, Ordering::Relaxed);
                if let Some(found) = &family.best {
                    shared.improve(found.clone());
                }
                match log {
                    Some(log) => log.finish(&FinishedUnit {
                        index: family.index,
                        payload: batch.units[family.index].payload.clone(),
                        nodes: family.nodes,
                        best: family.best,
                    }),
                    None => Ok(()),
                }
            },
        )
    })?;
    if shared.asked_to_stop.load(Ordering::Relaxed) && !shared.at_ceiling() {
        if let Some(log) = log {
            for family in &worked.open {
                log.leave_open(family)?;
            }
        }
        return Err(ProblemError::Solver(format!(
            "sieve N={n}: stopped on request ({} units left open with their checkpoints)",
            worked.open.len()
        )));
    }
    nodes += worked.nodes;
    searched += finished_units.into_inner() as usize;
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
    if let Some(c) = ceiling.filter(|&c| score > c) {
        return Err(ProblemError::Solver(format!(
            "sieve N={n}: a game scores {score}, above the ceiling {c} that N - 1's optimum \
             gives: the value given for N - 1 is not its optimum"
        )));
    }
    let moves = serde_json::from_value(best.solution["moves"].clone())
        .map_err(|e| ProblemError::Solver(e.to_string()))?;
    Ok(Proven {
        score,
        moves,
        units: searched,
        nodes,
        donated: worked.donated,
    })
}

/// Whether a proof's threads are still searching, for the thread that writes its snapshots.
#[derive(Default)]
struct Snapshots {
    ended: Mutex<bool>,
    wake: std::sync::Condvar,
}

impl Snapshots {
    /// Writes `queue`'s snapshot to `log` every `every` until [`Snapshots::end`] (a failed
    /// write stops the proof, through the queue).
    fn write_every(&self, queue: &WorkQueue, log: &dyn UnitLog, every: std::time::Duration) {
        let mut ended = self.ended.lock().expect("poisoned");
        loop {
            ended = self
                .wake
                .wait_timeout_while(ended, every, |ended| !*ended)
                .expect("poisoned")
                .0;
            if *ended || queue.snapshot(&|family| log.leave_open(family)).is_err() {
                return;
            }
        }
    }

    /// Says that the search ended: the snapshot thread returns.
    fn end(&self) {
        *self.ended.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.wake.notify_all();
    }
}

/// Calls [`Snapshots::end`] when dropped.
struct EndSnapshots<'a>(&'a Snapshots);

impl Drop for EndSnapshots<'_> {
    fn drop(&mut self) {
        self.0.end();
    }
}

/// Checks that an open family from the log belongs to this split: its unit exists and is not
/// finished or open twice, and each piece is a subtree of the unit (with a checkpoint inside
/// the piece). A piece outside its unit would leave part of the tree unsearched.
fn check_open(
    n: u32,
    family: &OpenFamily,
    units: &[crate::problem::UnitSpec],
    done: &[bool],
) -> Result<(), ProblemError> {
    let bad = |why: String| {
        ProblemError::Solver(format!(
            "sieve N={n}: the log's open unit {}: {why}",
            family.index
        ))
    };
    let unit = units
        .get(family.index)
        .ok_or_else(|| bad("not a unit of this split".into()))?;
    if done[family.index] {
        return Err(bad("finished, or open twice".into()));
    }
    let SieveUnit::Exact { path: root, .. } = SieveUnit::decode(&unit.payload)? else {
        return Err(bad("not an exact unit".into()));
    };
    if family.pieces.is_empty() {
        return Err(bad("no open pieces".into()));
    }
    for piece in &family.pieces {
        let SieveUnit::Exact { path, .. } = SieveUnit::decode(&piece.payload)? else {
            return Err(bad("a piece is not an exact subtree".into()));
        };
        if !path.starts_with(&root) {
            return Err(bad(format!(
                "piece {path:?} lies outside the unit {root:?}"
            )));
        }
        if let Some(cursor) = &piece.cursor {
            let SieveUnit::Exact { path: at, .. } = SieveUnit::decode(cursor)? else {
                return Err(bad("a checkpoint is not an exact path".into()));
            };
            if !at.starts_with(&path) {
                return Err(bad(format!(
                    "checkpoint {at:?} lies outside its piece {path:?}"
                )));
            }
        }
    }
    Ok(())
}
