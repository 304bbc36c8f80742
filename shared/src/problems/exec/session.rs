//! One solver run seen from grind: protocol events become [`SolveContext`] calls, and the
//! run's end becomes the unit's outcome and its provenance record.
//!
//! | solver prints | grind does |
//! |---|---|
//! | a complete model (`o` + `v` lines) | `ctx.improve` at once, when its claimed cost beats the bound the unit knows (the campaign's best, this unit's own finds included); the coordinator runs the checker; the cost is listed in the provenance (`improvements.costs`, the latest 64) |
//! | `g progress f` | `ctx.progress(0, Some(f))` |
//! | `g count n` | the unit's count (the last one printed) |
//! | `g checkpoint` | packs `$GRIND_CHECKPOINT_DIR` into `ctx.checkpoint` |
//! | `s ...` | recorded as the solver's claim (provenance), nothing more |
//! | `c ...`, diagnostics | counted; the first diagnostics go into provenance |
//!
//! A model of one line is passed on as soon as it is complete (a line ending in `\n` is
//! whole): at the next `o` or `s` line, or when the output goes quiet after it
//! (`grind_exec::protocol::Parser::flush`). A model of several lines waits for the next
//! event, which shows the solver was not cut off in the middle of it; the last one, when
//! completed only by the end of output of a solver that died of a signal, may have been cut
//! between its lines and is withheld (`last_solution_cut_by_kill` in the provenance). A
//! model extended after a quiet pause (more `v` lines for the same `o`) is passed on again
//! whole.

use num_bigint::BigUint;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::path::PathBuf;

use grind_exec::process::{ExitKind, StopReason};
use grind_exec::protocol::{Event, Solution, Status};
use grind_exec::runner::RunOutcome;

use super::attached::Attachment;
use super::checkpoint::{self, Packed};
use super::params::{Config, ExecObjective};
use super::solution;
use crate::problem::{ProblemError, Scored, SolveContext, UnitOutcome};

/// Diagnostics kept for the provenance record.
const KEPT_DIAGNOSTICS: usize = 5;
/// Reported costs kept for the provenance record (the latest).
const KEPT_COSTS: usize = 64;
/// Bytes of the solver's stderr tail kept for provenance and errors.
const STDERR_TAIL: usize = 4096;

/// What the run was started with.
pub struct Setup {
    /// The unit's label.
    pub unit: String,
    /// The solver variant run.
    pub variant: Attachment,
    /// The program inside the bundle.
    pub entry: String,
    /// The solver's checkpoint directory.
    pub checkpoint_dir: PathBuf,
    /// The unit resumed from a checkpoint.
    pub resumed: bool,
}

/// The state of one run.
pub struct Session<'a> {
    config: &'a Config,
    ctx: &'a dyn SolveContext,
    setup: Setup,
    /// A model not yet known to be complete beyond doubt.
    pending: Option<Solution>,
    best: Option<Scored>,
    /// The cost and model last reported.
    last_reported: Option<(i64, String)>,
    reported: u64,
    /// The costs reported, in order (the latest [`KEPT_COSTS`]).
    reported_costs: VecDeque<i64>,
    not_better: u64,
    models_in_count_campaign: u64,
    withheld: Option<String>,
    last_cost: Option<i64>,
    status: Option<Status>,
    count: Option<BigUint>,
    comments: u64,
    diagnostics: Vec<String>,
    shipped: Option<Vec<u8>>,
    checkpoints_shipped: u64,
    checkpoint_notes: Vec<String>,
    bound_errors: Vec<String>,
    /// The bound feed's last value and the `b` lines dropped (stdin full).
    bound_feed: Option<(Option<i64>, u64)>,
    stop_requested: bool,
}

impl<'a> Session<'a> {
    /// A session for a run of `config` reporting to `ctx`.
    pub fn new(config: &'a Config, ctx: &'a dyn SolveContext, setup: Setup) -> Session<'a> {
        Session {
            config,
            ctx,
            setup,
            pending: None,
            best: None,
            last_reported: None,
            reported: 0,
            reported_costs: VecDeque::new(),
            not_better: 0,
            models_in_count_campaign: 0,
            withheld: None,
            last_cost: None,
            status: None,
            count: None,
            comments: 0,
            diagnostics: Vec::new(),
            shipped: None,
            checkpoints_shipped: 0,
            checkpoint_notes: Vec::new(),
            bound_errors: Vec::new(),
            bound_feed: None,
            stop_requested: false,
        }
    }

    /// Handles one event of the solver's output.
    pub fn handle(&mut self, event: Event) {
        if let Event::Solution(s) = event {
            return self.solution(s);
        }
        if let Some(complete) = self.pending.take() {
            self.offer(complete);
        }
        match event {
            Event::Solution(_) => {}
            Event::Cost(c) => self.last_cost = Some(c),
            Event::Status(s) => self.status = Some(s),
            Event::Progress(f) => self.ctx.progress(0, Some(f)),
            Event::Count(n) => self.count = Some(n),
            Event::Checkpoint => self.ship_checkpoint(),
            Event::Comment(_) => self.comments += 1,
            Event::Diagnostic(d) => {
                if self.diagnostics.len() < KEPT_DIAGNOSTICS {
                    self.diagnostics.push(d.to_string());
                }
            }
        }
    }

    /// Records that the bound could not be written.
    pub fn note_bound_error(&mut self, error: String) {
        if self.bound_errors.len() < KEPT_DIAGNOSTICS {
            self.bound_errors.push(error);
        }
    }

    /// Records the bound feed's last value and how many `b` lines were dropped.
    pub fn note_bound_feed(&mut self, last: Option<i64>, dropped_lines: u64) {
        self.bound_feed = Some((last, dropped_lines));
    }

    /// Records that grind asked the solver to stop.
    pub fn note_stop_requested(&mut self) {
        self.stop_requested = true;
    }

    /// A complete model: one line is whole and goes out at once; a longer one waits for the
    /// next event (or the end, see [`Session::finish`]), and is replaced by an extension of
    /// itself (the same `o`, more lines after a quiet pause).
    fn solution(&mut self, found: Solution) {
        if let Some(pending) = self.pending.take() {
            let extends = pending.claimed == found.claimed && found.text.starts_with(&pending.text);
            if !extends {
                self.offer(pending);
            }
        }
        if found.text.lines().count() <= 1 {
            self.offer(found);
        } else {
            self.pending = Some(found);
        }
    }

    /// Reports a complete model when it beats what the unit knows (or extends the model it
    /// last reported, with the same cost).
    fn offer(&mut self, found: Solution) {
        let objective = self.config.params.objective.objective();
        if self.config.params.objective == ExecObjective::Count {
            self.models_in_count_campaign += 1;
            return;
        }
        let extension = self.last_reported.as_ref().is_some_and(|(cost, text)| {
            *cost == found.claimed && found.text.starts_with(text.as_str())
        });
        if !extension && !objective.improves(found.claimed, self.ctx.bound()) {
            self.not_better += 1;
            return;
        }
        let scored = Scored {
            solution: solution::document(&found.text),
            score: found.claimed,
        };
        self.last_reported = Some((found.claimed, found.text));
        self.reported += 1;
        if self.reported_costs.len() == KEPT_COSTS {
            self.reported_costs.pop_front();
        }
        self.reported_costs.push_back(found.claimed);
        self.ctx.improve(scored.clone());
        if extension || objective.improves(scored.score, self.best.as_ref().map(|b| b.score)) {
            self.best = Some(scored);
        }
    }

    fn ship_checkpoint(&mut self) {
        match checkpoint::pack(&self.setup.checkpoint_dir) {
            Packed::Cursor(bytes) => {
                if self.shipped.as_ref() != Some(&bytes) {
                    self.ctx.checkpoint(bytes.clone());
                    self.shipped = Some(bytes);
                    self.checkpoints_shipped += 1;
                }
            }
            Packed::Empty => {
                self.note_checkpoint("`g checkpoint` with an empty checkpoint directory")
            }
            Packed::Skipped(why) => self.note_checkpoint(&why),
        }
    }

    fn note_checkpoint(&mut self, note: &str) {
        if self.checkpoint_notes.len() < KEPT_DIAGNOSTICS {
            self.checkpoint_notes.push(note.to_string());
        }
    }

    /// The unit's outcome once the run has ended; the provenance record is reported first.
    pub fn finish(mut self, outcome: RunOutcome) -> Result<UnitOutcome, ProblemError> {
        if let Some(last) = self.pending.take() {
            if outcome.last_solution_cut_by_kill && last.text.lines().count() > 1 {
                self.withheld = Some(format!(
                    "the last model ({} lines, claimed {}) ended only with the output of a \
                     killed solver and may be cut",
                    last.text.lines().count(),
                    last.claimed
                ));
            } else {
                self.offer(last);
            }
        }
        let stopped = matches!(outcome.stop, StopReason::Requested(_)) && self.stop_requested;
        if stopped {
            // What the solver saved on SIGTERM moves with the unit.
            self.ship_checkpoint_quietly();
        }
        self.ctx.provenance(self.provenance(&outcome));
        // The solver ran in its own processes: the unit's CPU is theirs, not the thread's.
        self.ctx.child_cpu(outcome.cpu_time.as_secs_f64());
        if stopped {
            return Ok(UnitOutcome::Stopped);
        }
        self.judge_end(&outcome)?;
        match self.config.params.objective {
            ExecObjective::Count => match self.count {
                Some(n) => Ok(UnitOutcome::Count(n)),
                None => Err(ProblemError::Solver(format!(
                    "exec: unit {} finished without a `g count <n>` line (a count campaign's \
                     solver prints its unit's count)",
                    self.setup.unit
                ))),
            },
            ExecObjective::Max | ExecObjective::Min => Ok(UnitOutcome::Searched {
                best: self.best,
                hits: Vec::new(),
            }),
        }
    }

    fn ship_checkpoint_quietly(&mut self) {
        if let Packed::Cursor(bytes) = checkpoint::pack(&self.setup.checkpoint_dir) {
            if self.shipped.as_ref() != Some(&bytes) {
                self.ctx.checkpoint(bytes.clone());
                self.shipped = Some(bytes);
                self.checkpoints_shipped += 1;
            }
        }
    }

    /// Whether the run ended as a unit may end: an exhaustive unit (units file) only when
    /// the solver exited by itself with 0, 10, 20 or 30 (MaxSAT Evaluation's codes); a seed
    /// unit also at its time limit (the normal end of an anytime run).
    fn judge_end(&self, outcome: &RunOutcome) -> Result<(), ProblemError> {
        let exited_well = outcome.stop == StopReason::Exited
            && matches!(outcome.exit, ExitKind::Code(0 | 10 | 20 | 30));
        let timed_out = outcome.stop == StopReason::TimeLimit;
        if exited_well || (timed_out && !self.config.is_units_file()) {
            return Ok(());
        }
        let why = if timed_out {
            format!(
                "did not finish within --unit-seconds {} (its part of the search is not done; \
                 split it finer or raise the limit)",
                self.config.params.unit_seconds
            )
        } else {
            outcome.describe()
        };
        Err(ProblemError::Solver(format!(
            "exec: unit {}: the solver {why}; stderr: {}",
            self.setup.unit,
            tail(&outcome.stderr_tail).trim()
        )))
    }

    /// The provenance record of the run.
    fn provenance(&self, outcome: &RunOutcome) -> Value {
        let p = &self.config.params;
        json!({
            "solver": {
                "digest": self.setup.variant.digest,
                "platform": self.setup.variant.label,
                "entry": self.setup.entry,
            },
            "checker": self.config.checker,
            "instance": self.config.instance,
            "unit": self.setup.unit,
            "resumed": self.setup.resumed,
            "limits": {
                "unit_seconds": p.unit_seconds,
                "grace_seconds": p.grace_seconds,
                "memory_mb": p.memory_mb,
                "threads": p.threads,
                "output_mb": p.output_mb,
                "open_files": p.open_files,
                "file_mb": p.file_mb,
            },
            "sandbox": outcome.sandbox.summary(),
            "landlock": outcome.sandbox.landlock.applied(),
            "network_isolated": outcome.sandbox.network_isolated,
            "end": outcome.describe(),
            "exit": outcome.exit.to_string(),
            "killed": outcome.killed,
            "wall_ms": outcome.wall_time.as_millis() as u64,
            "cpu_ms": outcome.cpu_time.as_millis() as u64,
            "max_rss_bytes": outcome.max_rss_bytes,
            "stdout_bytes": outcome.stdout_bytes,
            "stderr_tail": tail(&outcome.stderr_tail),
            "claims": {
                "status": self.status.map(Status::as_str),
                "last_cost": self.last_cost,
                "count": self.count.as_ref().map(|c| c.to_string()),
            },
            "improvements": {
                "reported": self.reported,
                "costs": self.reported_costs,
                "not_better": self.not_better,
                "ignored_in_count_campaign": self.models_in_count_campaign,
                "withheld": self.withheld,
            },
            "last_solution_cut_by_kill": outcome.last_solution_cut_by_kill,
            "comments": self.comments,
            "diagnostics": {"count": outcome.diagnostics, "first": self.diagnostics},
            "checkpoints": {"shipped": self.checkpoints_shipped, "notes": self.checkpoint_notes},
            "bound_feed": self.bound_feed.map(|(last, dropped)| json!({
                "last": last,
                "dropped_lines": dropped,
            })),
            "bound_errors": self.bound_errors,
            "strays_killed": outcome.strays_killed,
            "output_held_open": outcome.output_held_open,
        })
    }
}

/// The last [`STDERR_TAIL`] bytes of `text` (on a character boundary).
fn tail(text: &str) -> &str {
    let mut start = text.len().saturating_sub(STDERR_TAIL);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}
