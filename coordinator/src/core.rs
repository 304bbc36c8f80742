//! The coordinator's operations, network-free: each decodes what it needs, does CPU-heavy
//! verification off the async runtime, then makes one atomic store change through the
//! scheduler. The gRPC services are thin wrappers around these methods.

use grind_proto::v1 as pb;
use grind_shared::count::parse_count;
use grind_shared::problem::{Objective, Problem};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

use crate::auth::{Authenticator, Caller, Role};
use crate::clock::Clock;
use crate::config::Config;
use crate::error::Error;
use crate::problems::Problems;
use crate::scheduler::{self, Action, ChildUnit, Ctx, Effects, NewCampaign, Usage, VerifiedResult};
use crate::store::Store;
use crate::views;
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

/// Largest solution document accepted (bytes of JSON).
pub const MAX_SOLUTION_BYTES: usize = 4 << 20;
/// Most samples accepted in one result.
pub const MAX_SAMPLES_PER_RESULT: usize = 1_000_000;
/// Most child units one result may create.
pub const MAX_CHILDREN_PER_RESULT: usize = 100_000;

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
                admitted: Default::default(),
                worker_calls: (config_limits.0 > 0)
                    .then(|| RateLimiter::keyed(per_second(config_limits.0))),
                registrations: RateLimiter::keyed(per_second(config_limits.1)),
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

    // ---- worker API ------------------------------------------------------------------------

    /// Registers a worker; `caller` is the token it authenticated with (if the coordinator
    /// requires tokens) and `peer` its network address (registrations are rate-limited per
    /// address).
    pub async fn register(
        &self,
        req: pb::RegisterRequest,
        caller: Option<Caller>,
        peer: Option<std::net::IpAddr>,
    ) -> Result<pb::RegisterReply, Error> {
        if let Some(ip) = peer {
            if self.inner.registrations.check_key(&ip).is_err() {
                return Err(Error::ResourceExhausted(format!(
                    "too many registrations from {ip}; slow down"
                )));
            }
        }
        let token_id = caller.map(|c| c.token_id);
        let worker_id = self
            .write(move |ctx| scheduler::register_worker(ctx, &req, token_id))
            .await?;
        if let Ok(mut admitted) = self.inner.admitted.lock() {
            admitted.insert(worker_id, token_id);
        }
        Ok(pb::RegisterReply {
            worker_id,
            lease_ttl_ms: self.inner.config.lease_ttl_ms,
            heartbeat_interval_ms: self.inner.config.heartbeat_interval_ms,
            coordinator_version: grind_shared::VERSION.to_string(),
        })
    }

    /// Grants leases. When there is nothing to grant and the worker allows it
    /// (`wait_ms`), holds the call until new work appears or the wait is over, so that an
    /// idle worker starts on a new campaign at once instead of at its next poll.
    pub async fn lease(&self, req: pb::LeaseRequest) -> Result<pb::LeaseReply, Error> {
        let (worker_id, capacity, max_units) = (req.worker_id, req.capacity, req.max_units);
        let wait = Duration::from_millis(u64::from(req.wait_ms.min(MAX_LEASE_WAIT_MS)));
        let deadline = tokio::time::Instant::now() + wait;
        let mut new_work = self.inner.new_work.subscribe();
        loop {
            let leases = self
                .write(move |ctx| scheduler::grant_leases(ctx, worker_id, capacity, max_units))
                .await?;
            let waited_out = tokio::time::Instant::now() >= deadline;
            if !leases.is_empty() || capacity == 0 || waited_out {
                let mut reply = self.lease_reply(worker_id, capacity, leases);
                if waited_out && !wait.is_zero() {
                    // It has already waited: it may ask again at once.
                    reply.retry_after_ms = 0;
                }
                return Ok(reply);
            }
            // Ignore an error: the sender lives as long as this coordinator.
            let _ = tokio::time::timeout_at(deadline, new_work.changed()).await;
        }
    }

    /// Wakes lease calls waiting for work.
    fn work_appeared(&self) {
        self.inner
            .new_work
            .send_modify(|generation| *generation += 1);
    }

    /// The reply to a request for `capacity` leases that got `leases`; notes a short answer
    /// (the worker is hungry: running units are then asked to donate).
    fn lease_reply(
        &self,
        worker_id: i64,
        capacity: u32,
        leases: Vec<pb::LeaseGrant>,
    ) -> pb::LeaseReply {
        self.note_hunger(worker_id, (leases.len() as u32) < capacity);
        let retry_after_ms = if leases.is_empty() {
            self.inner.config.heartbeat_interval_ms.clamp(100, 5_000)
        } else {
            0
        };
        pb::LeaseReply {
            leases,
            retry_after_ms,
        }
    }

    /// Renews leases.
    pub async fn heartbeat(&self, req: pb::HeartbeatRequest) -> Result<pb::HeartbeatReply, Error> {
        if req.leases.len() > 100_000 {
            return Err(Error::InvalidArgument(
                "too many leases in one heartbeat".into(),
            ));
        }
        let idle = self.workers_idle();
        let reply = self
            .write(move |ctx| {
                let held = req.complete_list.then_some(scheduler::HeldLeases {
                    listed: &req.leases,
                    delivering: &req.delivering,
                    newest_lease_id: req.newest_lease_id,
                });
                scheduler::heartbeat(ctx, req.worker_id, &req.leases, idle, held)
            })
            .await?;
        crate::metrics::leases_renewed(reply.leases.iter().filter(|l| l.deadline_ms > 0).count());
        Ok(reply)
    }

    /// Verifies and records an improvement.
    pub async fn improve(
        &self,
        req: pb::ImprovementRequest,
    ) -> Result<pb::ImprovementReply, Error> {
        let (lease, problem) = self.lease_and_problem(req.worker_id, req.lease_id).await?;
        if lease.campaign_id != req.campaign_id {
            return Err(Error::InvalidArgument(format!(
                "lease {} belongs to campaign {}, not to campaign {}",
                lease.id, lease.campaign_id, req.campaign_id
            )));
        }
        let score = match verify_solution(problem, &req.solution_json).await {
            Ok(score) => score,
            Err(reason) => return self.reject_improvement(&req, reason).await,
        };
        if score != req.claimed_score {
            let reason = format!(
                "claimed score {} but the solution scores {score}",
                req.claimed_score
            );
            return self.reject_improvement(&req, reason).await;
        }
        let solution = req.solution_json.clone();
        let (best, accepted) = self
            .write(move |ctx| {
                scheduler::improve(
                    ctx,
                    lease.campaign_id,
                    &solution,
                    score,
                    scheduler::Origin {
                        worker_id: Some(req.worker_id),
                        lease_id: Some(lease.id),
                        unit_id: Some(lease.unit_id),
                        source: "improvement",
                        solver_version: req.solver_version,
                    },
                )
            })
            .await?;
        Ok(pb::ImprovementReply {
            accepted,
            verified_score: score,
            campaign_best: best,
            reason: if accepted {
                String::new()
            } else {
                "not better than the campaign's best".into()
            },
        })
    }

    async fn reject_improvement(
        &self,
        req: &pb::ImprovementRequest,
        reason: String,
    ) -> Result<pb::ImprovementReply, Error> {
        let (worker, lease, campaign) = (req.worker_id, req.lease_id, req.campaign_id);
        let detail = serde_json::json!({"reason": reason, "claimed": req.claimed_score});
        self.write(move |ctx| {
            scheduler::event(
                ctx.conn,
                ctx.now,
                "improvement_rejected",
                Some(campaign),
                None,
                Some(lease),
                Some(worker),
                detail,
            )
        })
        .await?;
        Err(Error::InvalidArgument(format!(
            "improvement rejected: {reason}"
        )))
    }

    /// Accepts donated units once the problem has checked, on a blocking thread, that the
    /// kept and donated parts cover the donor's unit exactly (`Problem::check_donation`). A
    /// donation that fails is refused and recorded against the worker (`donation_rejected`).
    pub async fn donate(&self, req: pb::DonateRequest) -> Result<pb::DonateReply, Error> {
        if req.units.len() > scheduler::MAX_DONATED {
            return Err(Error::InvalidArgument(format!(
                "{} donated units is more than the {} allowed at once",
                req.units.len(),
                scheduler::MAX_DONATED
            )));
        }
        let this = self.clone();
        let (worker_id, lease_id) = (req.worker_id, req.lease_id);
        let (lease, problem, checked, best) = self
            .inner
            .store
            .read(move |conn| {
                let lease = scheduler::owned_lease(conn, worker_id, lease_id)?;
                // A stale donation (its lease over) is refused by the write, without a strike.
                if lease.state != "active" {
                    return Err(Error::FailedPrecondition(format!(
                        "lease {} is {}, not active",
                        lease.id, lease.state
                    )));
                }
                let problem = this.inner.problems.get(conn, lease.campaign_id)?;
                let (payload, best) =
                    scheduler::donation_basis(conn, lease.unit_id, lease.campaign_id)?;
                Ok((lease, problem, payload, best))
            })
            .await?;
        let old = checked.clone();
        let remaining = req.remaining_payload.clone();
        let donated: Vec<Vec<u8>> = req.units.iter().map(|u| u.payload.clone()).collect();
        let verdict = tokio::task::spawn_blocking(move || {
            problem.check_donation(&old, &remaining, &donated, best)
        })
        .await
        .map_err(|e| Error::Internal(format!("donation check panicked: {e}")))?;
        if let Err(reason) = verdict {
            return self.reject_donation(&req, &lease, reason.to_string()).await;
        }
        let accepted = self
            .write(move |ctx| scheduler::donate(ctx, req.worker_id, &req, &checked))
            .await?;
        Ok(pb::DonateReply { accepted })
    }

    /// Records a refused donation against its worker and refuses it.
    async fn reject_donation(
        &self,
        req: &pb::DonateRequest,
        lease: &scheduler::LeaseRow,
        reason: String,
    ) -> Result<pb::DonateReply, Error> {
        let (worker, lease_id, unit, campaign) =
            (req.worker_id, lease.id, lease.unit_id, lease.campaign_id);
        let detail = serde_json::json!({"reason": reason, "units": req.units.len()});
        self.write(move |ctx| {
            scheduler::event(
                ctx.conn,
                ctx.now,
                "donation_rejected",
                Some(campaign),
                Some(unit),
                Some(lease_id),
                Some(worker),
                detail,
            )
        })
        .await?;
        Err(Error::InvalidArgument(format!(
            "donation rejected: {reason}"
        )))
    }

    /// Verifies and records a unit result (idempotent per unit).
    pub async fn complete(&self, req: pb::CompleteRequest) -> Result<pb::CompleteReply, Error> {
        let settled = self.prepare_completion(req).await?;
        self.write(move |ctx| {
            scheduler::touch_worker(ctx, settled.worker_id)?;
            settled.settle(ctx)
        })
        .await
    }

    /// Settles several results in order and then leases more work, in one durable commit.
    /// A completion that `complete` would refuse is refused alone (its outcome carries the
    /// error); the others are settled as usual.
    pub async fn complete_batch(
        &self,
        req: pb::CompleteBatchRequest,
    ) -> Result<pb::CompleteBatchReply, Error> {
        if req.completions.len() > MAX_BATCH_COMPLETIONS {
            return Err(Error::InvalidArgument(format!(
                "a batch holds at most {MAX_BATCH_COMPLETIONS} completions, not {}",
                req.completions.len()
            )));
        }
        let worker_id = req.worker_id;
        // Every lease of the batch and its problem in one read (one hop to the store).
        let lease_ids: Vec<i64> = req.completions.iter().map(|c| c.lease_id).collect();
        let found = self.leases_and_problems(worker_id, lease_ids).await?;
        let mut prepared = Vec::with_capacity(req.completions.len());
        for (completion, found) in req.completions.into_iter().zip(found) {
            prepared.push(if completion.worker_id != worker_id {
                Err(Error::InvalidArgument(format!(
                    "a completion for worker {} inside worker {worker_id}'s batch",
                    completion.worker_id
                )))
            } else {
                match found {
                    Ok(problem) => self.check_completion(completion, problem).await,
                    Err(err) => Err(err),
                }
            });
        }
        let (capacity, max_units) = (req.lease_capacity, req.lease_max_units);
        let (outcomes, leases) = self
            .write(move |ctx| {
                scheduler::touch_worker(ctx, worker_id)?;
                let outcomes: Vec<pb::CompleteOutcome> = prepared
                    .into_iter()
                    .map(|p| match p.and_then(|p| settle_alone(ctx, &p)) {
                        Ok(reply) => pb::CompleteOutcome {
                            reply: Some(reply),
                            ..Default::default()
                        },
                        Err(err) => {
                            let status = tonic::Status::from(err);
                            pb::CompleteOutcome {
                                reply: None,
                                error_code: status.code() as i32,
                                error: status.message().to_string(),
                            }
                        }
                    })
                    .collect();
                let leases = if capacity > 0 {
                    scheduler::flows::grant::grant_more(ctx, worker_id, capacity, max_units)?
                } else {
                    Vec::new()
                };
                Ok((outcomes, leases))
            })
            .await?;
        let lease = (capacity > 0).then(|| self.lease_reply(worker_id, capacity, leases));
        Ok(pb::CompleteBatchReply { outcomes, lease })
    }

    /// Reads a completion's lease and re-checks its result (CPU-heavy checks on blocking
    /// threads), ready for the store write.
    async fn prepare_completion(&self, req: pb::CompleteRequest) -> Result<Settlement, Error> {
        let (_, problem) = self.lease_and_problem(req.worker_id, req.lease_id).await?;
        self.check_completion(req, problem).await
    }

    /// Re-checks a completion's result against its campaign's problem.
    async fn check_completion(
        &self,
        req: pb::CompleteRequest,
        problem: Arc<dyn Problem>,
    ) -> Result<Settlement, Error> {
        let result = req
            .result
            .ok_or_else(|| Error::InvalidArgument("a completion needs a result".into()))?;
        let verified = verify_result(problem, &result, &req.unit_payload).await?;
        Ok(Settlement {
            worker_id: req.worker_id,
            lease_id: req.lease_id,
            covered: req.unit_payload,
            verified,
            usage: Usage {
                nodes: result.nodes,
                cpu_seconds: sane_seconds(result.cpu_seconds),
                wall_seconds: sane_seconds(result.wall_seconds),
                solver_version: result.solver_version,
                claim: result.claims.then_some(result.claim_bound),
            },
        })
    }

    /// Takes a lease back unfinished.
    pub async fn release(&self, req: pb::ReleaseRequest) -> Result<pb::ReleaseReply, Error> {
        let usage = Usage {
            nodes: req.nodes,
            cpu_seconds: sane_seconds(req.cpu_seconds),
            ..Default::default()
        };
        self.write(move |ctx| {
            scheduler::release(ctx, req.worker_id, req.lease_id, &req.cursor, usage)
        })
        .await?;
        Ok(pb::ReleaseReply {})
    }

    /// The lease (checked to be `worker_id`'s) and its campaign's problem, in one read (one
    /// hop to the blocking pool; the problem usually comes from the cache).
    async fn lease_and_problem(
        &self,
        worker_id: i64,
        lease_id: i64,
    ) -> Result<(scheduler::LeaseRow, Arc<dyn Problem>), Error> {
        let this = self.clone();
        self.inner
            .store
            .read(move |conn| {
                let lease = scheduler::owned_lease(conn, worker_id, lease_id)?;
                let problem = this.inner.problems.get(conn, lease.campaign_id)?;
                Ok((lease, problem))
            })
            .await
    }

    /// The problems of several of a worker's leases (each checked to be the worker's), in
    /// one read; a lease that fails the check gets its own error.
    async fn leases_and_problems(
        &self,
        worker_id: i64,
        lease_ids: Vec<i64>,
    ) -> Result<Vec<Result<Arc<dyn Problem>, Error>>, Error> {
        let this = self.clone();
        self.inner
            .store
            .read(move |conn| {
                Ok(lease_ids
                    .into_iter()
                    .map(|lease_id| {
                        let lease = scheduler::owned_lease(conn, worker_id, lease_id)?;
                        this.inner.problems.get(conn, lease.campaign_id)
                    })
                    .collect())
            })
            .await
    }

    /// Admits a call from worker `worker_id`: refused when the worker is unknown or banned,
    /// when its identity belongs to another token than the caller's (admin tokens may act
    /// for any worker), or when the worker calls faster than its rate limit.
    pub async fn admit(&self, worker_id: i64, caller: Option<Caller>) -> Result<(), Error> {
        if let Some(Err(_)) = self
            .inner
            .worker_calls
            .as_ref()
            .map(|l| l.check_key(&worker_id))
        {
            return Err(Error::ResourceExhausted(format!(
                "worker {worker_id} calls too often; slow down"
            )));
        }
        let cached = self
            .inner
            .admitted
            .lock()
            .map_err(|_| Error::Internal("worker table poisoned".into()))?
            .get(&worker_id)
            .copied();
        let token_id = match cached {
            Some(token_id) => token_id,
            None => {
                let standing = self
                    .inner
                    .store
                    .read(move |conn| scheduler::worker_standing(conn, worker_id))
                    .await?;
                match standing {
                    None => return Err(Error::UnknownWorker(worker_id)),
                    Some((_, true)) => return Err(Error::Banned(worker_id)),
                    Some((token_id, false)) => {
                        if let Ok(mut admitted) = self.inner.admitted.lock() {
                            admitted.insert(worker_id, token_id);
                        }
                        token_id
                    }
                }
            }
        };
        match caller {
            Some(c) if c.role != Role::Admin && token_id != Some(c.token_id) => {
                Err(Error::PermissionDenied(format!(
                    "worker {worker_id} was registered with another token"
                )))
            }
            _ => Ok(()),
        }
    }

    /// Bans a worker (see [`scheduler::ban_worker`]); returns how many leases it lost.
    pub async fn ban_worker(&self, worker_id: i64, reason: String) -> Result<usize, Error> {
        let taken = self
            .write(move |ctx| scheduler::ban_worker(ctx, worker_id, &reason))
            .await?;
        if let Ok(mut admitted) = self.inner.admitted.lock() {
            admitted.remove(&worker_id);
        }
        Ok(taken)
    }

    /// Re-reads the token table into `auth`.
    pub async fn reload_tokens(&self, auth: &Arc<Authenticator>) -> Result<(), Error> {
        let auth = auth.clone();
        self.inner.store.read(move |conn| auth.reload(conn)).await
    }

    /// Forgets rate-limit state of callers not seen lately (called by the sweep).
    pub fn trim_rate_limits(&self) {
        if let Some(limiter) = &self.inner.worker_calls {
            limiter.retain_recent();
        }
        self.inner.registrations.retain_recent();
    }

    // ---- admin API -------------------------------------------------------------------------

    /// Creates a campaign, or one per member when the parameters name a family; returns
    /// their ids.
    pub async fn create_campaigns(
        &self,
        req: pb::CreateCampaignRequest,
    ) -> Result<Vec<i64>, Error> {
        let ids = self
            .write(move |ctx| {
                scheduler::create_campaigns(
                    ctx,
                    &NewCampaign {
                        problem: &req.problem,
                        params_json: &req.params_json,
                        name: &req.name,
                        verify_rate: (req.verify_rate >= 0.0).then_some(req.verify_rate),
                        max_attempts: (req.max_attempts > 0).then_some(req.max_attempts),
                        family: (!req.family.is_empty()).then_some(req.family.as_str()),
                        target_lease_ms: (req.target_lease_ms != 0)
                            .then_some(req.target_lease_ms.max(-1)),
                    },
                )
            })
            .await?;
        Ok(ids)
    }

    /// One campaign's status.
    pub async fn campaign(&self, campaign_id: i64) -> Result<pb::CampaignStatus, Error> {
        self.inner
            .store
            .read(move |conn| views::campaign(conn, campaign_id))
            .await
    }

    /// Every campaign.
    pub async fn campaigns(&self) -> Result<Vec<pb::CampaignStatus>, Error> {
        self.inner.store.read(views::campaigns).await
    }

    /// Pauses, resumes or cancels a campaign and returns its new status.
    pub async fn change_state(
        &self,
        campaign_id: i64,
        action: Action,
    ) -> Result<pb::CampaignStatus, Error> {
        self.write(move |ctx| scheduler::change_state(ctx, campaign_id, action))
            .await?;
        self.campaign(campaign_id).await
    }

    /// Cluster or campaign status.
    pub async fn status(&self, req: pb::StatusRequest) -> Result<pb::StatusReply, Error> {
        self.inner
            .store
            .read(move |conn| {
                let campaigns = if req.campaign_id > 0 {
                    vec![views::campaign(conn, req.campaign_id)?]
                } else {
                    views::campaigns(conn)?
                };
                let results = if req.with_results && req.campaign_id > 0 {
                    views::results(conn, req.campaign_id)?
                } else {
                    Vec::new()
                };
                Ok(pb::StatusReply {
                    campaigns,
                    workers: views::workers(conn)?,
                    results,
                    coordinator_version: grind_shared::VERSION.to_string(),
                })
            })
            .await
    }

    /// The leaderboard.
    pub async fn leaderboard(&self) -> Result<pb::LeaderboardReply, Error> {
        let entries = self.inner.store.read(views::leaderboard).await?;
        Ok(pb::LeaderboardReply { entries })
    }

    /// Exports a campaign's result in its submission format plus a provenance record.
    pub async fn export(&self, campaign_id: i64) -> Result<pb::ExportReply, Error> {
        let problem = self.problem(campaign_id).await?;
        let (status, record, samples) = self
            .inner
            .store
            .read(move |conn| {
                let status = views::campaign(conn, campaign_id)?;
                let record = views::provenance_record(conn, &status)?;
                let samples = if status.objective == "sample" {
                    views::samples(conn, campaign_id)?
                } else {
                    Vec::new()
                };
                Ok((status, record, samples))
            })
            .await?;
        let submission = if status.objective == "sample" {
            let values: Vec<serde_json::Value> = samples
                .iter()
                .filter_map(|s| serde_json::from_str(s).ok())
                .collect();
            problem.render_samples(&values)
        } else {
            let solution = serde_json::from_str(&status.solution_json).ok();
            problem.render(&status.value, solution.as_ref())
        };
        Ok(pb::ExportReply {
            submission,
            provenance_json: serde_json::to_string_pretty(&record)
                .map_err(|e| Error::Internal(e.to_string()))?,
            file_name: format!("{}-{}.txt", status.problem, campaign_id),
        })
    }

    /// Imports another grind database's export provenance record of a proven optimum (kept
    /// whole) to back the premises of this database's campaigns
    /// (`scheduler::premises::import_record`: refused unless it states a proven optimum whose
    /// solution re-scores to its value here).
    pub async fn import_proof_record(
        &self,
        req: pb::ImportProofRecordRequest,
    ) -> Result<pb::ImportProofRecordReply, Error> {
        if req.record_json.len() > 16 << 20 || req.source.len() > 1000 {
            return Err(Error::InvalidArgument(
                "a proof record is at most 16 MiB and its source at most 1,000 bytes".into(),
            ));
        }
        let record: serde_json::Value = serde_json::from_str(&req.record_json)
            .map_err(|e| Error::InvalidArgument(format!("the proof record is not JSON: {e}")))?;
        let record_id = self
            .write(move |ctx| scheduler::import_record(ctx, &record, &req.source))
            .await?;
        Ok(pb::ImportProofRecordReply { record_id })
    }

    /// Imports a known solution as a campaign's starting incumbent (after verifying it).
    pub async fn import(&self, req: pb::ImportRequest) -> Result<pb::ImportReply, Error> {
        let problem = self.problem(req.campaign_id).await?;
        let score = verify_solution(problem, &req.solution_json)
            .await
            .map_err(|reason| Error::InvalidArgument(format!("import rejected: {reason}")))?;
        let source = if req.source.is_empty() {
            "import".to_string()
        } else {
            format!("import: {}", req.source)
        };
        let (_, accepted) = self
            .write(move |ctx| {
                scheduler::improve(
                    ctx,
                    req.campaign_id,
                    &req.solution_json,
                    score,
                    scheduler::Origin {
                        source: &source,
                        ..Default::default()
                    },
                )
            })
            .await?;
        Ok(pb::ImportReply {
            accepted,
            verified_score: score,
            reason: if accepted {
                String::new()
            } else {
                "not better than the campaign's best".into()
            },
        })
    }
}

fn sane_seconds(seconds: f64) -> f64 {
    if seconds.is_finite() && seconds >= 0.0 {
        seconds.min(1e9)
    } else {
        0.0
    }
}

/// Re-scores a solution with the problem's verifier, off the async runtime.
async fn verify_solution(problem: Arc<dyn Problem>, solution_json: &str) -> Result<i64, String> {
    if solution_json.len() > MAX_SOLUTION_BYTES {
        return Err(format!(
            "solution is {} bytes, more than the {MAX_SOLUTION_BYTES} accepted",
            solution_json.len()
        ));
    }
    let solution: serde_json::Value =
        serde_json::from_str(solution_json).map_err(|e| format!("solution is not JSON: {e}"))?;
    tokio::task::spawn_blocking(move || problem.score(&solution).map_err(|e| e.to_string()))
        .await
        .map_err(|e| format!("verifier crashed: {e}"))?
}

/// Checks a unit result against its campaign's objective; CPU-heavy checks run off the
/// async runtime. A result that does not check out is an error and changes nothing.
/// Most completions one `CompleteBatch` may carry.
pub const MAX_BATCH_COMPLETIONS: usize = 4096;

/// Longest a lease call with nothing to grant is held open waiting for new work, ms.
pub const MAX_LEASE_WAIT_MS: u32 = 2_000;

/// A checked completion waiting for its store write.
struct Settlement {
    worker_id: i64,
    lease_id: i64,
    covered: Vec<u8>,
    verified: VerifiedResult,
    usage: Usage,
}

impl Settlement {
    /// Settles the completion inside the current write.
    fn settle(&self, ctx: &Ctx) -> Result<pb::CompleteReply, Error> {
        scheduler::complete(
            ctx,
            self.worker_id,
            self.lease_id,
            &self.covered,
            &self.verified,
            self.usage,
        )
    }
}

/// Settles one completion of a batch inside its own savepoint: if it fails, what it did
/// (and the effects it noted) is rolled back alone and the rest of the write goes on.
fn settle_alone(ctx: &Ctx, settlement: &Settlement) -> Result<pb::CompleteReply, Error> {
    let saved = ctx.effects();
    let settled = crate::store::in_savepoint(ctx.conn, || settlement.settle(ctx));
    if settled.is_err() {
        ctx.restore_effects(saved);
    }
    settled
}

async fn verify_result(
    problem: Arc<dyn Problem>,
    result: &pb::UnitResult,
    covered_payload: &[u8],
) -> Result<VerifiedResult, Error> {
    if !result.error.is_empty() {
        let mut reason = result.error.clone();
        reason.truncate(2000);
        return Ok(VerifiedResult::Failed(reason));
    }
    match problem.objective() {
        Objective::Count => {
            if result.count.len() > 10_000 {
                return Err(Error::InvalidArgument("count is absurdly long".into()));
            }
            Ok(VerifiedResult::Count(
                parse_count(&result.count)?.to_string(),
            ))
        }
        Objective::Max | Objective::Min => {
            let hits = verify_samples(problem.clone(), &result.samples).await?;
            let children =
                verify_children(problem.clone(), covered_payload, &result.children).await?;
            if result.best_solution_json.is_empty() {
                return Ok(VerifiedResult::Best(None, hits, children));
            }
            let score = verify_solution(problem, &result.best_solution_json)
                .await
                .map_err(|reason| Error::InvalidArgument(format!("result rejected: {reason}")))?;
            if score != result.best_score {
                return Err(Error::InvalidArgument(format!(
                    "result rejected: claimed score {} but the solution scores {score}",
                    result.best_score
                )));
            }
            Ok(VerifiedResult::Best(
                Some((result.best_solution_json.clone(), score)),
                hits,
                children,
            ))
        }
        _ if !result.children.is_empty() => Err(Error::InvalidArgument(
            "child units are only accepted from optimisation campaigns".into(),
        )),
        Objective::Sample => Ok(VerifiedResult::Samples(
            verify_samples(problem, &result.samples).await?,
        )),
    }
}

/// Checks every child unit a result created against its parent, off the runtime, and
/// returns them with their priorities.
async fn verify_children(
    problem: Arc<dyn Problem>,
    parent: &[u8],
    children: &[pb::UnitSpec],
) -> Result<Vec<ChildUnit>, Error> {
    if children.is_empty() {
        return Ok(Vec::new());
    }
    if children.len() > MAX_CHILDREN_PER_RESULT {
        return Err(Error::InvalidArgument(format!(
            "{} child units in one result, more than the {MAX_CHILDREN_PER_RESULT} accepted",
            children.len()
        )));
    }
    let parent = parent.to_vec();
    let children = children.to_vec();
    tokio::task::spawn_blocking(move || {
        children
            .into_iter()
            .enumerate()
            .map(|(index, child)| {
                let mut label = child.label;
                label.truncate(200);
                let priority = problem
                    .child_priority(&parent, &child.payload)
                    .map_err(|e| {
                        Error::InvalidArgument(format!("child unit {index} rejected: {e}"))
                    })?;
                Ok(ChildUnit {
                    label,
                    payload: child.payload,
                    priority,
                })
            })
            .collect()
    })
    .await
    .map_err(|e| Error::Internal(format!("child verifier crashed: {e}")))?
}

/// Checks every sample (or proof-mode hit) with the problem's verifier, off the runtime.
async fn verify_samples(
    problem: Arc<dyn Problem>,
    samples: &[String],
) -> Result<Vec<String>, Error> {
    if samples.is_empty() {
        return Ok(Vec::new());
    }
    if samples.len() > MAX_SAMPLES_PER_RESULT {
        return Err(Error::InvalidArgument(
            "too many samples in one result".into(),
        ));
    }
    let samples = samples.to_vec();
    tokio::task::spawn_blocking(move || {
        for (index, text) in samples.iter().enumerate() {
            let value: serde_json::Value = serde_json::from_str(text)
                .map_err(|e| Error::InvalidArgument(format!("sample {index} is not JSON: {e}")))?;
            problem
                .verify_sample(&value)
                .map_err(|e| Error::InvalidArgument(format!("sample {index} rejected: {e}")))?;
        }
        Ok(samples)
    })
    .await
    .map_err(|e| Error::Internal(format!("sample verifier crashed: {e}")))?
}

/// A quota of `n` calls a second (at least one), with bursts of up to `n` calls.
fn per_second(n: u32) -> Quota {
    Quota::per_second(std::num::NonZeroU32::new(n.max(1)).unwrap_or(std::num::NonZeroU32::MIN))
}
