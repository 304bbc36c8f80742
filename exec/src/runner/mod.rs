//! Runs one solver: sandboxed start, live protocol events, limits, stop, outcome.
//!
//! Threads, not async: a solver is an external process, and each running solver costs three
//! plain threads (supervisor, stdout reader, stderr reader) that sleep in `poll`/`read`. The
//! worker can run this from a tokio task through `spawn_blocking` or from its own thread; the
//! event callback is where it hands events to its runtime (e.g. a tokio `mpsc` sender's
//! non-blocking `send`). The process is started *from the supervisor thread*, which lives
//! until the process is reaped: the parent-death signal is tied to the spawning thread.

mod outcome;
mod readers;

pub use outcome::RunOutcome;

use crate::bound::{BoundFeed, Objective};
use crate::env::{self, RunDirs, UnitEnv};
use crate::error::{Error, Result};
use crate::proc_scan;
use crate::process::{self, StopHandle, StopReason};
use crate::protocol::{self, Event};
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

/// A running solver. Dropping it without [`RunningSolver::wait`] stops the solver (SIGTERM,
/// grace, SIGKILL, in the background): a forgotten handle never leaves a solver running.
#[derive(Debug)]
pub struct RunningSolver {
    pid: u32,
    stop: StopHandle,
    bound: Option<BoundFeed>,
    sandbox: SandboxReport,
    /// `None` once waited for.
    supervisor: Option<JoinHandle<Result<RunOutcome>>>,
}

impl Drop for RunningSolver {
    fn drop(&mut self) {
        if self.supervisor.is_some() {
            self.stop.stop(StopReason::Requested(
                "its handle was dropped without waiting".into(),
            ));
        }
    }
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

    /// True once the run has ended ([`RunningSolver::wait`] then returns at once). For
    /// callers that keep polling (bounds, stop requests) after the solver closed its stdout.
    pub fn is_finished(&self) -> bool {
        self.supervisor.as_ref().is_none_or(|s| s.is_finished())
    }

    /// Waits for the end of the run (events have all been delivered when this returns).
    pub fn wait(mut self) -> Result<RunOutcome> {
        let supervisor = self.supervisor.take().expect("waited for only once");
        supervisor
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

/// The spec's sandbox with the run's directories, the bundle, the instance and the program.
fn sandbox_policy(spec: &SolverSpec, dirs: &RunDirs) -> SandboxPolicy {
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
    policy
}

/// The solver's command line, environment, directory and pipes (before the sandbox).
fn command(spec: &SolverSpec, dirs: &RunDirs, bound_feed: bool) -> Command {
    let mut cmd = Command::new(&spec.program);
    cmd.args(&spec.args)
        .env_clear()
        .envs(env::solver_env(
            &spec.unit,
            dirs,
            spec.time_limit,
            bound_feed,
        ))
        .current_dir(&dirs.work)
        .stdin(if bound_feed {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
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
    let prepared = sandbox_policy(&spec, &dirs).prepare()?;
    let report = prepared.report().clone();
    let mut cmd = command(&spec, &dirs, bound.is_some());
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
                readers::start_readers(stdout, stderr, &spec.output, &thread_stop, start, on_event);
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
            Ok(readers::finish(
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
        supervisor: Some(supervisor),
    })
}
