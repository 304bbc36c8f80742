//! Runs one solver: sandboxed start, live protocol events, limits, stop, outcome.
//!
//! Threads, not async: a solver is an external process, and each running solver costs three
//! plain threads (supervisor, stdout reader, stderr reader) that sleep in `poll`/`read`. The
//! worker can run this from a tokio task through `spawn_blocking` or from its own thread; the
//! event callback is where it hands events to its runtime (e.g. a tokio `mpsc` sender's
//! non-blocking `send`). The process is started *from the supervisor thread*, which lives
//! until the process is reaped: the parent-death signal is tied to the spawning thread.

use crate::bound::{BoundFeed, Objective};
use crate::env::{self, RunDirs, UnitEnv};
use crate::error::{Error, Result};
use crate::output::{self, Collected, Keep};
use crate::proc_scan;
use crate::process::{self, ExitKind, StopHandle, StopReason, Supervised};
use crate::protocol::{self, Event, Parser, Solution, Status};
use crate::sandbox::{SandboxPolicy, SandboxReport};
use std::ffi::OsString;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Default grace period between `SIGTERM` and `SIGKILL`.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(5);

/// How long the output readers may take to reach end of file once the group is dead. Longer
/// means a process left the group (e.g. `setsid`) and still holds the pipe.
const READER_WAIT: Duration = Duration::from_secs(2);

/// How long the output readers may take to reach end of file after the group was killed
/// before the processes still holding the pipes are looked for.
const STRAY_WAIT: Duration = Duration::from_millis(200);

/// Output limits.
#[derive(Clone, Debug)]
pub struct OutputLimits {
    /// Most stdout bytes before the solver is killed.
    pub stdout_bytes: u64,
    /// Most stderr bytes before the solver is killed.
    pub stderr_bytes: u64,
    /// How much of the end of stderr is kept for the outcome.
    pub stderr_tail: usize,
    /// Longest protocol line.
    pub max_line: usize,
    /// Diagnostics passed to the callback; later ones are only counted.
    pub max_diagnostics: u64,
}

impl Default for OutputLimits {
    /// 256 MiB stdout, 16 MiB stderr, 8 KiB stderr tail, 64 MiB lines, 100 diagnostics.
    fn default() -> Self {
        OutputLimits {
            stdout_bytes: 256 << 20,
            stderr_bytes: 16 << 20,
            stderr_tail: 8 << 10,
            max_line: protocol::DEFAULT_MAX_LINE,
            max_diagnostics: 100,
        }
    }
}

/// The bound feed of a run (opt-in).
#[derive(Clone, Copy, Debug)]
pub struct BoundSpec {
    /// The objective's direction.
    pub objective: Objective,
    /// The best cost known when the solver starts (in the file and the first stdin line).
    pub initial: Option<i64>,
}

/// Everything needed to run a solver for one unit.
#[derive(Clone, Debug)]
pub struct SolverSpec {
    /// The program (usually inside the bundle directory).
    pub program: PathBuf,
    /// Its arguments (for units-file campaigns, the unit's line is one of them).
    pub args: Vec<OsString>,
    /// A directory for this run; `work/`, `checkpoint/` and `control/` are made in it.
    pub run_dir: PathBuf,
    /// The bundle directory (read-only for the solver).
    pub bundle_dir: Option<PathBuf>,
    /// The per-unit environment values.
    pub unit: UnitEnv,
    /// Wall-clock limit; `SIGTERM` when reached.
    pub time_limit: Option<Duration>,
    /// Time between `SIGTERM` and `SIGKILL`.
    pub grace: Duration,
    /// The sandbox; the run's directories, the bundle and the instance are added to it.
    pub sandbox: SandboxPolicy,
    /// Output limits.
    pub output: OutputLimits,
    /// The bound feed, if the campaign wants one.
    pub bound: Option<BoundSpec>,
}

impl SolverSpec {
    /// A spec with default limits, grace and sandbox.
    pub fn new(program: impl Into<PathBuf>, run_dir: impl Into<PathBuf>) -> SolverSpec {
        SolverSpec {
            program: program.into(),
            args: Vec::new(),
            run_dir: run_dir.into(),
            bundle_dir: None,
            unit: UnitEnv::default(),
            time_limit: None,
            grace: DEFAULT_GRACE,
            sandbox: SandboxPolicy::default(),
            output: OutputLimits::default(),
            bound: None,
        }
    }
}

/// A protocol event with the time since the solver started.
#[derive(Clone, Debug, PartialEq)]
pub struct SolverEvent {
    /// Since the spawn.
    pub at: Duration,
    /// The event.
    pub event: Event,
}

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
    /// CPU time of the solver process (not of its children).
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

/// A running solver.
#[derive(Debug)]
pub struct RunningSolver {
    pid: u32,
    stop: StopHandle,
    bound: Option<BoundFeed>,
    sandbox: SandboxReport,
    supervisor: JoinHandle<Result<RunOutcome>>,
}

impl RunningSolver {
    /// The solver's process ID (also its process group ID).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// A handle to stop it (SIGTERM, grace, SIGKILL) from any thread.
    pub fn stop_handle(&self) -> StopHandle {
        self.stop.clone()
    }

    /// The bound feed, if the run has one.
    pub fn bound_feed(&self) -> Option<&BoundFeed> {
        self.bound.as_ref()
    }

    /// What the sandbox applied.
    pub fn sandbox(&self) -> &SandboxReport {
        &self.sandbox
    }

    /// Waits for the end of the run (events have all been delivered when this returns).
    pub fn wait(self) -> Result<RunOutcome> {
        self.supervisor
            .join()
            .unwrap_or_else(|_| Err(Error::Sandbox("the supervisor thread panicked".into())))
    }
}

fn make_dir(path: &Path) -> Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
        .map_err(|e| Error::io("creating directory", path, e))
}

/// Starts a solver; `on_event` receives its protocol events as they are printed (on the
/// stdout reader thread, so it must not block for long).
pub fn spawn(
    spec: SolverSpec,
    on_event: impl FnMut(SolverEvent) + Send + 'static,
) -> Result<RunningSolver> {
    if let Some((k, _)) = spec.unit.extra.iter().find(|(k, _)| env::is_reserved(k)) {
        return Err(Error::InvalidSpec(format!(
            "extra environment variable {k} is set by grind itself"
        )));
    }
    let dirs = RunDirs::under(&spec.run_dir);
    for d in [
        &dirs.work,
        &dirs.work.join("tmp"),
        &dirs.checkpoint,
        &dirs.control,
    ] {
        make_dir(d)?;
    }
    let bound = spec.bound.map(|b| {
        let feed = BoundFeed::new(b.objective, dirs.bound_file());
        (feed, b.initial)
    });
    if let Some((feed, Some(initial))) = &bound {
        feed.offer(*initial)?;
    }
    let mut policy = spec.sandbox.clone();
    policy
        .read_write
        .extend([dirs.work.clone(), dirs.checkpoint.clone()]);
    policy.read_only.push(dirs.control.clone());
    policy.read_only.extend(spec.bundle_dir.iter().cloned());
    policy.read_only.extend(spec.unit.instance.iter().cloned());
    if spec.program.exists() {
        // The program itself, wherever it is (usually inside the bundle already).
        policy.read_only.push(spec.program.clone());
    }
    let prepared = policy.prepare()?;
    let report = prepared.report().clone();

    let mut cmd = Command::new(&spec.program);
    cmd.args(&spec.args)
        .env_clear()
        .envs(env::solver_env(
            &spec.unit,
            &dirs,
            spec.time_limit,
            bound.is_some(),
        ))
        .current_dir(&dirs.work)
        .stdin(if bound.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let diagnosis = prepared.install(&mut cmd);
    let (stop, wake) = process::stop_channel().map_err(|e| Error::Spawn {
        program: spec.program.clone(),
        source: e,
    })?;

    let (started_tx, started_rx) = mpsc::sync_channel(1);
    let program = spec.program.clone();
    let thread_stop = stop.clone();
    let thread_report = report.clone();
    let supervisor = std::thread::Builder::new()
        .name("grind-exec-supervisor".into())
        .spawn(move || {
            let start = Instant::now();
            let mut child = match cmd.spawn() {
                Ok(c) => c,
                Err(e) => {
                    let _ = started_tx.send(Err(diagnosis.explain(&program, e)));
                    return Err(Error::Sandbox("not started".into()));
                }
            };
            drop(cmd); // closes the parent's copies of the sandbox's descriptors
            let pid = child.id();
            let stdout = child.stdout.take().expect("stdout is piped");
            let stderr = child.stderr.take().expect("stderr is piped");
            let pipes: Vec<u64> = [
                proc_scan::pipe_inode(&stdout),
                proc_scan::pipe_inode(&stderr),
            ]
            .into_iter()
            .flatten()
            .collect();
            let _ = started_tx.send(Ok((pid, child.stdin.take())));
            let readers =
                start_readers(stdout, stderr, &spec.output, &thread_stop, start, on_event);
            let supervised = process::supervise(
                pid,
                &thread_stop,
                &wake,
                process::Watch {
                    deadline: spec.time_limit.map(|t| start + t),
                    rss_limit: spec.sandbox.limits.rss_bytes,
                },
                spec.grace,
            )
            .map_err(|e| Error::Spawn {
                program: program.clone(),
                source: e,
            })?;
            let wall_time = start.elapsed();
            Ok(finish(
                supervised,
                readers,
                &pipes,
                wall_time,
                thread_report,
            ))
        })
        .map_err(|e| Error::Spawn {
            program: spec.program.clone(),
            source: e,
        })?;
    let (pid, stdin) = match started_rx.recv() {
        Ok(Ok(started)) => started,
        Ok(Err(e)) => {
            let _ = supervisor.join();
            return Err(e);
        }
        Err(_) => {
            let _ = supervisor.join();
            return Err(Error::Sandbox("the supervisor thread ended early".into()));
        }
    };
    let bound = bound.map(|(feed, _)| {
        if let Some(stdin) = stdin {
            feed.attach(stdin);
        }
        feed
    });
    Ok(RunningSolver {
        pid,
        stop,
        bound,
        sandbox: report,
        supervisor,
    })
}

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

struct Readers {
    stdout: mpsc::Receiver<StdoutSummary>,
    stderr: mpsc::Receiver<Collected>,
}

fn start_readers(
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
            let mut parser = Parser::new(limits.max_line);
            let mut state = StdoutState {
                on_event,
                max_diagnostics: limits.max_diagnostics,
                start,
                summary: StdoutSummary::default(),
            };
            let collected = output::collect(
                stdout,
                "stdout",
                limits.stdout_bytes,
                Keep::Head(0),
                &out_stop,
                |chunk| state.handle(parser.feed(chunk), false),
            );
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
fn finish(
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
