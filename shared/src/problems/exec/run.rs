//! Solving one unit: the solver variant for this platform, started in its sandbox with the
//! unit's checkpoint in place, its events turned into [`SolveContext`] calls as they are
//! printed (see [`super::session`]), the campaign's bound fed in and stop requests passed on.

use std::ffi::OsString;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use grind_exec::bound::Objective as BoundObjective;
use grind_exec::env::RunDirs;
use grind_exec::process::StopReason;
use grind_exec::runner::{self, BoundSpec, OutputLimits, RunningSolver, SolverSpec};
use grind_exec::sandbox::{Limits, MemoryLimitKind, SandboxPolicy};

use super::attached::{self, bundle_program, variant_for};
use super::check::network;
use super::checkpoint;
use super::params::{Config, ExecObjective};
use super::session::{Session, Setup};
use super::units::Unit;
use crate::attachments;
use crate::placement::PLATFORM;
use crate::problem::{ProblemError, SolveContext, UnitOutcome};

/// How often the campaign's bound and stop requests are looked at while a solver runs.
pub const POLL: Duration = Duration::from_millis(100);

/// Most bytes of stderr a solver may write before it is killed.
const STDERR_BYTES: u64 = 16 << 20;

/// Runs the unit `payload` (see the module docs).
pub fn solve(
    config: &Config,
    payload: &[u8],
    ctx: &dyn SolveContext,
) -> Result<UnitOutcome, ProblemError> {
    let unit = Unit::decode(payload)?;
    let variant = variant_for(&config.solver, PLATFORM)?;
    let solver_dir = attachments::materialise(&variant.digest)?;
    let program = bundle_program(&solver_dir, config.params.solver_entry.as_deref(), "solver")?;
    let instance = match &config.instance {
        Some(digest) => Some(attached::instance_path(&attachments::materialise(digest)?)),
        None => None,
    };
    let run_dir = tempfile::Builder::new()
        .prefix("grind-exec-unit-")
        .tempdir()
        .map_err(|e| ProblemError::Solver(format!("exec: no run directory: {e}")))?;
    let dirs = RunDirs::under(run_dir.path());
    if let Some(cursor) = ctx.resume_cursor() {
        checkpoint::restore(cursor, &dirs.checkpoint)?;
    }
    let spec = SolverSpec {
        args: arguments(config, &unit, instance.as_deref()),
        bundle_dir: Some(solver_dir.clone()),
        unit: grind_exec::env::UnitEnv {
            unit: unit.text(),
            seed: unit.seed(),
            threads: config.params.threads,
            instance,
            extra: Vec::new(),
        },
        time_limit: Some(config.unit_time),
        grace: config.grace,
        sandbox: sandbox(config),
        output: OutputLimits {
            stdout_bytes: config.params.output_mb << 20,
            stderr_bytes: STDERR_BYTES,
            ..OutputLimits::default()
        },
        bound: bound_spec(config, ctx),
        ..SolverSpec::new(&program, run_dir.path())
    };
    let setup = Setup {
        unit: unit.label(),
        variant: variant.clone(),
        entry: program
            .strip_prefix(&solver_dir)
            .unwrap_or(&program)
            .display()
            .to_string(),
        checkpoint_dir: dirs.checkpoint.clone(),
        resumed: ctx.resume_cursor().is_some(),
    };
    let (events, received) = mpsc::channel();
    let running = runner::spawn(spec, move |e| {
        let _ = events.send(e.event);
    })
    .map_err(|e| ProblemError::Solver(format!("exec: {e}")))?;
    let mut session = Session::new(config, ctx, setup);
    follow(&running, &received, &mut session, ctx);
    if let Some(feed) = running.bound_feed() {
        session.note_bound_feed(feed.current(), feed.dropped_lines());
    }
    let outcome = running
        .wait()
        .map_err(|e| ProblemError::Solver(format!("exec: {e}")))?;
    session.finish(outcome)
}

/// Passes events on as they arrive and, every [`POLL`], the campaign's bound and a stop
/// request, until the run has ended.
fn follow(
    running: &RunningSolver,
    received: &mpsc::Receiver<grind_exec::protocol::Event>,
    session: &mut Session<'_>,
    ctx: &dyn SolveContext,
) {
    let mut stopping = false;
    // After the solver closed its stdout: how long to wait before looking again (it is
    // usually exiting; it may also run on, and must stay stoppable).
    let mut idle = Duration::from_millis(1);
    loop {
        match received.recv_timeout(POLL) {
            Ok(event) => {
                session.handle(event);
                while let Ok(more) = received.try_recv() {
                    session.handle(more);
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                if running.is_finished() {
                    return;
                }
                std::thread::sleep(idle);
                idle = (idle * 2).min(POLL);
            }
        }
        if let (Some(feed), Some(bound)) = (running.bound_feed(), ctx.bound()) {
            if let Err(e) = feed.offer(bound) {
                session.note_bound_error(e.to_string());
            }
        }
        if !stopping && ctx.stop_requested() {
            stopping = true;
            session.note_stop_requested();
            running.stop_handle().stop(StopReason::Requested(
                "grind stops the unit (lease lost, worker stopping or pausing)".into(),
            ));
        }
    }
}

/// The solver's command-line arguments (see [`super::params::ExecParams::args`]).
pub fn arguments(config: &Config, unit: &Unit, instance: Option<&Path>) -> Vec<OsString> {
    let instance_text = instance.map(|p| p.display().to_string());
    if config.params.args.is_empty() {
        let mut args: Vec<OsString> = instance.iter().map(|p| p.as_os_str().into()).collect();
        if config.is_units_file() {
            args.extend(unit.words().into_iter().map(OsString::from));
        }
        return args;
    }
    let mut args = Vec::new();
    for arg in &config.params.args {
        match arg.as_str() {
            "{unit}" => args.extend(unit.words().into_iter().map(OsString::from)),
            "{instance}" => args.extend(instance.map(|p| p.as_os_str().to_owned())),
            _ => args.push(OsString::from(
                arg.replace("{instance}", instance_text.as_deref().unwrap_or(""))
                    .replace("{seed}", &unit.seed().to_string())
                    .replace("{unit}", &unit.text()),
            )),
        }
    }
    args
}

/// The solver's sandbox: the campaign's limits and network, Landlock where available.
fn sandbox(config: &Config) -> SandboxPolicy {
    let p = &config.params;
    let memory = p.memory_mb.map(|mb| mb << 20);
    // A CPU-time backstop per process: the wall-clock limit (with grace) on every thread.
    let cpu = (p.unit_seconds + p.grace_seconds + 1).saturating_mul(u64::from(p.threads));
    SandboxPolicy {
        limits: Limits {
            cpu_time: Some(Duration::from_secs(cpu)),
            memory_bytes: memory,
            memory_kind: MemoryLimitKind::Data,
            open_files: Some(p.open_files),
            file_size_bytes: Some(p.file_mb << 20),
            rss_bytes: memory,
        },
        network: network(config),
        ..SandboxPolicy::default()
    }
}

/// The bound feed, when the campaign opted in.
fn bound_spec(config: &Config, ctx: &dyn SolveContext) -> Option<BoundSpec> {
    let objective = match config.params.objective {
        _ if !config.params.bound_feed => return None,
        ExecObjective::Max => BoundObjective::Maximize,
        ExecObjective::Min => BoundObjective::Minimize,
        ExecObjective::Count => return None,
    };
    Some(BoundSpec {
        objective,
        initial: ctx.bound(),
    })
}
