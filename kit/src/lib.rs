//! `grind-kit`: what grind's integration tests (`coordinator/tests`) and benchmarks
//! (`bench/chaos`, `bench/latency`, `bench/load`) need alike, written once.
//!
//! Layout: [`binaries`] (finding the built `grind` and `grind-worker`), [`launch`] (their
//! command lines, the address `grind serve` says it listens on, signals, log tails, work
//! directories), [`net`] (free loopback ports, an echo server), [`waiting`] (polling a
//! condition with a timeout instead of sleeping), [`rpc`] (gRPC connections retried until
//! the server answers), [`limits`] (a process's file-size limit, to make a disk "full"),
//! [`reference`](mod@reference) (answers computed the plain way, independently of grind's solvers).

pub mod binaries;
pub mod launch;
pub mod limits;
pub mod net;
pub mod reference;
pub mod rpc;
pub mod waiting;

use std::time::Duration;

/// What can go wrong in the kit itself.
#[derive(Debug, thiserror::Error)]
pub enum KitError {
    /// A binary under test is not where it should be.
    #[error("{0}")]
    Missing(String),
    /// A URL that is not one.
    #[error("invalid URL {url:?}: {reason}")]
    InvalidUrl {
        /// The URL given.
        url: String,
        /// Why it is not one.
        reason: String,
    },
    /// A condition did not hold in time.
    #[error("timed out after {after:?} waiting for {what}")]
    TimedOut {
        /// What was waited for.
        what: String,
        /// How long.
        after: Duration,
    },
    /// A system call failed.
    #[error("{what}: {source}")]
    Os {
        /// What was being done.
        what: String,
        /// The error.
        source: std::io::Error,
    },
}
