//! The CPU side: units solve on a rayon pool (never on the async runtime's threads), each
//! measured for CPU time and caught if it panics, and report back through the unit events
//! channel.
//!
//! A unit's CPU time is its solving thread's (or, when it ran alone, the whole process's)
//! plus what its solve reports through [`SolveContext::child_cpu`]: the CPU of processes it
//! ran (a user's solver), measured per process by `wait4` when it was reaped. Neither clock
//! of this process sees a child's CPU, and `RUSAGE_CHILDREN` deltas cannot be used: they
//! are process-wide, so with several units running at once each would be charged the
//! others' solvers.

use grind_shared::problem::{Problem, ProblemError, SolveContext};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::mpsc;

use crate::context::{Finished, UnitContext, UnitEvent};
use crate::{cpu, WorkerError};

/// Tracks whether a unit ran alone on this worker for its whole life (then the process CPU
/// clock measures it exactly; otherwise its solving thread's clock is used).
/// Process-wide, because several workers may share one process (`grind run --workers N`).
struct CpuAccounting {
    active: AtomicUsize,
    starts: AtomicUsize,
}

static ACCOUNTING: CpuAccounting = CpuAccounting {
    active: AtomicUsize::new(0),
    starts: AtomicUsize::new(0),
};

/// The solving threads and the channel their units report on.
pub(super) struct Runner {
    pool: Arc<rayon::ThreadPool>,
    events: mpsc::UnboundedSender<UnitEvent>,
}

impl Runner {
    /// A pool of `threads` solving threads, and the receiving end of their events.
    pub(super) fn new(
        threads: usize,
    ) -> Result<(Runner, mpsc::UnboundedReceiver<UnitEvent>), WorkerError> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("grind-solve-{i}"))
            .build()
            .map_err(|e| WorkerError::Setup(format!("cannot start the CPU pool: {e}")))?;
        let (events, rx) = mpsc::unbounded_channel();
        Ok((
            Runner {
                pool: Arc::new(pool),
                events,
            },
            rx,
        ))
    }

    /// Where a unit's context sends its events.
    pub(super) fn events(&self) -> mpsc::UnboundedSender<UnitEvent> {
        self.events.clone()
    }

    /// Solves `payload` with `problem` on the pool; its end (a panic becomes a solver error)
    /// arrives as [`UnitEvent::Finished`] with the CPU and wall time it took.
    pub(super) fn spawn(
        &self,
        lease_id: i64,
        problem: Arc<dyn Problem>,
        payload: Vec<u8>,
        ctx: Arc<UnitContext>,
    ) {
        let accounting = &ACCOUNTING;
        self.pool.spawn(move || {
            accounting.active.fetch_add(1, Ordering::AcqRel);
            let starts_before = accounting.starts.fetch_add(1, Ordering::AcqRel) + 1;
            let (thread0, process0, wall0) = (
                cpu::thread_seconds(),
                cpu::process_seconds(),
                Instant::now(),
            );
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                problem.solve(&payload, ctx.as_ref())
            }))
            .unwrap_or_else(|panic| {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".into());
                Err(ProblemError::Solver(format!("solver panicked: {what}")))
            });
            let alone = accounting.active.load(Ordering::Acquire) == 1
                && accounting.starts.load(Ordering::Acquire) == starts_before;
            let own_seconds = if alone {
                cpu::process_seconds() - process0
            } else {
                cpu::thread_seconds() - thread0
            };
            let cpu_seconds = own_seconds + ctx.child_cpu_seconds();
            accounting.active.fetch_sub(1, Ordering::AcqRel);
            let claim_bound = SolveContext::bound(ctx.as_ref());
            ctx.send(UnitEvent::Finished(Finished {
                lease_id,
                outcome,
                cpu_seconds,
                wall_seconds: wall0.elapsed().as_secs_f64(),
                claim_bound,
            }));
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::SharedBound;
    use grind_shared::problem::{
        Chains, Objective, Placement, Presentation, SplitBatch, UnitOutcome, Units, Verification,
    };

    /// A test problem whose solve is the given function (panicking, reporting child CPU).
    struct Solves(fn(&dyn SolveContext) -> Result<UnitOutcome, ProblemError>);
    const CHILD_CPU: f64 = 7.25;

    impl Verification for Solves {}
    impl Units for Solves {}
    impl Chains for Solves {}
    impl Placement for Solves {}
    impl Presentation for Solves {}

    impl Problem for Solves {
        fn objective(&self) -> Objective {
            Objective::Count
        }
        fn split(&self, _: Option<&[u8]>, _: usize) -> Result<SplitBatch, ProblemError> {
            Ok(SplitBatch {
                units: Vec::new(),
                next: None,
            })
        }
        fn solve(&self, _: &[u8], ctx: &dyn SolveContext) -> Result<UnitOutcome, ProblemError> {
            (self.0)(ctx)
        }
    }

    /// Its solve panics.
    fn panics(_: &dyn SolveContext) -> Result<UnitOutcome, ProblemError> {
        panic!("the solver fell over")
    }

    /// Its solve says its child processes used `CHILD_CPU` seconds.
    fn ran_children(ctx: &dyn SolveContext) -> Result<UnitOutcome, ProblemError> {
        ctx.child_cpu(CHILD_CPU - 1.0);
        ctx.child_cpu(1.0);
        Ok(UnitOutcome::Count(1u32.into()))
    }

    async fn finished(problem: Arc<dyn Problem>) -> Finished {
        let (runner, mut events) = Runner::new(1).unwrap();
        let ctx = Arc::new(UnitContext::new(
            9,
            1,
            Vec::new(),
            None,
            Arc::new(SharedBound::new(Objective::Count, None)),
            runner.events(),
        ));
        runner.spawn(9, problem, Vec::new(), ctx);
        let event = tokio::time::timeout(std::time::Duration::from_secs(30), events.recv())
            .await
            .expect("the unit reports within 30 s")
            .expect("an event");
        let UnitEvent::Finished(done) = event else {
            panic!("expected the unit's end, got {event:?}");
        };
        done
    }

    #[tokio::test]
    async fn the_cpu_of_the_processes_a_solve_ran_is_the_units_too() {
        let done = finished(Arc::new(Solves(ran_children))).await;
        assert!(done.outcome.is_ok());
        // The thread's own CPU comes on top (a few microseconds), never instead.
        assert!(
            (CHILD_CPU..CHILD_CPU + 1.0).contains(&done.cpu_seconds),
            "{}",
            done.cpu_seconds
        );
    }

    #[tokio::test]
    async fn a_panicking_solver_becomes_a_solver_error() {
        let done = finished(Arc::new(Solves(panics))).await;
        assert_eq!(done.lease_id, 9);
        let err = done.outcome.unwrap_err().to_string();
        assert!(
            err.contains("solver panicked: the solver fell over"),
            "{err}"
        );
        assert!(done.cpu_seconds >= 0.0 && done.wall_seconds >= 0.0);
    }
}
