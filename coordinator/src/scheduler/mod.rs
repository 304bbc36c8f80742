//! The lease and unit state machine, as a folder of owners: each table is written by one
//! module only (checked by `tests/table_owners.rs`), and the others call that module's
//! functions. Every function here runs inside one store write (one atomic change), takes
//! "now" from its caller (the injected clock), and never touches the network: the gRPC
//! layer decodes, verifies what needs CPU outside the store, then calls in.
//!
//! | module | writes | holds |
//! |---|---|---|
//! | [`campaigns`] | `campaigns` | create, family, state changes, finish, proven restatement, the campaign's counters |
//! | [`units`] | `units`, `spawned_payloads` | splitting, pending selection, child units, unit state changes |
//! | [`leases`] | `leases` | grant, heartbeat and renewal, expiry, release, grace after a restart |
//! | [`results`] | `results`, `samples` | `complete`: a worker's result, as a short sequence of steps |
//! | [`settle`] | (none) | what a unit's runs mean: done, replica wanted, agreement, dispute |
//! | [`donations`] | (none) | a worker splitting its leased unit |
//! | [`pacing`] | (none) | how much work a lease carries: runs of units, joined units |
//! | [`incumbents`] | (none) | offering a verified solution, the running bounds |
//! | [`premises`] | `premises`, `proof_records` | proof chains: the values a proof takes as given and the campaigns or imported records that back them |
//! | [`successors`] | (none) | campaigns that build on another's result: link, adopt its start and ceiling, close at the ceiling |
//! | [`workers`] | `workers` | register, touch, standing, bans, checkpoint trust |
//! | [`events`] | `events` | the append-only provenance log |
//!
//! Unit states: pending -> leased -> done, or back to pending (lease expired or released,
//! or a replica run wanted), or failed after `max_attempts` failed attempts.
//! Lease states: active -> completed | expired | released | cancelled | failed.

use rusqlite::Connection;

use crate::config::Config;
use crate::problems::Problems;

pub mod campaigns;
pub mod donations;
pub mod events;
pub mod incumbents;
pub mod leases;
pub mod pacing;
pub mod premises;
pub mod results;
pub mod settle;
pub mod successors;
pub mod units;
pub mod workers;

pub use campaigns::{
    change_state, create_campaign, create_campaigns, maybe_finish_campaign, Action, NewCampaign,
    MAX_FAMILY_MEMBERS,
};
pub use donations::donate;
pub use events::event;
pub use incumbents::{offer_incumbent, running_bounds};
pub use leases::{
    expire_leases, grace_after_restart, grant_leases, heartbeat, load_lease, owned_lease, release,
    HeldLeases, LeaseRow,
};
pub use results::complete;
pub use settle::replicate;
pub use workers::{ban_worker, register_worker, touch_worker, worker_standing};

/// What every scheduler operation needs: the open transaction, the time, the settings and
/// the problem instances.
pub struct Ctx<'a> {
    /// The connection, inside the current write transaction.
    pub conn: &'a Connection,
    /// Now, in ms since the epoch.
    pub now: i64,
    /// Coordinator settings.
    pub config: &'a Config,
    /// Problem instances by campaign.
    pub problems: &'a Problems,
}

/// A worker's result after the CPU-heavy checks (re-scoring, sample verification) passed.
#[derive(Clone, Debug)]
pub enum VerifiedResult {
    /// An exact count, as a canonical decimal string.
    Count(String),
    /// The best solution of an optimisation unit (JSON text and its recomputed score), its
    /// verified proof-mode hits (JSON texts) and the checked child units it created.
    Best(Option<(String, i64)>, Vec<String>, Vec<ChildUnit>),
    /// Verified samples (JSON texts).
    Samples(Vec<String>),
    /// The solver failed on the worker; counts as a failed attempt.
    Failed(String),
}

/// A unit created by another unit's result, checked by the problem.
#[derive(Clone, Debug)]
pub struct ChildUnit {
    /// Shown to people.
    pub label: String,
    /// The child's payload.
    pub payload: Vec<u8>,
    /// Pending units are granted smallest priority first.
    pub priority: i64,
}

/// Resource use and the search claim reported with a result.
#[derive(Clone, Copy, Debug, Default)]
pub struct Usage {
    /// Work items (search nodes) done.
    pub nodes: u64,
    /// CPU seconds spent.
    pub cpu_seconds: f64,
    /// Wall seconds spent.
    pub wall_seconds: f64,
    /// The solver version the worker reports it ran (0: not reported).
    pub solver_version: u32,
    /// A search run's claim: `Some(bound)` = "the unit holds nothing better than `bound`"
    /// (`Some(None)`: nothing at all beyond what the run reports); `None`: no claim made.
    pub claim: Option<Option<i64>>,
}

/// Where an offered incumbent comes from, recorded in its `improvement` event.
#[derive(Clone, Copy, Debug, Default)]
pub struct Origin<'a> {
    /// The worker that found it (none for an import).
    pub worker_id: Option<i64>,
    /// The lease it was found under.
    pub lease_id: Option<i64>,
    /// The unit it was found in.
    pub unit_id: Option<i64>,
    /// What delivered it: `unit result`, `improvement`, `import: ...`.
    pub source: &'a str,
    /// The solver version that found it, as its worker reported it (0: unknown).
    pub solver_version: u32,
}
