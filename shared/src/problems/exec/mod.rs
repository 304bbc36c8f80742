//! `exec`: bring your own solver (issue 29). A campaign runs a user's program, in any
//! language, on every worker that opted in, and the user's checker judges every claim on
//! the coordinator; behind the same [`Problem`] trait as the built-in problems, so leases,
//! verification, bounds, provenance, the web pages, export and resume work unchanged.
//!
//! The mechanics (line protocol, sandbox, bound feed, checker conventions, bundles) are the
//! `grind-exec` crate's; this module maps them onto a campaign:
//!
//! | file | job |
//! |---|---|
//! | [`params`] | flags and JSON ([`ExecParams`]), checked into a [`params::Config`] |
//! | [`attached`] | attachment digests, the platform variant, the program in a bundle, [`LocalBundles`] |
//! | [`units`] | units and the lazy split: one per seed, or one per line of the units file |
//! | `run` | one unit: sandboxed start, checkpoint restored, bound fed in, stop passed on |
//! | `session` | the solver's events as [`SolveContext`] calls; outcome and provenance |
//! | [`checkpoint`] | the checkpoint directory packed into the unit's cursor and back |
//! | [`check`] | the checker: `Verification::score`, and `self_check` ([`sanity_check`]) at `add` |
//! | [`solution`] | the solution document and its text (export, import) |
//! | [`fixtures`] | tiny example campaigns (conformance test, tests) |
//!
//! ## Decisions
//!
//! **Attachments.** `solver` (one bundle, or `TRIPLE=bundle` per platform), `checker`,
//! `instance` and `units_file` hold paths at the command line; the CLI uploads them and
//! stores `sha256:<hex>` digests ([`ATTACHMENTS`]). Construction accepts only digests.
//! Every host reaches the files through [`crate::attachments::materialise`]. A bundle that
//! is one file runs that file; a directory bundle names its program with `--solver-entry`
//! (`--checker-entry`). The program must be executable (scripts with a `#!` line).
//!
//! **Units.** `--units seeds:N`: unit *i* is an independent anytime run with `GRIND_SEED=i`;
//! the campaign is not exhaustive. `--units-file FILE`: one unit per line (the user's split
//! of an exhaustive search); the campaign is exhaustive, but
//! [`Problem::coverage_checked`] is false: grind cannot check a split it did not make, so
//! "every unit finished" is the solver's claim, never a proof. The same holds for
//! `s OPTIMUM FOUND`: it is recorded in provenance as the solver's claim, nothing more.
//!
//! **Command line.** By default `solver [instance] [unit line's words]` (the instance when
//! the campaign has one, the words for units-file campaigns; seeds come in `GRIND_SEED`),
//! which suits MaxSAT-style solvers (`solver file.wcnf`) and split searches alike. `--arg`
//! replaces it, with `{instance}`, `{seed}` and `{unit}` replaced (see [`ExecParams::args`]).
//! The environment is `grind_exec::env`'s.
//!
//! **Stream.** Every complete model (complete at the next `o` or `s` line, when the output
//! goes quiet for 100 ms after a whole `v` line, or at the end) is passed to
//! `SolveContext::improve` at once when its claimed cost beats the bound the unit knows; the
//! coordinator scores it with the checker (the claimed cost is only a claim). `g progress`, `g count`, `g checkpoint` map
//! to progress, the unit's count and its checkpoint (the checkpoint directory packed in the
//! bundle format). With `--bound-feed` the campaign's bound is read every 100 ms and fed in
//! (`b <value>` on stdin, `GRIND_BOUND_FILE`). A stop request (lease lost, worker stopping
//! or pausing) sends `SIGTERM`, then `SIGKILL` after the grace period, ships a last
//! checkpoint and ends the unit as stopped; a resumed unit gets its checkpoint directory
//! back before the solver starts, on any machine, and a fresh `--unit-seconds`. The calling
//! thread (a worker's CPU-pool thread) sleeps while the solver runs; the solver itself uses
//! `--threads` cores outside the pool.
//!
//! **How a unit ends.** A seed unit ends well at its time limit or when the solver exits
//! with 0, 10, 20 or 30 (MaxSAT Evaluation's codes); a units-file unit only when the solver
//! exits by itself with one of those codes: at the time limit its part of the search is not
//! done, which is a solver error ("split finer or raise the limit"), as are crashes, other
//! exit codes and the output or memory limits. Every run, however it ends, reports a
//! provenance record (`SolveContext::provenance`): bundle and checker digests, platform
//! variant, limits, the sandbox applied, exit status, stderr tail, the solver's claims,
//! `last_solution_cut_by_kill` and what was reported.
//!
//! **Scores are `i64`.** An `o` line whose cost is not a decimal `i64` (a float, an
//! overflow) is a diagnostic and its model is no claim; a checker whose first line is not
//! an `i64` has failed (no strike). Real-valued objectives must be scaled to integers by
//! the solver and the checker.
//!
//! **Trust.** Workers are untrusted: the claimed cost never becomes a score; the checker's
//! verdict does (see [`check`] for the exit codes: 0 valid, 43 invalid = a strike, anything
//! else = the checker failed, no strike). [`Placement::requirements`] says the units run
//! native code, so only workers started with the opt-in get them, and lists the solver's
//! platforms when it has labelled variants.

pub mod attached;
pub mod check;
pub mod checkpoint;
pub mod fixtures;
pub mod params;
mod run;
mod session;
pub mod solution;
pub mod units;

#[cfg(test)]
mod tests;

use serde_json::Value;

use crate::placement::Requirements;
use crate::problem::{
    Chains, Objective, Placement, Presentation, Problem, ProblemError, SolveContext, SplitBatch,
    UnitOutcome, Units, Verification,
};
use crate::registry::ProblemDef;

pub use attached::LocalBundles;
pub use check::{sanity_check, sanity_check_config, SanityReport};
pub use params::{ExecObjective, ExecParams};

/// The JSON keys of [`ExecParams`] that name files to attach.
pub const ATTACHMENTS: &[&str] = &["solver", "checker", "instance", "units_file"];

/// An `exec` campaign: a user's solver and checker.
pub struct Exec {
    config: params::Config,
}

impl ProblemDef for Exec {
    const NAME: &'static str = "exec";
    const ABOUT: &'static str =
        "your own solver and checker, any language: anytime seeds or a units file, checked by your checker";
    const SOLVER_VERSION: u32 = 1;
    type Params = ExecParams;
    const ATTACHMENTS: &'static [&'static str] = ATTACHMENTS;

    fn from_params(params: ExecParams) -> Result<Self, ProblemError> {
        Ok(Exec {
            config: params::Config::from_params(params)?,
        })
    }

    /// Tiny shell solvers and a shell checker ([`fixtures`]): seeds (max), a units file
    /// (min, with checkpoints) and a count over the same units file.
    fn examples() -> Vec<Value> {
        fixtures::example_params()
    }

    fn prepare_examples() {
        fixtures::install();
    }
}

impl Problem for Exec {
    fn objective(&self) -> Objective {
        self.config.params.objective.objective()
    }

    /// A units file is an exhaustive split (finishing it is the solver's claim); seeds are
    /// independent anytime runs.
    fn exhaustive(&self) -> bool {
        self.config.is_units_file()
    }

    /// grind did not make the split: never a proof.
    fn coverage_checked(&self) -> bool {
        false
    }

    fn split(&self, cursor: Option<&[u8]>, max_units: usize) -> Result<SplitBatch, ProblemError> {
        units::split(&self.config.units, cursor, max_units)
    }

    fn solve(&self, payload: &[u8], ctx: &dyn SolveContext) -> Result<UnitOutcome, ProblemError> {
        run::solve(&self.config, payload, ctx)
    }
}

impl Verification for Exec {
    /// The checker's score (see [`check`]).
    fn score(&self, solution: &Value) -> Result<i64, ProblemError> {
        check::judge(&self.config, solution)
    }

    /// The checker on an empty solution and on `sample`, the solver variants' programs and
    /// the units file (see [`check::sanity_check_config`]).
    fn self_check(&self, sample: Option<&Value>) -> Result<Option<String>, ProblemError> {
        check::sanity_check_config(&self.config, sample).map(|report| Some(report.describe()))
    }
}

impl Units for Exec {}
impl Chains for Exec {}

impl Presentation for Exec {
    /// A solution is written exactly as the solver printed its `v` lines; a count as the
    /// number.
    fn render(&self, value: &str, solution: Option<&Value>) -> String {
        match solution.map(solution::model) {
            Some(Ok(model)) => model.to_string(),
            _ => format!("{value}\n"),
        }
    }

    /// The `v` lines (or a solver's whole output): see [`solution::parse_submission`].
    fn parse_submission(&self, text: &str) -> Result<Value, ProblemError> {
        solution::parse_submission(text)
    }
}

impl Placement for Exec {
    /// Native code; the platforms of labelled solver variants (any platform otherwise).
    fn requirements(&self) -> Requirements {
        let platforms: Vec<String> = self
            .config
            .solver
            .iter()
            .filter_map(|v| v.label.clone())
            .collect();
        Requirements {
            native_code: true,
            platforms: (!platforms.is_empty()).then_some(platforms),
        }
    }
}
