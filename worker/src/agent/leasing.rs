//! Asking for work and keeping it: how many leases the worker takes ([`pace`](super::pace)
//! sizes the queue), the queue of leased units waiting for a thread, and starting them.

use grind_proto::v1 as pb;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::contact::{Refusal, MAX_BACKOFF};
use super::outbox::{Outgoing, UnitTag};
use super::{Agent, Running};
use crate::context::UnitContext;
use crate::coordinator::{is_transient, Coordinator};
use crate::events::WorkerEvent;

/// Most units a lease slot takes when the coordinator grants tiny units in runs.
pub(super) const RUN_UNITS_PER_SLOT: u32 = 256;

impl<C: Coordinator> Agent<C> {
    /// Leases this worker would take now: one per thread plus a queue per thread sized from
    /// measured unit and round-trip times (at least one).
    pub(super) fn free_slots(&self) -> usize {
        if self.paused {
            return 0;
        }
        let threads = self.config.threads;
        (threads * (1 + self.pace.queue_per_thread()))
            .saturating_sub(self.running.len() + self.queued.len())
    }

    pub(super) async fn lease_if_free(&mut self) {
        let free = self.free_slots();
        if free == 0 || Instant::now() < self.next_lease || !self.contact.reachable() {
            return;
        }
        // A worker with nothing to do lets the coordinator hold the call until work appears.
        let idle = self.running.is_empty() && self.queued.is_empty() && self.outbox.is_empty();
        let wait_ms = if idle {
            self.config.idle_lease_wait_ms
        } else {
            0
        };
        let request = pb::LeaseRequest {
            worker_id: self.worker_id,
            capacity: free as u32,
            max_units: (free as u32).saturating_mul(RUN_UNITS_PER_SLOT),
            wait_ms,
        };
        let sent = Instant::now();
        let client = self.client.clone();
        match self
            .waiting(async move { client.lease(request).await })
            .await
        {
            Ok(reply) => {
                if wait_ms == 0 {
                    // A held call's time is waiting, not the round trip.
                    self.pace.round_trip_took(sent.elapsed());
                }
                self.contact.ok();
                self.take_grants(reply);
            }
            Err(status) if is_transient(status.code()) => self.contact.failed("lease", &status),
            Err(status) => {
                if self.on_refusal(&status) != Refusal::Forgotten {
                    tracing::error!("lease refused: {}", status.message());
                    self.next_lease = Instant::now() + MAX_BACKOFF;
                }
            }
        }
    }

    /// Queues granted leases and starts what free threads can take; logs, once each, the
    /// campaigns the coordinator skipped for this worker and why.
    pub(super) fn take_grants(&mut self, reply: pb::LeaseReply) {
        for skip in &reply.skipped {
            if self.skips_logged.insert(skip.campaign_id) {
                tracing::info!(
                    "campaign {} is not for this worker: {}",
                    skip.campaign_id,
                    skip.reason
                );
            }
        }
        if reply.leases.is_empty() {
            let wait = reply.retry_after_ms.clamp(10, 10_000) as u64;
            self.next_lease = Instant::now() + Duration::from_millis(wait);
        }
        if let Some(newest) = reply.leases.iter().map(|g| g.lease_id).max() {
            self.newest_lease = self.newest_lease.max(newest);
        }
        for grant in &reply.leases {
            self.log.emit(WorkerEvent::LeaseGranted {
                worker_id: self.summary.worker_id,
                lease_id: grant.lease_id,
                campaign_id: grant.campaign_id,
                unit_id: grant.unit_id,
                replica: grant.replica,
            });
        }
        self.queued.extend(reply.leases);
        self.start_queued();
    }

    /// Hands queued (not started) leases back untouched.
    pub(super) fn release_queued(&mut self) {
        for grant in std::mem::take(&mut self.queued) {
            self.outbox.push(Outgoing::Release(
                pb::ReleaseRequest {
                    worker_id: self.worker_id,
                    lease_id: grant.lease_id,
                    cursor: grant.cursor,
                    nodes: 0,
                    cpu_seconds: 0.0,
                    reason: String::new(),
                },
                UnitTag {
                    campaign_id: grant.campaign_id,
                    unit_id: grant.unit_id,
                },
            ));
        }
    }

    /// Starts queued units on free threads.
    pub(super) fn start_queued(&mut self) {
        while self.running.len() < self.config.threads {
            match self.queued.pop_front() {
                Some(grant) => self.start(grant),
                None => break,
            }
        }
    }

    fn start(&mut self, grant: pb::LeaseGrant) {
        let lease_id = grant.lease_id;
        tracing::info!(
            "lease {lease_id}: campaign {} unit {} ({}){}",
            grant.campaign_id,
            grant.unit_id,
            grant.unit_label,
            if grant.replica { " [replica]" } else { "" }
        );
        let problem = match self.problems.get(&grant) {
            Ok(problem) => problem,
            Err(e) => {
                self.outbox.push(Outgoing::Complete(
                    pb::CompleteRequest {
                        worker_id: self.worker_id,
                        lease_id,
                        result: Some(pb::UnitResult {
                            error: format!("this worker cannot run the unit: {e}"),
                            ..Default::default()
                        }),
                        unit_payload: grant.unit_payload.clone(),
                    },
                    UnitTag::of(&grant),
                ));
                return;
            }
        };
        if let Err(reason) = problem.requirements().admits(&self.config.host_facts()) {
            // Defence in depth: the coordinator should not have granted it.
            self.refuse(grant, reason);
            return;
        }
        let bound = self
            .bounds
            .for_campaign(grant.campaign_id, problem.objective());
        if let Some(b) = grant.bound {
            bound.offer(b);
        }
        let resume = (!grant.cursor.is_empty()).then(|| grant.cursor.clone());
        let ctx = Arc::new(UnitContext::new(
            lease_id,
            grant.campaign_id,
            grant.unit_payload.clone(),
            resume,
            bound,
            self.runner.events(),
        ));
        self.log.emit(WorkerEvent::UnitStarted {
            worker_id: self.summary.worker_id,
            lease_id,
            campaign_id: grant.campaign_id,
            unit_id: grant.unit_id,
        });
        self.runner
            .spawn(lease_id, problem, grant.unit_payload.clone(), ctx.clone());
        self.running.insert(
            lease_id,
            Running {
                grant,
                ctx,
                cancelled: false,
            },
        );
    }

    /// Hands a granted unit back unstarted because this worker may not run its problem's
    /// solver (`Placement::requirements`), saying why.
    fn refuse(&mut self, grant: pb::LeaseGrant, reason: String) {
        tracing::warn!(
            "lease {}: refusing to run campaign {}'s unit: {reason}",
            grant.lease_id,
            grant.campaign_id
        );
        self.outbox.push(Outgoing::Release(
            pb::ReleaseRequest {
                worker_id: self.worker_id,
                lease_id: grant.lease_id,
                // Empty: the unit's checkpoint stays as it is, its writer's.
                cursor: Vec::new(),
                nodes: 0,
                cpu_seconds: 0.0,
                reason: format!("this worker refuses the unit: {reason}"),
            },
            UnitTag::of(&grant),
        ));
    }
}
