//! Runs the user's checker on one solution: its score is the score.
//!
//! Command: `<checker> [args...] <instance> <solution>`, in a private scratch directory,
//! with a clean environment (`GRIND_INSTANCE`, `GRIND_SOLUTION`, `PATH`, `HOME`, `TMPDIR`,
//! `LANG`), stdin `/dev/null`, the same sandbox as solvers (instance and solution read-only,
//! the scratch directory read-write), a wall-clock limit and a memory limit.
//!
//! Exit-code convention (decided for grind; Kattis validators use 42/43, testlib 0/1/2/3):
//!
//! | checker ends with | verdict |
//! |---|---|
//! | exit 0, first line of stdout a decimal `i64` | [`Verdict::Valid`] with that score (further stdout lines are a message) |
//! | exit 0, anything else on stdout | [`Verdict::CheckerFailed`] (unparsable score) |
//! | exit 43 | [`Verdict::Invalid`]: the solution is wrong; the reason is its stdout, else its stderr |
//! | any other exit code, a signal, the time limit, too much output | [`Verdict::CheckerFailed`] |
//!
//! Exit 1 deliberately means "checker failure", not "invalid": it is what an uncaught Python
//! exception, `set -e` in a shell script and most crashing programs exit with, and a broken
//! checker must never become a strike against a worker. 43 is Kattis's "reject".
//!
//! To catch a broken checker before any worker starts, run [`check`] once on a sample
//! solution or an empty file: [`Verdict::Valid`] or [`Verdict::Invalid`] show it judges,
//! [`Verdict::CheckerFailed`] that it is broken.
//!
//! Blocking: run it off the async runtime (`spawn_blocking`, or a rayon/plain thread). The
//! checker process is started from the calling thread, which waits for it.

use crate::error::{Error, Result};
use crate::output::{self, Keep};
use crate::process::{self, ExitKind, StopReason};
use crate::sandbox::{SandboxPolicy, SandboxReport};
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The exit code meaning "the solution is invalid".
pub const EXIT_INVALID: i32 = 43;

/// Most stdout bytes read from a checker (a score and a message).
const STDOUT_LIMIT: u64 = 1 << 20;
/// How much of stdout and stderr is kept for messages.
const KEEP: usize = 4 << 10;
/// SIGTERM-to-SIGKILL grace for a checker past its limit.
const GRACE: Duration = Duration::from_millis(200);

/// One checker run.
#[derive(Clone, Debug)]
pub struct CheckerSpec {
    /// The checker program.
    pub program: PathBuf,
    /// Arguments before the instance and solution paths.
    pub args: Vec<OsString>,
    /// The instance file.
    pub instance: PathBuf,
    /// The solution file (the `v` lines exactly as printed).
    pub solution: PathBuf,
    /// A scratch directory (created; the checker's working directory).
    pub scratch_dir: PathBuf,
    /// Wall-clock limit.
    pub time_limit: Duration,
    /// The sandbox (limits, Landlock, network); the files above are added to it.
    pub sandbox: SandboxPolicy,
}

/// Why the checker itself failed (no strike against anyone; held for the operator).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckerFailure {
    /// It could not be started.
    Spawn(String),
    /// It ran past its time limit and was killed.
    TimedOut(Duration),
    /// It wrote more than allowed.
    OutputLimit,
    /// Its resident memory went over the limit (bytes) and it was killed.
    MemoryLimit(u64),
    /// It ended with an exit code other than 0 or 43, or a signal.
    Exit {
        /// How it ended.
        exit: ExitKind,
        /// The end of its stderr.
        stderr: String,
    },
    /// It exited 0 without a score on the first line of stdout.
    UnparsableScore {
        /// The start of its stdout.
        stdout: String,
    },
}

impl std::fmt::Display for CheckerFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CheckerFailure::Spawn(e) => write!(f, "checker could not start: {e}"),
            CheckerFailure::TimedOut(t) => {
                write!(f, "checker ran past its time limit of {t:?} and was killed")
            }
            CheckerFailure::MemoryLimit(b) => {
                write!(f, "checker went over its memory limit of {} MiB", b >> 20)
            }
            CheckerFailure::OutputLimit => {
                write!(f, "checker wrote more than {STDOUT_LIMIT} bytes")
            }
            CheckerFailure::Exit { exit, stderr } => write!(
                f,
                "checker failed ({exit}; 0 = valid, {EXIT_INVALID} = invalid): {}",
                stderr.trim()
            ),
            CheckerFailure::UnparsableScore { stdout } => write!(
                f,
                "checker exited 0 but its first line is not an integer score: {:?}",
                stdout.lines().next().unwrap_or("")
            ),
        }
    }
}

/// The checker's judgement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The solution is valid with this score.
    Valid {
        /// The score (this is the score, whatever the solver claimed).
        score: i64,
        /// Further stdout lines.
        message: String,
    },
    /// The solution is invalid (a strike against the worker).
    Invalid {
        /// Why, as the checker said.
        reason: String,
    },
    /// The checker itself failed (held for the operator; no strike).
    CheckerFailed(CheckerFailure),
}

/// A verdict with what the run cost.
#[derive(Clone, Debug)]
pub struct CheckReport {
    /// The verdict.
    pub verdict: Verdict,
    /// Wall time of the checker.
    pub elapsed: Duration,
    /// What the sandbox applied (`None` if it could not start).
    pub sandbox: Option<SandboxReport>,
}

/// Runs the checker and judges its result. Blocks until it ends (at most its time limit plus
/// a short grace). Errors only for a spec that cannot be run (bad scratch directory, sandbox
/// required but unavailable); everything the checker does is a [`Verdict`].
pub fn check(spec: &CheckerSpec) -> Result<CheckReport> {
    let started = Instant::now();
    std::fs::create_dir_all(spec.scratch_dir.join("tmp"))
        .map_err(|e| Error::io("creating directory", &spec.scratch_dir, e))?;
    let mut policy = spec.sandbox.clone();
    policy.read_write.push(spec.scratch_dir.clone());
    policy
        .read_only
        .extend([spec.instance.clone(), spec.solution.clone()]);
    if spec.program.exists() {
        // The checker itself, wherever it is (a script outside the system directories must
        // be readable to start at all).
        policy.read_only.push(spec.program.clone());
    }
    let prepared = policy.prepare()?;
    let report = prepared.report().clone();
    let mut cmd = Command::new(&spec.program);
    cmd.args(&spec.args)
        .arg(&spec.instance)
        .arg(&spec.solution)
        .env_clear()
        .env("GRIND_INSTANCE", &spec.instance)
        .env("GRIND_SOLUTION", &spec.solution)
        .env("PATH", crate::env::SOLVER_PATH)
        .env("HOME", &spec.scratch_dir)
        .env("TMPDIR", spec.scratch_dir.join("tmp"))
        .env("LANG", "C.UTF-8")
        .current_dir(&spec.scratch_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let diagnosis = prepared.install(&mut cmd);
    let (stop, wake) = process::stop_channel().map_err(|e| Error::Spawn {
        program: spec.program.clone(),
        source: e,
    })?;
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let why = diagnosis.explain(&spec.program, e).to_string();
            return Ok(CheckReport {
                verdict: Verdict::CheckerFailed(CheckerFailure::Spawn(why)),
                elapsed: started.elapsed(),
                sandbox: None,
            });
        }
    };
    drop(cmd);
    let stdout = child.stdout.take().expect("stdout is piped");
    let stderr = child.stderr.take().expect("stderr is piped");
    let (out_stop, err_stop) = (stop.clone(), stop.clone());
    let out = std::thread::spawn(move || {
        output::collect(
            stdout,
            "stdout",
            STDOUT_LIMIT,
            Keep::Head(KEEP),
            &out_stop,
            |_| {},
        )
    });
    let err = std::thread::spawn(move || {
        output::collect(
            stderr,
            "stderr",
            STDOUT_LIMIT,
            Keep::Tail(KEEP),
            &err_stop,
            |_| {},
        )
    });
    let supervised = process::supervise(
        child.id(),
        &stop,
        &wake,
        process::Watch {
            deadline: Some(started + spec.time_limit),
            rss_limit: spec.sandbox.limits.rss_bytes,
        },
        GRACE,
    )
    .map_err(|e| Error::Spawn {
        program: spec.program.clone(),
        source: e,
    })?;
    let out = out.join().unwrap_or_default();
    let err = err.join().unwrap_or_default();
    let stdout = String::from_utf8_lossy(&out.kept).into_owned();
    let stderr = String::from_utf8_lossy(&err.kept).into_owned();
    let verdict = match (supervised.reason, supervised.exit) {
        (StopReason::TimeLimit, _) => {
            Verdict::CheckerFailed(CheckerFailure::TimedOut(spec.time_limit))
        }
        (StopReason::OutputLimit(_), _) => Verdict::CheckerFailed(CheckerFailure::OutputLimit),
        (StopReason::MemoryLimit(b), _) => Verdict::CheckerFailed(CheckerFailure::MemoryLimit(b)),
        (_, ExitKind::Code(0)) => judge_score(&stdout),
        (_, ExitKind::Code(EXIT_INVALID)) => Verdict::Invalid {
            reason: if stdout.trim().is_empty() {
                stderr.trim().to_string()
            } else {
                stdout.trim().to_string()
            },
        },
        (_, exit) => Verdict::CheckerFailed(CheckerFailure::Exit { exit, stderr }),
    };
    Ok(CheckReport {
        verdict,
        elapsed: started.elapsed(),
        sandbox: Some(report),
    })
}

/// Exit 0: the first line must be the score.
fn judge_score(stdout: &str) -> Verdict {
    let mut lines = stdout.lines();
    let first = lines.next().unwrap_or("").trim();
    let digits = first.strip_prefix(['+', '-']).unwrap_or(first);
    let parsed = if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        first.parse::<i64>().ok()
    } else {
        None
    };
    match parsed {
        Some(score) => Verdict::Valid {
            score,
            message: lines.collect::<Vec<_>>().join("\n"),
        },
        None => Verdict::CheckerFailed(CheckerFailure::UnparsableScore {
            stdout: stdout.chars().take(200).collect(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn score_parsing() {
        assert_eq!(
            judge_score("42\nok\n"),
            Verdict::Valid {
                score: 42,
                message: "ok".into()
            }
        );
        assert_eq!(
            judge_score("-7"),
            Verdict::Valid {
                score: -7,
                message: String::new()
            }
        );
        for bad in ["", "4.5\n", "score: 3\n", "99999999999999999999\n", "+\n"] {
            assert!(
                matches!(
                    judge_score(bad),
                    Verdict::CheckerFailed(CheckerFailure::UnparsableScore { .. })
                ),
                "{bad:?}"
            );
        }
    }
}
