//! The user's checker, run by grind: the score of every claimed solution
//! ([`judge`], behind `Verification::score`), and a check of the whole campaign before it is
//! created ([`sanity_check`]).
//!
//! The checker runs as `checker <instance> <solution>` (`grind_exec::checker`): in its own
//! sandbox (process group, `no_new_privs`, Landlock where available, the campaign's network
//! setting), under `--checker-seconds` of wall-clock time and `--checker-memory-mb` of
//! resident memory. Without an instance it gets `/dev/null`. Verdicts map to:
//!
//! | checker | result |
//! |---|---|
//! | exit 0, an `i64` on the first line | `Ok(score)`: that is the score, whatever the solver claimed |
//! | exit 43 | [`ProblemError::InvalidSolution`] with its reason: a strike against the worker |
//! | anything else (exit 1, a signal, a timeout, too much memory or output, no score) | [`ProblemError::VerifierFailed`]: held for the operator, no strike |
//!
//! A bundle that cannot be materialised on this host is a verifier failure too (the claim
//! is not the worker's fault).

use std::path::PathBuf;

use grind_exec::checker::{self, CheckerSpec, Verdict};
use grind_exec::sandbox::{Limits, MemoryLimitKind, Network, SandboxPolicy};
use serde_json::Value;

use super::attached::{self, bundle_program};
use super::params::{Config, ExecParams, UnitSource};
use super::{solution, units};
use crate::attachments;
use crate::problem::ProblemError;

/// The checker's program, the instance path and the checker's sandbox.
struct Checker {
    program: PathBuf,
    bundle: PathBuf,
    instance: PathBuf,
}

fn failed(what: impl std::fmt::Display) -> ProblemError {
    ProblemError::VerifierFailed(format!("exec checker: {what}"))
}

impl Checker {
    fn prepare(config: &Config) -> Result<Checker, ProblemError> {
        let bundle = attachments::materialise(&config.checker).map_err(failed)?;
        let program = bundle_program(&bundle, config.params.checker_entry.as_deref(), "checker")
            .map_err(failed)?;
        let instance = match &config.instance {
            Some(digest) => {
                attached::instance_path(&attachments::materialise(digest).map_err(failed)?)
            }
            None => PathBuf::from("/dev/null"),
        };
        Ok(Checker {
            program,
            bundle,
            instance,
        })
    }

    /// Runs the checker on `model`.
    fn run(&self, config: &Config, model: &str) -> Result<Verdict, ProblemError> {
        let scratch = tempfile::Builder::new()
            .prefix("grind-exec-check-")
            .tempdir()
            .map_err(|e| failed(format!("no scratch directory: {e}")))?;
        let solution_file = scratch.path().join("solution.txt");
        std::fs::write(&solution_file, model)
            .map_err(|e| failed(format!("cannot write the solution file: {e}")))?;
        let memory = config.params.checker_memory_mb << 20;
        let spec = CheckerSpec {
            program: self.program.clone(),
            args: Vec::new(),
            instance: self.instance.clone(),
            solution: solution_file,
            scratch_dir: scratch.path().join("run"),
            time_limit: std::time::Duration::from_secs(config.params.checker_seconds),
            sandbox: SandboxPolicy {
                read_only: vec![self.bundle.clone()],
                limits: Limits {
                    memory_bytes: Some(memory),
                    memory_kind: MemoryLimitKind::Data,
                    rss_bytes: Some(memory),
                    ..Limits::default()
                },
                network: network(config),
                ..SandboxPolicy::default()
            },
        };
        checker::check(&spec)
            .map(|report| report.verdict)
            .map_err(failed)
    }
}

/// The network setting of solvers and checkers.
pub fn network(config: &Config) -> Network {
    match config.params.no_network {
        true => Network::Isolated,
        false => Network::Host,
    }
}

/// The checker's score of the solution document `solution` (see the module docs).
pub fn judge(config: &Config, solution: &Value) -> Result<i64, ProblemError> {
    let model = solution::model(solution)?;
    match Checker::prepare(config)?.run(config, model)? {
        Verdict::Valid { score, .. } => Ok(score),
        Verdict::Invalid { reason } => Err(ProblemError::InvalidSolution(format!(
            "the campaign's checker refuses it: {}",
            clip(&reason)
        ))),
        Verdict::CheckerFailed(why) => Err(failed(why)),
    }
}

/// What [`sanity_check`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SanityReport {
    /// What the checker said about an empty solution (valid with a score, or invalid).
    pub empty_solution: String,
    /// The sample solution's score, when a sample was given.
    pub sample_score: Option<i64>,
    /// The number of units of a units-file campaign.
    pub units: Option<u64>,
}

impl SanityReport {
    /// One line for the operator.
    pub fn describe(&self) -> String {
        let mut parts = vec![format!(
            "the checker judges an empty solution {}",
            self.empty_solution
        )];
        if let Some(score) = self.sample_score {
            parts.push(format!("the sample scores {score}"));
        }
        if let Some(units) = self.units {
            parts.push(format!("the units file has {units} units"));
        }
        parts.join("; ")
    }
}

/// Checks an `exec` campaign before it is created, from its parameters (see
/// [`sanity_check_config`]); `sample` is a submission text (see
/// [`solution::parse_submission`]). The generic way in is `Verification::self_check`.
pub fn sanity_check(params: &Value, sample: Option<&str>) -> Result<SanityReport, ProblemError> {
    let typed: ExecParams = serde_json::from_value(params.clone())
        .map_err(|e| ProblemError::InvalidParams(format!("exec: {e}")))?;
    let config = Config::from_params(typed)?;
    let sample = sample.map(solution::parse_submission).transpose()?;
    sanity_check_config(&config, sample.as_ref())
}

/// Checks an `exec` campaign before it is created (at `add`, off the async runtime, with
/// the bundles already stored): every solver variant has its program (executable), the
/// units file splits, and the checker judges: it runs once on an empty solution, where
/// valid and invalid are both fine but a checker failure (a crash, a hang, no score) is a
/// [`ProblemError::VerifierFailed`], and once on the solution document `sample` when given,
/// which must be valid.
pub fn sanity_check_config(
    config: &Config,
    sample: Option<&Value>,
) -> Result<SanityReport, ProblemError> {
    for variant in &config.solver {
        let dir = attachments::materialise(&variant.digest)?;
        bundle_program(&dir, config.params.solver_entry.as_deref(), "solver")?;
    }
    let units = match &config.units {
        UnitSource::File(digest) => {
            let dir = attachments::materialise(digest)?;
            let file = attached::bundle_file(&dir, None, "units-file")?;
            Some(units::count_file_units(&file)?)
        }
        UnitSource::Seeds { .. } => None,
    };
    let checker = Checker::prepare(config)?;
    let empty_solution = match checker.run(config, "")? {
        Verdict::Valid { score, .. } => format!("valid, score {score}"),
        Verdict::Invalid { reason } => format!("invalid ({})", clip(&reason)),
        Verdict::CheckerFailed(why) => {
            return Err(failed(format!(
                "it fails on an empty solution file, so it cannot judge claims: {why}"
            )))
        }
    };
    let sample_score = match sample {
        None => None,
        Some(doc) => match checker.run(config, solution::model(doc)?)? {
            Verdict::Valid { score, .. } => Some(score),
            Verdict::Invalid { reason } => {
                return Err(ProblemError::InvalidSolution(format!(
                    "the checker refuses the sample solution: {}",
                    clip(&reason)
                )))
            }
            Verdict::CheckerFailed(why) => {
                return Err(failed(format!("it fails on the sample solution: {why}")))
            }
        },
    };
    Ok(SanityReport {
        empty_solution,
        sample_score,
        units,
    })
}

/// At most 300 characters of a checker's message.
fn clip(text: &str) -> String {
    let text = text.trim();
    let mut out: String = text.chars().take(300).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    out
}
