//! `grind-bench`: a load benchmark of the grind coordinator.
//!
//! The `grind-loadgen` binary starts a coordinator in-process (or connects to one), creates a
//! `primes` campaign with tiny units and drives it with many simulated workers over real gRPC
//! on loopback: each worker leases a unit, counts its primes (correctly: results are taken as
//! truth), completes it and repeats. It reports sustained grant + complete pairs per second,
//! call latencies, CPU and memory, then checks that the campaign's stored total is exactly
//! the sum of what was accepted.
//!
//! Layout: [`embedded`] (an in-process coordinator), [`sim`] (the simulated workers), [`stats`] (latency percentiles), [`procfs`]
//! (CPU and memory from `/proc`), [`report`] (the human table and the JSON line),
//! [`scaling`] (the `grind-scaling` simulation of a campaign's wall time on many workers).

pub mod embedded;
pub mod procfs;
pub mod report;
pub mod scaling;
pub mod sim;
pub mod stats;
