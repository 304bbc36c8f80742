//! The worker API: registration, leases (held open while there is nothing to grant),
//! heartbeats, improvements, donations, completions (one, or a batch settled in one commit
//! with more leases) and releases. Each reads what it must outside the write, verifies
//! ([`super::verify`]), then makes one store write through a scheduler flow.

use grind_proto::v1 as pb;
use grind_shared::problem::Problem;
use std::sync::Arc;
use std::time::Duration;

use super::verify::{checked_provenance, verify_result, verify_solution, Refuted};
use super::Coordinator;
use crate::auth::Caller;
use crate::error::Error;
use crate::scheduler::{self, Ctx, Usage, VerifiedResult};

/// Most completions one `CompleteBatch` may carry.
pub const MAX_BATCH_COMPLETIONS: usize = 4096;

/// Longest a lease call with nothing to grant is held open waiting for new work, ms.
pub const MAX_LEASE_WAIT_MS: u32 = 2_000;

impl Coordinator {
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
            let granted = self
                .write(move |ctx| scheduler::grant_leases(ctx, worker_id, capacity, max_units))
                .await?;
            let waited_out = tokio::time::Instant::now() >= deadline;
            if !granted.leases.is_empty() || capacity == 0 || waited_out {
                let mut reply = self.lease_reply(worker_id, capacity, granted).await;
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

    /// The reply to a request for `capacity` leases that got `granted`; notes a short answer
    /// (the worker is hungry: running units are then asked to donate) and, once per worker
    /// and campaign, a campaign skipped for the worker (`campaign_skipped` event).
    async fn lease_reply(
        &self,
        worker_id: i64,
        capacity: u32,
        granted: scheduler::Granted,
    ) -> pb::LeaseReply {
        let scheduler::Granted { leases, skipped } = granted;
        self.note_skipped(worker_id, &skipped).await;
        self.note_hunger(worker_id, (leases.len() as u32) < capacity);
        self.note_granted(worker_id, &leases);
        let retry_after_ms = if leases.is_empty() {
            self.inner.config.heartbeat_interval_ms.clamp(100, 5_000)
        } else {
            0
        };
        pb::LeaseReply {
            leases,
            retry_after_ms,
            skipped,
        }
    }

    /// Renews leases.
    pub async fn heartbeat(&self, req: pb::HeartbeatRequest) -> Result<pb::HeartbeatReply, Error> {
        if req.leases.len() > 100_000 {
            return Err(Error::InvalidArgument(
                "too many leases in one heartbeat".into(),
            ));
        }
        for progress in &req.leases {
            super::claims::check_checkpoint_size(progress.lease_id, &progress.cursor)?;
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
        let (lease, problem, best) = self
            .lease_and_problem(req.worker_id, req.lease_id, true)
            .await?;
        if lease.campaign_id != req.campaign_id {
            return Err(Error::InvalidArgument(format!(
                "lease {} belongs to campaign {}, not to campaign {}",
                lease.id, lease.campaign_id, req.campaign_id
            )));
        }
        let objective = problem.objective();
        if objective.is_optimisation() && !objective.improves(req.claimed_score, best) {
            // Whatever the solution really scores, it cannot change the incumbent: the
            // verifier (for an exec campaign, a process start) is not run for it.
            return Ok(pb::ImprovementReply {
                accepted: false,
                verified_score: 0,
                campaign_best: best,
                reason: "its claimed score is not better than the campaign's best; not checked"
                    .into(),
                held: false,
                unchecked: true,
            });
        }
        let score = match verify_solution(problem, &req.solution_json).await {
            Ok(score) => score,
            Err(Refuted::VerifierFailed(reason)) => {
                return self.hold_improvement(&req, &lease, reason).await
            }
            Err(Refuted::Invalid(reason)) => return self.reject_improvement(&req, reason).await,
        };
        if score != req.claimed_score {
            let reason = format!(
                "claimed score {} but the solution scores {score}",
                req.claimed_score
            );
            return self.reject_improvement(&req, reason).await;
        }
        self.inner
            .checked
            .remember(lease.id, &req.solution_json, score);
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
            held: false,
            unchecked: false,
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
        super::claims::check_checkpoint_size(req.lease_id, &req.remaining_cursor)?;
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
        let lease_id = req.lease_id;
        let settled = self.prepare_completion(req).await?;
        let reply = self
            .write(move |ctx| {
                scheduler::touch_worker(ctx, settled.worker_id)?;
                settled.settle(ctx)
            })
            .await?;
        self.forget_granted([lease_id]);
        Ok(reply)
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
        let found = self
            .leases_and_problems(worker_id, lease_ids.clone())
            .await?;
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
                    scheduler::Granted::default()
                };
                Ok((outcomes, leases))
            })
            .await?;
        self.forget_granted(
            lease_ids
                .iter()
                .zip(&outcomes)
                .filter(|(_, outcome)| outcome.reply.is_some())
                .map(|(&lease_id, _)| lease_id),
        );
        let lease = if capacity > 0 {
            Some(self.lease_reply(worker_id, capacity, leases).await)
        } else {
            None
        };
        Ok(pb::CompleteBatchReply { outcomes, lease })
    }

    /// Finds a completion's problem (remembered from the grant, else read with its lease)
    /// and re-checks its result (CPU-heavy checks on blocking threads), ready for the store
    /// write, which reads the lease.
    async fn prepare_completion(&self, req: pb::CompleteRequest) -> Result<Settlement, Error> {
        let problem = match self.granted_problem(req.worker_id, req.lease_id) {
            Some(found) => found?,
            None => {
                self.lease_and_problem(req.worker_id, req.lease_id, false)
                    .await?
                    .1
            }
        };
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
        let provenance = checked_provenance(&result.provenance_json)?;
        let known = self
            .inner
            .checked
            .recall(req.lease_id, &result.best_solution_json);
        let verified = verify_result(problem, &result, &req.unit_payload, known).await?;
        Ok(Settlement {
            worker_id: req.worker_id,
            lease_id: req.lease_id,
            covered: req.unit_payload,
            verified,
            provenance,
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
        super::claims::check_checkpoint_size(req.lease_id, &req.cursor)?;
        let usage = Usage {
            nodes: req.nodes,
            cpu_seconds: sane_seconds(req.cpu_seconds),
            ..Default::default()
        };
        let lease_id = req.lease_id;
        let mut reason = req.reason;
        reason.truncate(2000);
        self.write(move |ctx| {
            scheduler::release(
                ctx,
                req.worker_id,
                req.lease_id,
                &req.cursor,
                usage,
                &reason,
            )
        })
        .await?;
        self.forget_granted([lease_id]);
        Ok(pb::ReleaseReply {})
    }

    /// The lease (checked to be `worker_id`'s), its campaign's problem and, when `with_best`,
    /// the campaign's best score, in one read (one hop to the blocking pool; the problem
    /// usually comes from the cache).
    async fn lease_and_problem(
        &self,
        worker_id: i64,
        lease_id: i64,
        with_best: bool,
    ) -> Result<(scheduler::LeaseRow, Arc<dyn Problem>, Option<i64>), Error> {
        let this = self.clone();
        self.inner
            .store
            .read(move |conn| {
                let lease = scheduler::owned_lease(conn, worker_id, lease_id)?;
                let problem = this.inner.problems.get(conn, lease.campaign_id)?;
                let best = if with_best {
                    scheduler::tables::campaigns::best_score(conn, lease.campaign_id)?
                } else {
                    None
                };
                Ok((lease, problem, best))
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
        let remembered: Option<Vec<_>> = lease_ids
            .iter()
            .map(|&lease_id| self.granted_problem(worker_id, lease_id))
            .collect();
        if let Some(found) = remembered {
            return Ok(found);
        }
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
}

fn sane_seconds(seconds: f64) -> f64 {
    if seconds.is_finite() && seconds >= 0.0 {
        seconds.min(1e9)
    } else {
        0.0
    }
}

/// A checked completion waiting for its store write.
struct Settlement {
    worker_id: i64,
    lease_id: i64,
    covered: Vec<u8>,
    verified: VerifiedResult,
    usage: Usage,
    provenance: Option<String>,
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
            self.provenance.as_deref(),
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
