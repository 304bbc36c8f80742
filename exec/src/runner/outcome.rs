//! How a run ended.

use crate::process::{ExitKind, StopReason};
use crate::protocol::{Solution, Status};
use crate::sandbox::SandboxReport;
use std::time::Duration;

/// How a run ended.
#[derive(Clone, Debug)]
pub struct RunOutcome {
    /// Why it stopped.
    pub stop: StopReason,
    /// `SIGKILL` was needed (it ignored `SIGTERM` for the grace period, or output overflow).
    pub killed: bool,
    /// How the solver process ended.
    pub exit: ExitKind,
    /// Wall time from spawn to reaping.
    pub wall_time: Duration,
    /// CPU time (user + system) of the solver process and of the descendants it waited
    /// for (`wait4`'s resource usage); descendants still running at its end are killed
    /// uncounted.
    pub cpu_time: Duration,
    /// Peak resident set of the solver process.
    pub max_rss_bytes: u64,
    /// The last complete solution printed (what counts for the unit).
    pub last_solution: Option<Solution>,
    /// The last solution was completed only by the end of output, and the solver died of a
    /// signal (e.g. `SIGKILL` after the grace period): with several `v` lines per model it
    /// may have been cut between lines. Check it, but an "invalid" verdict on it is no proof
    /// of a false claim.
    pub last_solution_cut_by_kill: bool,
    /// The last `s` line.
    pub status: Option<Status>,
    /// Bytes written to stdout.
    pub stdout_bytes: u64,
    /// Bytes written to stderr.
    pub stderr_bytes: u64,
    /// The end of stderr (lossy UTF-8).
    pub stderr_tail: String,
    /// Number of protocol diagnostics (including those not passed on).
    pub diagnostics: u64,
    /// Processes that had left the solver's process group but held its stdout or stderr
    /// open, found through `/proc` and killed.
    pub strays_killed: usize,
    /// An output pipe was still open even after that (its further output is lost).
    pub output_held_open: bool,
    /// What the sandbox applied.
    pub sandbox: SandboxReport,
}

impl RunOutcome {
    /// One sentence: why it stopped and how it ended.
    pub fn describe(&self) -> String {
        let why = match &self.stop {
            StopReason::Exited => "exited by itself".to_string(),
            StopReason::TimeLimit => "stopped at its time limit".to_string(),
            StopReason::Requested(r) => format!("stopped on request ({r})"),
            StopReason::OutputLimit(s) => format!("killed: wrote more than its {s} limit"),
            StopReason::MemoryLimit(b) => format!(
                "killed: its processes' resident memory went over {} MiB",
                b >> 20
            ),
        };
        let immediate = matches!(
            self.stop,
            StopReason::OutputLimit(_) | StopReason::MemoryLimit(_)
        );
        let kill = if self.killed && !immediate {
            ", SIGKILL after ignoring SIGTERM for the grace period"
        } else {
            ""
        };
        let meaning = match self.exit {
            ExitKind::Code(10) => " (MaxSAT Evaluation: solution found)",
            ExitKind::Code(20) => " (MaxSAT Evaluation: unsatisfiable)",
            ExitKind::Code(30) => " (MaxSAT Evaluation: optimum found)",
            _ => "",
        };
        format!("{why}{kill}; {}{meaning}", self.exit)
    }
}
