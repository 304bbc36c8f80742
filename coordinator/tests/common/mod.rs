//! Test harness: real `grind serve` and `grind-worker` processes on loopback, an admin
//! client, a raw worker client for playing a (possibly lying) worker, and condition waits
//! with timeouts instead of sleeps.
//!
//! By job: `processes` (spawning and killing), `cluster` (the usual setup: a coordinator on
//! a temporary database with its admin client and workers), `rpc` (clients, and a raw
//! worker played call by call), `campaigns` (campaign calls and checks), `exec` (users'
//! solvers: scripts, exec campaigns, workers that may run them), `waiting`
//! (polling with timeouts), `http` (the web UI). The parts benchmarks need as well (process
//! command lines, condition polling, connections with retries, reference answers) are in
//! `grind-kit`.

// Each test file uses a part of the harness.
#![allow(dead_code, unused_imports)]

pub mod campaigns;
pub mod cluster;
pub mod exec;
pub mod http;
pub mod processes;
pub mod rpc;
pub mod waiting;

pub use campaigns::*;
pub use cluster::*;
pub use exec::*;
pub use grind_kit::reference::{primes_between, primes_in, primes_unit, topswops_flips};
pub use processes::*;
pub use rpc::*;
pub use waiting::*;
