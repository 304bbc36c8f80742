//! `grind-chaos`: proof under fire. Runs a real `grind serve` and several real `grind-worker`
//! processes on loopback, keeps campaigns with independently known answers going, and lets a
//! seeded fault scheduler SIGKILL and restart workers and the coordinator, cut, stall, delay
//! and lose the traffic between workers and the coordinator (through a TCP proxy per
//! worker), and make the database unwritable for a while. At the end every invariant is
//! checked against the database (read-only), the Admin API and the workers' event streams,
//! and every check must have verified as many facts as the run makes likely.
//!
//! Layout: [`rng`] (seeded draws), [`procs`] (the processes), [`proxy`] (the fault proxy),
//! [`cluster`] (processes + proxies), [`faults`] (the plan and its execution),
//! [`workload`] (campaigns), [`observe`] (watching the store during the run), [`logs`]
//! (what the processes said: the workers' event streams and panics), [`invariants`] (the
//! end-of-run checks), [`floors`] (how many facts each check must verify), [`run`] (one
//! run), [`report`] (its figures). Starting processes, the "database unwritable" limit and
//! the reference answers come from `grind-kit`.

pub mod cluster;
pub mod faults;
pub mod floors;
pub mod invariants;
pub mod logs;
pub mod observe;
pub mod procs;
pub mod proxy;
pub mod report;
pub mod rng;
pub mod run;
pub mod workload;

/// Failures of the harness itself (not findings about grind: those are violations).
#[derive(Debug, thiserror::Error)]
pub enum ChaosError {
    /// The run could not be set up (binaries, directories, ports).
    #[error("setup: {0}")]
    Setup(String),
    /// A process did not behave (did not start, did not say where it listens).
    #[error("process: {0}")]
    Process(String),
    /// A fault could not be applied or undone.
    #[error("fault: {0}")]
    Fault(String),
    /// The database could not be read.
    #[error("store: {0}")]
    Store(#[from] rusqlite::Error),
}
