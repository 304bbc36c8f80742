//! The coordinator's operations, network-free: each decodes what it needs, does CPU-heavy
//! verification off the async runtime ([`verify`]), then makes one atomic store change
//! through a scheduler flow and publishes what the change means for watchers (its
//! [`Effects`]) once it is committed. The gRPC services are thin wrappers around these
//! methods. By job:
//!
//! | module | holds |
//! |---|---|
//! | this one | the coordinator's state: store, clock, settings, problem cache, the watch channels (page changes, new work, bounds), hungry workers; start-up and the sweep; the write that publishes effects |
//! | [`worker_api`] | register, lease, heartbeat, improve, donate, complete (one or a batch), release |
//! | [`admission`] | which worker calls are let in: unknown and banned workers, tokens, rate limits; bans |
//! | [`admin_api`] | campaigns: create, status, state changes, leaderboard, export (rendered submissions), imports |
//! | [`verify`] | re-checking what workers claim: solutions, counts, samples, child units |
//! | [`claims`] | what the plumbing of users' solvers adds: claims held when the verifier fails, campaigns skipped for a worker, checkpoint sizes |

use grind_proto::v1 as pb;
use grind_shared::problem::Problem;
use std::sync::Arc;
use tokio::sync::watch;

use crate::clock::Clock;
use crate::config::Config;
use crate::error::Error;
use crate::problems::Problems;
use crate::scheduler::{self, Ctx, Effects};
use crate::store::Store;
use governor::{DefaultKeyedRateLimiter, RateLimiter};

pub mod admin_api;
pub mod admission;
mod checked;
pub mod claims;
pub mod verify;
pub mod worker_api;

pub use verify::{MAX_CHILDREN_PER_RESULT, MAX_SAMPLES_PER_RESULT, MAX_SOLUTION_BYTES};
pub use worker_api::{MAX_BATCH_COMPLETIONS, MAX_LEASE_WAIT_MS};

/// Most granted leases remembered for their completions (see `Inner::granted`).
const MAX_GRANTED_REMEMBERED: usize = 200_000;

/// The coordinator: store, clock, settings and problem instances.
#[derive(Clone)]
pub struct Coordinator {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    clock: Arc<dyn Clock>,
    config: Config,
    problems: Problems,
    changes: watch::Sender<u64>,
    /// Bumped when work appears that idle workers may be waiting for (see `lease`).
    new_work: watch::Sender<u64>,
    bounds: watch::Sender<Vec<pb::CampaignBound>>,
    /// Workers whose last lease request came back short, and when (ms).
    hungry: std::sync::Mutex<std::collections::HashMap<i64, i64>>,
    /// The leases this coordinator granted whose results are not in yet: lease -> (its
    /// worker, its campaign), so that a completion finds its problem without a store read.
    granted: std::sync::Mutex<std::collections::HashMap<i64, (i64, i64)>>,
    /// The last solution each lease had verified as an improvement (see [`checked`]).
    checked: checked::CheckedClaims,
    /// (worker, campaign) pairs whose skip (the worker may not run the campaign's units) is
    /// in the event log already.
    skips_noted: std::sync::Mutex<std::collections::HashSet<(i64, i64)>>,
    /// Workers known not to be banned, with the token they registered with.
    admitted: std::sync::Mutex<std::collections::HashMap<i64, Option<i64>>>,
    /// Calls per second allowed to each worker identity (none: unlimited).
    worker_calls: Option<DefaultKeyedRateLimiter<i64>>,
    /// Registrations per second allowed from each network address.
    registrations: DefaultKeyedRateLimiter<std::net::IpAddr>,
}

impl Coordinator {
    /// A coordinator over an opened store.
    pub fn new(store: Store, clock: Arc<dyn Clock>, config: Config) -> Coordinator {
        let config_limits = (
            config.worker_calls_per_second,
            config.registrations_per_second,
        );
        let (changes, _) = watch::channel(0);
        let (new_work, _) = watch::channel(0);
        let (bounds, _) = watch::channel(Vec::new());
        Coordinator {
            inner: Arc::new(Inner {
                store,
                clock,
                config,
                problems: Problems::default(),
                changes,
                new_work,
                bounds,
                hungry: Default::default(),
                granted: Default::default(),
                checked: Default::default(),
                skips_noted: Default::default(),
                admitted: Default::default(),
                worker_calls: (config_limits.0 > 0)
                    .then(|| RateLimiter::keyed(admission::per_second(config_limits.0))),
                registrations: RateLimiter::keyed(admission::per_second(config_limits.1)),
            }),
        }
    }

    /// The settings in force.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// The store, for read-only views (the web UI and metrics).
    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    /// Current time from the injected clock.
    pub fn now(&self) -> i64 {
        self.inner.clock.now_ms()
    }

    /// A receiver that ticks whenever units finish, leases expire or campaigns change state.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.inner.changes.subscribe()
    }

    fn changed(&self) {
        self.inner
            .changes
            .send_modify(|generation| *generation += 1);
    }

    /// The running campaigns' bounds, now and as they change.
    pub fn watch_bounds(&self) -> watch::Receiver<Vec<pb::CampaignBound>> {
        self.inner.bounds.subscribe()
    }

    /// Re-reads the running campaigns' bounds and tells watchers if they changed.
    async fn refresh_bounds(&self) {
        match self.inner.store.read(scheduler::running_bounds).await {
            Ok(bounds) => {
                self.inner.bounds.send_if_modified(|current| {
                    let changed = *current != bounds;
                    if changed {
                        *current = bounds;
                    }
                    changed
                });
            }
            Err(e) => tracing::warn!("cannot read campaign bounds: {e}"),
        }
    }

    /// Wakes lease calls waiting for work.
    fn work_appeared(&self) {
        self.inner
            .new_work
            .send_modify(|generation| *generation += 1);
    }

    /// Tells watchers what a committed change means: pages look again, waiting lease calls
    /// try again, workers get the new bounds.
    async fn publish(&self, effects: Effects) {
        if effects.page {
            self.changed();
        }
        if effects.work {
            self.work_appeared();
        }
        if effects.bounds {
            self.refresh_bounds().await;
        }
    }

    /// Notes whether a worker's lease request came back short.
    fn note_hunger(&self, worker_id: i64, hungry: bool) {
        let now = self.now();
        if let Ok(mut map) = self.inner.hungry.lock() {
            if hungry {
                map.insert(worker_id, now);
            } else {
                map.remove(&worker_id);
            }
        }
    }

    /// Whether any worker went without work recently (then running units are asked to
    /// donate part of theirs).
    fn workers_idle(&self) -> bool {
        let horizon = self.now() - 3 * self.inner.config.heartbeat_interval_ms.max(500);
        self.inner
            .hungry
            .lock()
            .map(|mut map| {
                map.retain(|_, at| *at >= horizon);
                !map.is_empty()
            })
            .unwrap_or(false)
    }

    /// Notes the leases just granted to `worker_id` (see [`Coordinator::granted_problem`]).
    fn note_granted(&self, worker_id: i64, grants: &[pb::LeaseGrant]) {
        if let Ok(mut granted) = self.inner.granted.lock() {
            if granted.len() + grants.len() > MAX_GRANTED_REMEMBERED {
                // Leases that expired unfinished pile up: start again (misses read the store).
                granted.clear();
            }
            granted.extend(
                grants
                    .iter()
                    .map(|g| (g.lease_id, (worker_id, g.campaign_id))),
            );
        }
    }

    /// Forgets leases whose results are in (or that were handed back).
    fn forget_granted(&self, lease_ids: impl IntoIterator<Item = i64>) {
        if let Ok(mut granted) = self.inner.granted.lock() {
            for lease_id in lease_ids {
                granted.remove(&lease_id);
            }
        }
    }

    /// The problem of a lease this coordinator granted, without a store read: `None` when
    /// the lease or the problem is not remembered here (granted before a restart), an error
    /// when the lease is another worker's. The write re-checks the lease on its row.
    fn granted_problem(
        &self,
        worker_id: i64,
        lease_id: i64,
    ) -> Option<Result<Arc<dyn Problem>, Error>> {
        let (owner, campaign_id) = *self.inner.granted.lock().ok()?.get(&lease_id)?;
        if owner != worker_id {
            return Some(Err(Error::PermissionDenied(format!(
                "lease {lease_id} belongs to worker {owner}, not to worker {worker_id}"
            ))));
        }
        self.inner.problems.cached(campaign_id).map(Ok)
    }

    /// Runs a scheduler step as one atomic store write, then publishes what the committed
    /// change means for watchers (its [`Effects`]).
    async fn write<R, F>(&self, f: F) -> Result<R, Error>
    where
        R: Send + 'static,
        F: FnOnce(&Ctx) -> Result<R, Error> + Send + 'static,
    {
        let this = self.clone();
        let now = self.now();
        let (value, effects) = self
            .inner
            .store
            .write(move |conn| {
                let ctx = Ctx::new(conn, now, &this.inner.config, &this.inner.problems);
                let value = f(&ctx)?;
                Ok((value, ctx.effects()))
            })
            .await?;
        self.publish(effects).await;
        Ok(value)
    }

    /// Problem instance of a campaign.
    async fn problem(&self, campaign_id: i64) -> Result<Arc<dyn Problem>, Error> {
        let this = self.clone();
        self.inner
            .store
            .read(move |conn| this.inner.problems.get(conn, campaign_id))
            .await
    }

    /// Called once at start-up: gives active leases a full lease time (the coordinator may
    /// have been down), then expires what is overdue; campaigns of an older solver version
    /// continue with this binary's solver (see [`crate::upgrade`]).
    pub async fn start(&self) -> Result<(), Error> {
        let upgraded = self
            .write(|ctx| {
                scheduler::grace_after_restart(ctx)?;
                crate::upgrade::upgrade_solver_versions(ctx)
            })
            .await?;
        for (campaign, from, to) in upgraded {
            tracing::info!("campaign {campaign}: solver version {from} -> {to}; older results keep their label");
        }
        Ok(())
    }

    /// Expires overdue leases; returns how many.
    pub async fn sweep(&self) -> Result<usize, Error> {
        self.write(scheduler::expire_leases).await
    }
}
