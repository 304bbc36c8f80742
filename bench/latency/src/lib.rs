//! `grind-latency`: does a worker stay busy when the coordinator is far away? Runs a real
//! `grind serve` and real `grind-worker` processes on loopback with a delay line (a fixed
//! round trip, bytes in flight overlapping as on a real link) between them, and resets
//! each worker's connections a few times a minute through the chaos crate's proxy. Each
//! case runs one `primes` campaign of stretched units and reports the workers' busy
//! fraction, then checks that nothing was lost or counted twice.
//!
//! Layout: [`delay_line`] (the added round trip), [`case`] (one round trip's run and its
//! figures and checks).

pub mod case;
pub mod delay_line;

/// Failures of the benchmark itself (not findings about grind: those are violations).
#[derive(Debug, thiserror::Error)]
pub enum LatencyError {
    /// The case could not be set up or driven.
    #[error("setup: {0}")]
    Setup(String),
    /// A process or the harness under it failed.
    #[error(transparent)]
    Harness(#[from] grind_chaos::ChaosError),
    /// The database could not be read.
    #[error("store: {0}")]
    Store(#[from] rusqlite::Error),
}
