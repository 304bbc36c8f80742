//! Runs a whole campaign of any problem in this process, one unit at a time, the way the
//! coordinator and its workers would: split (stage by stage, with the incumbent), solve each
//! unit with the campaign's bound, verify every claim (scores, samples, proof-mode hits,
//! follow-up units, donations), and optionally interrupt units at their checkpoints and
//! resume them, accept donations, or join each split batch. Tests use it to check a problem
//! end to end without a cluster ([`crate::conformance`] runs every registry entry through
//! it); it knows no problem.

use num_bigint::BigUint;
use serde_json::Value;
use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::Mutex;

use crate::problem::{
    Objective, Problem, ProblemError, Scored, SolveContext, UnitOutcome, UnitSpec,
};

/// How to drive a campaign.
#[derive(Clone, Debug)]
pub struct Drive {
    /// Units asked of the splitter at a time.
    pub batch: usize,
    /// Stop every unit once it has taken this many checkpoints, and resume it from the last
    /// one (again and again until it finishes); `None` runs every unit straight.
    pub interrupt_after: Option<usize>,
    /// Donations to ask running units for (each one is checked with
    /// [`crate::problem::Units::check_donation`] and its units queued); 0 asks for none.
    pub donations: usize,
    /// Join each split batch into one unit when the problem can
    /// ([`crate::problem::Units::join_units`]).
    pub join: bool,
    /// Most units solved (split, donated or expanded), and most split batches, before the
    /// run is refused as endless.
    pub max_units: usize,
    /// Most times a unit may be stopped and resumed before the run is refused as stuck.
    pub max_resumes: usize,
    /// End the run after this many stages (split batches, each solved whole), for
    /// campaigns that go on and on; `None` runs until the splitter is exhausted.
    pub max_stages: Option<usize>,
}

impl Default for Drive {
    fn default() -> Self {
        Drive {
            batch: 16,
            interrupt_after: None,
            donations: 0,
            join: false,
            max_units: 100_000,
            max_resumes: 100_000,
            max_stages: None,
        }
    }
}

/// What a local campaign produced; every solution, sample and hit in it was verified.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Run {
    /// The best solution (optimisation), with its verified score.
    pub best: Option<Scored>,
    /// The best score after each stage (one split batch, solved whole; each split after
    /// the first sees the incumbent).
    pub stage_bests: Vec<Option<i64>>,
    /// The total (count objective).
    pub count: BigUint,
    /// The samples (sample objective), in the order units produced them.
    pub samples: Vec<Value>,
    /// Proof-mode hits (optimisation with a target), in the order units produced them.
    pub hits: Vec<Value>,
    /// Split cursors the problem marked as stage boundaries
    /// ([`Problem::waits_at`]).
    pub waits: usize,
    /// Units solved to the end.
    pub units: usize,
    /// Times a unit was stopped at a checkpoint and resumed.
    pub resumes: usize,
    /// Donations accepted.
    pub donations: usize,
    /// Follow-up units accepted from expansions.
    pub children: usize,
    /// Split batches joined into one unit.
    pub joins: usize,
}

/// Runs the campaign of `problem` as `drive` says. Errors name what went wrong: a problem
/// error, a claim the problem's own verifier refuses, or a run that does not end.
pub fn run(problem: &dyn Problem, drive: &Drive) -> Result<Run, ProblemError> {
    let mut campaign = Campaign {
        problem,
        drive,
        objective: problem.objective(),
        run: Run::default(),
        pending: VecDeque::new(),
        children: BTreeMap::new(),
        seen: HashSet::new(),
        sequence: 0,
    };
    let mut cursor: Option<Vec<u8>> = None;
    let mut split_once = false;
    let mut splits = 0usize;
    loop {
        while let Some(payload) = campaign.next_unit() {
            campaign.solve(payload)?;
        }
        // Every unit created so far has finished: a stage boundary is passed here.
        if split_once {
            let best = campaign.run.best.as_ref().map(|b| b.score);
            campaign.run.stage_bests.push(best);
            let stages = campaign.run.stage_bests.len();
            if cursor.is_none() || drive.max_stages.is_some_and(|most| stages >= most) {
                return Ok(campaign.run);
            }
        }
        splits += 1;
        if splits > drive.max_units {
            return Err(ProblemError::Solver(format!(
                "the splitter did not end within {} batches",
                drive.max_units
            )));
        }
        let incumbent = campaign.run.best.as_ref().map(|b| b.solution.clone());
        let batch = problem.split_from(cursor.as_deref(), drive.batch, incumbent.as_ref())?;
        if batch.units.len() > drive.batch {
            return Err(ProblemError::Solver(format!(
                "the splitter made {} units when asked for {}",
                batch.units.len(),
                drive.batch
            )));
        }
        if batch.units.is_empty() && batch.next.is_some() && batch.next == cursor {
            return Err(ProblemError::Solver(
                "the splitter makes no progress: same cursor, no units".into(),
            ));
        }
        split_once = true;
        cursor = batch.next;
        if cursor.as_deref().is_some_and(|c| problem.waits_at(c)) {
            campaign.run.waits += 1;
        }
        let joined = match drive.join && batch.units.len() > 1 {
            true => problem.join_units(&batch.units),
            false => None,
        };
        match joined {
            Some(unit) => {
                campaign.run.joins += 1;
                campaign.pending.push_back(unit.payload);
            }
            None => campaign
                .pending
                .extend(batch.units.into_iter().map(|u| u.payload)),
        }
    }
}

/// A campaign's state while it runs.
struct Campaign<'a> {
    problem: &'a dyn Problem,
    drive: &'a Drive,
    objective: Objective,
    run: Run,
    /// Units from the splitter and from donations, in order.
    pending: VecDeque<Vec<u8>>,
    /// Follow-up units by (priority, arrival), granted lowest first after the others.
    children: BTreeMap<(i64, u64), Vec<u8>>,
    /// Payloads of every follow-up unit seen (repeats are dropped, as the coordinator does).
    seen: HashSet<Vec<u8>>,
    sequence: u64,
}

impl Campaign<'_> {
    fn next_unit(&mut self) -> Option<Vec<u8>> {
        self.pending.pop_front().or_else(|| {
            let key = *self.children.keys().next()?;
            self.children.remove(&key)
        })
    }

    /// The bound units prune with: the incumbent's score, else the problem's initial bound.
    fn bound(&self) -> Option<i64> {
        match &self.run.best {
            Some(best) => Some(best.score),
            None => self.problem.initial_bound(),
        }
    }

    /// Verifies a claimed solution and keeps it when it improves the incumbent.
    fn offer(&mut self, found: Scored) -> Result<(), ProblemError> {
        let verified = self.problem.score(&found.solution)?;
        if verified != found.score {
            return Err(ProblemError::InvalidSolution(format!(
                "claimed score {} but the verifier says {verified}: {}",
                found.score, found.solution
            )));
        }
        let incumbent = self.run.best.as_ref().map(|b| b.score);
        if self.objective.improves(verified, incumbent) {
            self.run.best = Some(found);
        }
        Ok(())
    }

    /// Solves one unit to the end, resuming it after every interruption.
    fn solve(&mut self, mut payload: Vec<u8>) -> Result<(), ProblemError> {
        if self.run.units >= self.drive.max_units {
            return Err(ProblemError::Solver(format!(
                "the campaign did not end within {} units",
                self.drive.max_units
            )));
        }
        let mut resume: Option<Vec<u8>> = None;
        let mut resumes = 0usize;
        loop {
            let ctx = UnitContext {
                resume: resume.clone(),
                bound: self.bound(),
                stop_after: self.drive.interrupt_after,
                wants_donation: self.run.donations < self.drive.donations,
                payload: payload.clone(),
                problem: self.problem,
                state: Mutex::default(),
            };
            let outcome = self.problem.solve(&payload, &ctx)?;
            let state = ctx.state.into_inner().expect("poisoned");
            if let Some(refused) = state.refused {
                return Err(refused);
            }
            for found in state.improvements {
                self.offer(found)?;
            }
            let donated = !state.donated.is_empty();
            self.run.donations += state.donated.len();
            for (units, remaining) in state.donated {
                self.pending.extend(units.into_iter().map(|u| u.payload));
                payload = remaining;
            }
            match outcome {
                UnitOutcome::Stopped => {
                    resumes += 1;
                    if resumes > self.drive.max_resumes {
                        return Err(ProblemError::Solver(format!(
                            "a unit stopped {resumes} times without finishing"
                        )));
                    }
                    self.run.resumes += 1;
                    // The last checkpoint, else where this leg started; after a donation
                    // without a checkpoint since, what the unit kept starts over.
                    match state.checkpoints.into_iter().last() {
                        Some(last) => resume = Some(last),
                        None if donated => resume = None,
                        None => {}
                    }
                    continue;
                }
                UnitOutcome::Count(count) => self.run.count += count,
                UnitOutcome::Searched { best, hits } => {
                    if let Some(best) = best {
                        self.offer(best)?;
                    }
                    for hit in &hits {
                        self.problem.verify_sample(hit)?;
                    }
                    self.run.hits.extend(hits);
                }
                UnitOutcome::Samples(samples) => {
                    for sample in &samples {
                        self.problem.verify_sample(sample)?;
                    }
                    self.run.samples.extend(samples);
                }
                UnitOutcome::Expanded { best, children } => {
                    if let Some(best) = best {
                        self.offer(best)?;
                    }
                    for child in children {
                        let priority = self.problem.child_priority(&payload, &child.payload)?;
                        if self.seen.insert(child.payload.clone()) {
                            self.sequence += 1;
                            self.children
                                .insert((priority, self.sequence), child.payload);
                            self.run.children += 1;
                        }
                    }
                }
            }
            self.run.units += 1;
            return Ok(());
        }
    }
}

/// What one leg of a unit's solve reported.
#[derive(Default)]
struct Reported {
    improvements: Vec<Scored>,
    checkpoints: Vec<Vec<u8>>,
    /// Accepted donations: the units handed back and what the solve kept.
    donated: Vec<(Vec<UnitSpec>, Vec<u8>)>,
    /// A donation the problem's own check refused (the solve is then at fault).
    refused: Option<ProblemError>,
}

/// The context of one leg of a unit's solve.
struct UnitContext<'a> {
    resume: Option<Vec<u8>>,
    bound: Option<i64>,
    stop_after: Option<usize>,
    wants_donation: bool,
    /// What the unit covered when this leg started.
    payload: Vec<u8>,
    problem: &'a dyn Problem,
    state: Mutex<Reported>,
}

impl UnitContext<'_> {
    fn state(&self) -> std::sync::MutexGuard<'_, Reported> {
        self.state.lock().expect("poisoned")
    }
}

impl SolveContext for UnitContext<'_> {
    fn resume_cursor(&self) -> Option<&[u8]> {
        self.resume.as_deref()
    }
    fn bound(&self) -> Option<i64> {
        let found = self
            .state()
            .improvements
            .iter()
            .map(|s| s.score)
            .collect::<Vec<_>>();
        let objective = self.problem.objective();
        found.into_iter().fold(self.bound, |bound, score| {
            match objective.improves(score, bound) {
                true => Some(score),
                false => bound,
            }
        })
    }
    fn improve(&self, found: Scored) {
        self.state().improvements.push(found);
    }
    fn progress(&self, _nodes: u64, _fraction: Option<f64>) {}
    fn checkpoint(&self, cursor: Vec<u8>) {
        self.state().checkpoints.push(cursor);
    }
    fn stop_requested(&self) -> bool {
        self.stop_after
            .is_some_and(|limit| self.state().checkpoints.len() >= limit)
    }
    fn split_requested(&self) -> bool {
        let state = self.state();
        self.wants_donation && state.donated.is_empty() && state.refused.is_none()
    }
    fn donate(&self, units: Vec<UnitSpec>, remaining: Vec<u8>) -> bool {
        let mut state = self.state();
        if !self.wants_donation || !state.donated.is_empty() || state.refused.is_some() {
            return false;
        }
        // One donation per leg: it is checked against the payload the leg started with.
        let donated: Vec<Vec<u8>> = units.iter().map(|u| u.payload.clone()).collect();
        match self
            .problem
            .check_donation(&self.payload, &remaining, &donated, self.bound)
        {
            Ok(()) => {
                // Checkpoints taken so far resume the unit as it was before the donation.
                state.checkpoints.clear();
                state.donated.push((units, remaining));
                true
            }
            Err(e) => {
                state.refused = Some(ProblemError::InvalidUnit(format!(
                    "a donation the problem's own check refuses: {e}"
                )));
                false
            }
        }
    }
}
