//! The stdout and stderr reader threads of a run, and collecting their results.

use super::{OutputLimits, RunOutcome, SolverEvent};
use crate::output::{self, Collected, Keep};
use crate::proc_scan;
use crate::process::{ExitKind, StopHandle, StopReason, Supervised};
use crate::protocol::{Event, Parser, Solution, Status};
use crate::sandbox::SandboxReport;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long the output readers may take to reach end of file once the group is dead. Longer
/// means a process left the group (e.g. `setsid`) and still holds the pipe.
const READER_WAIT: Duration = Duration::from_secs(2);

/// How long the output readers may take to reach end of file after the group was killed
/// before the processes still holding the pipes are looked for.
const STRAY_WAIT: Duration = Duration::from_millis(200);

/// What the stdout reader found.
#[derive(Default)]
struct StdoutSummary {
    collected: Collected,
    last_solution: Option<Solution>,
    /// The last solution was completed by the end of output.
    last_at_eof: bool,
    status: Option<Status>,
    diagnostics: u64,
}

/// The stdout reader's state: passes events on and remembers what the outcome needs.
struct StdoutState<F> {
    on_event: F,
    max_diagnostics: u64,
    start: Instant,
    summary: StdoutSummary,
}

impl<F: FnMut(SolverEvent)> StdoutState<F> {
    fn handle(&mut self, events: Vec<Event>, at_eof: bool) {
        for event in events {
            match &event {
                Event::Solution(s) => {
                    self.summary.last_solution = Some(s.clone());
                    self.summary.last_at_eof = at_eof;
                }
                Event::Status(s) => self.summary.status = Some(*s),
                Event::Diagnostic(_) => {
                    self.summary.diagnostics += 1;
                    if self.summary.diagnostics > self.max_diagnostics {
                        continue;
                    }
                }
                _ => {}
            }
            (self.on_event)(SolverEvent {
                at: self.start.elapsed(),
                event,
            });
        }
    }
}

pub(super) struct Readers {
    stdout: mpsc::Receiver<StdoutSummary>,
    stderr: mpsc::Receiver<Collected>,
}

pub(super) fn start_readers(
    stdout: std::process::ChildStdout,
    stderr: std::process::ChildStderr,
    limits: &OutputLimits,
    stop: &StopHandle,
    start: Instant,
    on_event: impl FnMut(SolverEvent) + Send + 'static,
) -> Readers {
    let (out_tx, out_rx) = mpsc::channel();
    let (err_tx, err_rx) = mpsc::channel();
    let limits = limits.clone();
    let out_stop = stop.clone();
    let err_stop = stop.clone();
    let spawned = std::thread::Builder::new()
        .name("grind-exec-stdout".into())
        .spawn(move || {
            let parser = Parser::new(limits.max_line);
            let state = StdoutState {
                on_event,
                max_diagnostics: limits.max_diagnostics,
                start,
                summary: StdoutSummary::default(),
            };
            let fd = std::os::fd::AsRawFd::as_raw_fd(&stdout);
            let state = std::cell::RefCell::new(state);
            let parser = std::cell::RefCell::new(parser);
            let collected = output::collect_quiet(
                stdout,
                Some(fd),
                "stdout",
                limits.stdout_bytes,
                Keep::Head(0),
                &out_stop,
                |chunk| {
                    let events = parser.borrow_mut().feed(chunk);
                    state.borrow_mut().handle(events, false)
                },
                || {
                    let events = parser.borrow_mut().flush();
                    state.borrow_mut().handle(events, false)
                },
            );
            let (mut state, mut parser) = (state.into_inner(), parser.into_inner());
            if !collected.overflowed {
                state.handle(parser.finish(), true);
            }
            let mut summary = state.summary;
            summary.collected = collected;
            let _ = out_tx.send(summary);
        });
    if let Err(e) = spawned {
        // Without a reader the solver's output goes nowhere: stop it.
        stop.stop(StopReason::Requested(format!(
            "no stdout reader thread: {e}"
        )));
    }
    let (err_limit, tail) = (limits.stderr_bytes, limits.stderr_tail);
    let spawned = std::thread::Builder::new()
        .name("grind-exec-stderr".into())
        .spawn(move || {
            let c = output::collect(
                stderr,
                "stderr",
                err_limit,
                Keep::Tail(tail),
                &err_stop,
                |_| {},
            );
            let _ = err_tx.send(c);
        });
    if let Err(e) = spawned {
        stop.stop(StopReason::Requested(format!(
            "no stderr reader thread: {e}"
        )));
    }
    Readers {
        stdout: out_rx,
        stderr: err_rx,
    }
}

/// Collects the readers' results once the group is dead. Readers still waiting for end of
/// file mean a process outside the group holds a pipe: such holders are killed.
pub(super) fn finish(
    s: Supervised,
    readers: Readers,
    pipes: &[u64],
    wall_time: Duration,
    sandbox: SandboxReport,
) -> RunOutcome {
    let out = readers.stdout.recv_timeout(STRAY_WAIT);
    let err = readers.stderr.recv_timeout(STRAY_WAIT);
    let mut strays_killed = 0;
    let (out, err) = if out.is_ok() && err.is_ok() {
        (out, err)
    } else {
        strays_killed = proc_scan::kill_pipe_holders(pipes).len();
        (
            out.or_else(|_| readers.stdout.recv_timeout(READER_WAIT)),
            err.or_else(|_| readers.stderr.recv_timeout(READER_WAIT)),
        )
    };
    let output_held_open = out.is_err() || err.is_err();
    let out = out.unwrap_or_default();
    let err = err.unwrap_or_default();
    RunOutcome {
        stop: s.reason,
        killed: s.killed,
        exit: s.exit,
        wall_time,
        cpu_time: s.cpu_time,
        max_rss_bytes: s.max_rss_bytes,
        last_solution_cut_by_kill: out.last_at_eof
            && (s.killed || matches!(s.exit, ExitKind::Signal(_))),
        last_solution: out.last_solution,
        status: out.status,
        stdout_bytes: out.collected.total,
        stderr_bytes: err.total,
        stderr_tail: String::from_utf8_lossy(&err.kept).into_owned(),
        diagnostics: out.diagnostics,
        output_held_open,
        strays_killed,
        sandbox,
    }
}
