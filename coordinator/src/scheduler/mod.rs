//! The lease and unit state machine, in three layers (checked by `tests/table_owners.rs`):
//!
//! * [`tables`]: one module per table (its rows, its reads and its writes). The only
//!   writer of its table; it calls no other table module. Its reads may join other tables
//!   in SQL where one query is cheaper than two.
//! * [`rules`]: pure decisions (what a unit's runs mean, how much a grant carries, whether
//!   a unit is replicated, when a campaign is done or closes at its ceiling). No store:
//!   tested without SQLite.
//! * [`flows`]: the only modules that touch more than one table. Each flow reads what a
//!   rule needs through the tables, asks the rule, and writes its decision through the
//!   tables: grant, complete (a result taken in, its unit settled), heartbeat, lease ends
//!   (expire, release, cancel), donate, campaign life (create, state changes, finish,
//!   successors, proof chains), incumbents, workers (register, ban).
//!
//! Every function runs inside one store write (one atomic change), takes "now" from its
//! caller (the injected clock), and never touches the network: the gRPC layer decodes,
//! verifies what needs CPU outside the store, then calls a flow. What the change means for
//! those watching (the pages, the bounds workers prune with, idle workers waiting for work)
//! is noted on the write's [`Ctx`] as [`Effects`] and published once by the coordinator
//! after the commit.
//!
//! Unit states: pending -> leased -> done, or back to pending (lease expired or released,
//! or a replica run wanted), or failed after `max_attempts` failed attempts.
//! Lease states: active -> completed | expired | released | cancelled | failed.

use rusqlite::Connection;
use std::cell::Cell;

use crate::config::Config;
use crate::problems::Problems;

pub mod flows;
pub mod rules;
pub mod tables;

pub use flows::campaign::{change_state, create_campaign, create_campaigns, Action, NewCampaign};
pub use flows::complete::complete;
pub use flows::donate::{donate, donation_basis, MAX_DONATED};
pub use flows::expire::expire_leases;
pub use flows::grant::{grant_leases, Granted};
pub use flows::heartbeat::{heartbeat, HeldLeases};
pub use flows::held::hold_claim;
pub use flows::improve::improve;
pub use flows::lease_end::{grace_after_restart, release};
pub use flows::proof::import_record;
pub use flows::workers::{ban_worker, register_worker};
pub use rules::campaign::MAX_FAMILY_MEMBERS;
pub use rules::settle::replicate;
pub use tables::campaigns::running_bounds;
pub use tables::events::event;
pub use tables::leases::{load_lease, owned_lease, LeaseRow};
pub use tables::results::HeldInsert;
pub use tables::workers::{touch_worker, worker_standing};

/// What every scheduler operation needs: the open transaction, the time, the settings, the
/// problem instances, and the effects to publish once the change is committed.
pub struct Ctx<'a> {
    /// The connection, inside the current write transaction.
    pub conn: &'a Connection,
    /// Now, in ms since the epoch.
    pub now: i64,
    /// Coordinator settings.
    pub config: &'a Config,
    /// Problem instances by campaign.
    pub problems: &'a Problems,
    /// What the change means for watchers, collected as the flows go.
    effects: Cell<Effects>,
}

impl<'a> Ctx<'a> {
    /// The context of one write, with no effects noted yet.
    pub fn new(
        conn: &'a Connection,
        now: i64,
        config: &'a Config,
        problems: &'a Problems,
    ) -> Ctx<'a> {
        Ctx {
            conn,
            now,
            config,
            problems,
            effects: Cell::new(Effects::default()),
        }
    }

    /// The effects noted so far.
    pub fn effects(&self) -> Effects {
        self.effects.get()
    }

    /// Puts the effects back to `saved` (a part of the write was rolled back).
    pub fn restore_effects(&self, saved: Effects) {
        self.effects.set(saved);
    }

    /// Notes that what people see changed (units finished, leases ended, campaigns changed).
    pub fn page_changed(&self) {
        self.note(|e| e.page = true);
    }

    /// Notes that units became pending that idle workers may be waiting for.
    pub fn work_appeared(&self) {
        self.note(|e| e.work = true);
    }

    /// Notes that a running campaign's pruning bound may have changed (an incumbent, a
    /// campaign starting or ending).
    pub fn bounds_changed(&self) {
        self.note(|e| e.bounds = true);
    }

    fn note(&self, f: impl FnOnce(&mut Effects)) {
        let mut effects = self.effects.get();
        f(&mut effects);
        self.effects.set(effects);
    }
}

/// What a committed change means for those watching; published once after the commit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Effects {
    /// Pages and status watchers should look again.
    pub page: bool,
    /// Lease calls waiting for work should try again.
    pub work: bool,
    /// The running campaigns' bounds should be re-read and sent to workers.
    pub bounds: bool,
}

impl Effects {
    /// Both sets of effects.
    pub fn union(self, other: Effects) -> Effects {
        Effects {
            page: self.page || other.page,
            work: self.work || other.work,
            bounds: self.bounds || other.bounds,
        }
    }
}

/// What a provenance event is about: any of a campaign, unit, lease and worker.
#[derive(Clone, Copy, Debug, Default)]
pub struct Subject {
    /// The campaign.
    pub campaign: Option<i64>,
    /// The unit.
    pub unit: Option<i64>,
    /// The lease.
    pub lease: Option<i64>,
    /// The worker.
    pub worker: Option<i64>,
}

impl Subject {
    /// A campaign as a whole.
    pub fn campaign(campaign_id: i64) -> Subject {
        Subject {
            campaign: Some(campaign_id),
            ..Default::default()
        }
    }

    /// A worker.
    pub fn worker(worker_id: i64) -> Subject {
        Subject {
            worker: Some(worker_id),
            ..Default::default()
        }
    }
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
    /// The problem's verifier itself failed on the result's solution or one of its samples
    /// (`ProblemError::VerifierFailed`): the claim is held for the operator, the unit runs
    /// again, and no attempt is counted.
    Held {
        /// The claimed solution (or sample) as the worker sent it.
        solution: String,
        /// The score the worker claimed (0 for a sample).
        claimed_score: i64,
        /// What the verifier said.
        reason: String,
    },
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
