//! The outbox: everything the coordinator must hear, delivered in order and held while it
//! is away. Completions at the front travel as one `CompleteBatch` that also asks for work;
//! a coordinator without batches (UNIMPLEMENTED) gets them one by one from then on.

use grind_proto::v1 as pb;
use std::collections::VecDeque;
use std::time::Instant;
use tonic::{Code, Status};

use super::leasing::RUN_UNITS_PER_SLOT;
use super::Agent;
use crate::coordinator::{is_transient, Coordinator};
use crate::events::WorkerEvent;

/// Most completions sent in one `CompleteBatch`.
const MAX_BATCH: usize = 1024;

/// The unit a lease is for (for the event stream).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct UnitTag {
    pub campaign_id: i64,
    pub unit_id: i64,
}

impl UnitTag {
    pub(super) fn of(grant: &pb::LeaseGrant) -> UnitTag {
        UnitTag {
            campaign_id: grant.campaign_id,
            unit_id: grant.unit_id,
        }
    }
}

/// A message waiting to be delivered to the coordinator, in order.
pub(super) enum Outgoing {
    Complete(pb::CompleteRequest, UnitTag),
    Improvement(pb::ImprovementRequest),
    Release(pb::ReleaseRequest, UnitTag),
    Donate(pb::DonateRequest),
}

/// The messages not yet delivered, oldest first.
pub(super) struct Outbox {
    items: VecDeque<Outgoing>,
    /// False once the coordinator answered that it has no `CompleteBatch` (older grind).
    batches: bool,
}

impl Default for Outbox {
    fn default() -> Self {
        Outbox {
            items: VecDeque::new(),
            batches: true,
        }
    }
}

impl Outbox {
    /// Queues `item` behind everything already waiting. An improvement replaces the
    /// undelivered improvements of its own lease at the back of the queue: a lease reports
    /// only better solutions (or a longer model at the same cost), so the older ones could
    /// only cost the coordinator a checker run each. Nothing is dropped from before a
    /// completion, release or donation: those keep seeing the bounds they were sent after.
    pub(super) fn push(&mut self, item: Outgoing) {
        if let Outgoing::Improvement(new) = &item {
            let tail = self
                .items
                .iter()
                .rev()
                .take_while(|queued| matches!(queued, Outgoing::Improvement(_)))
                .count();
            let start = self.items.len() - tail;
            let mut index = start;
            while index < self.items.len() {
                match &self.items[index] {
                    Outgoing::Improvement(old) if old.lease_id == new.lease_id => {
                        self.items.remove(index);
                    }
                    _ => index += 1,
                }
            }
        }
        self.items.push_back(item);
    }

    /// Messages waiting.
    pub(super) fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether nothing is waiting.
    pub(super) fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The leases whose end (result, release, donation) is still waiting to be delivered.
    pub(super) fn leases(&self) -> impl Iterator<Item = i64> + '_ {
        self.items.iter().filter_map(|item| match item {
            Outgoing::Complete(req, _) => Some(req.lease_id),
            Outgoing::Release(req, _) => Some(req.lease_id),
            Outgoing::Donate(req) => Some(req.lease_id),
            Outgoing::Improvement(_) => None,
        })
    }

    /// Takes up to [`MAX_BATCH`] completions from the front.
    fn take_completions(&mut self) -> Vec<(pb::CompleteRequest, UnitTag)> {
        let mut completions = Vec::new();
        while completions.len() < MAX_BATCH {
            match self.items.front() {
                Some(Outgoing::Complete(..)) => {
                    if let Some(Outgoing::Complete(req, tag)) = self.items.pop_front() {
                        completions.push((req, tag));
                    }
                }
                _ => break,
            }
        }
        completions
    }

    /// Puts completions back at the front, in their order.
    fn requeue_front(&mut self, completions: Vec<(pb::CompleteRequest, UnitTag)>) {
        for (req, tag) in completions.into_iter().rev() {
            self.items.push_front(Outgoing::Complete(req, tag));
        }
    }
}

impl<C: Coordinator> Agent<C> {
    /// Delivers the outbox in order for as long as the coordinator answers.
    pub(super) async fn deliver(&mut self) {
        while self.contact.reachable() {
            if self.outbox.batches
                && matches!(self.outbox.items.front(), Some(Outgoing::Complete(..)))
            {
                if !self.deliver_batch().await {
                    return;
                }
                continue;
            }
            let Some(item) = self.outbox.items.pop_front() else {
                return;
            };
            let outcome = self.deliver_one(&item).await;
            match outcome {
                Ok(()) => self.contact.ok(),
                Err(status) if is_transient(status.code()) => {
                    self.outbox.items.push_front(item);
                    self.contact.failed("delivery", &status);
                    return;
                }
                Err(status) => {
                    self.on_refusal(&status);
                    tracing::error!("the coordinator refused a delivery: {}", status.message());
                    if let Outgoing::Complete(req, tag) = &item {
                        self.log_refused_result(req.lease_id, *tag, &status);
                    }
                    self.summary.refused += 1;
                }
            }
        }
    }

    /// Sends one message on its own.
    async fn deliver_one(&mut self, item: &Outgoing) -> Result<(), Status> {
        let client = self.client.clone();
        match item {
            Outgoing::Complete(req, tag) => {
                let call = req.clone();
                let reply = self
                    .waiting(async move { client.complete(call).await })
                    .await?;
                self.note_completion(req.lease_id, *tag, &reply);
            }
            Outgoing::Improvement(req) => {
                let call = req.clone();
                let reply = self
                    .waiting(async move { client.improve(call).await })
                    .await?;
                if reply.unchecked {
                    tracing::info!(
                        "improvement {} for campaign {}: not better than its best {:?}",
                        req.claimed_score,
                        req.campaign_id,
                        reply.campaign_best
                    );
                } else if reply.held {
                    tracing::warn!(
                        "improvement {} for campaign {}: {}",
                        req.claimed_score,
                        req.campaign_id,
                        reply.reason
                    );
                } else {
                    tracing::info!(
                        "improvement {} for campaign {}: {}",
                        reply.verified_score,
                        req.campaign_id,
                        if reply.accepted {
                            "accepted"
                        } else {
                            "not better"
                        }
                    );
                }
                if reply.accepted {
                    self.log.emit(WorkerEvent::ImprovementAccepted {
                        worker_id: self.summary.worker_id,
                        lease_id: req.lease_id,
                        campaign_id: req.campaign_id,
                        score: reply.verified_score,
                    });
                }
                if let Some(best) = reply.campaign_best {
                    self.bounds.offer(req.campaign_id, best);
                }
            }
            Outgoing::Release(req, tag) => {
                let call = req.clone();
                self.waiting(async move { client.release(call).await })
                    .await?;
                self.log.emit(WorkerEvent::LeaseReleased {
                    worker_id: self.summary.worker_id,
                    lease_id: req.lease_id,
                    campaign_id: tag.campaign_id,
                    unit_id: tag.unit_id,
                });
            }
            Outgoing::Donate(req) => {
                let call = req.clone();
                let reply = self
                    .waiting(async move { client.donate(call).await })
                    .await?;
                tracing::info!("lease {}: {} unit(s) donated", req.lease_id, reply.accepted);
                self.log.emit(WorkerEvent::UnitsDonated {
                    worker_id: self.summary.worker_id,
                    lease_id: req.lease_id,
                    accepted: reply.accepted,
                });
            }
        }
        Ok(())
    }

    /// Sends the completions at the front of the outbox as one batch that also asks for
    /// more work. False when the coordinator could not be reached (the batch stays queued).
    async fn deliver_batch(&mut self) -> bool {
        let completions = self.outbox.take_completions();
        let lease_capacity = if Instant::now() >= self.next_lease {
            self.free_slots() as u32
        } else {
            0
        };
        let request = pb::CompleteBatchRequest {
            worker_id: self.worker_id,
            completions: completions.iter().map(|(req, _)| req.clone()).collect(),
            lease_capacity,
            lease_max_units: lease_capacity.saturating_mul(RUN_UNITS_PER_SLOT),
        };
        let sent = Instant::now();
        let client = self.client.clone();
        match self
            .waiting(async move { client.complete_batch(request).await })
            .await
        {
            Ok(reply) => {
                self.pace.round_trip_took(sent.elapsed());
                self.contact.ok();
                for ((req, tag), outcome) in completions.iter().zip(reply.outcomes) {
                    match outcome.reply {
                        Some(reply) => self.note_completion(req.lease_id, *tag, &reply),
                        None => {
                            let status =
                                Status::new(Code::from_i32(outcome.error_code), outcome.error);
                            tracing::error!(
                                "the coordinator refused the result of lease {}: {}",
                                req.lease_id,
                                status.message()
                            );
                            self.on_refusal(&status);
                            self.log_refused_result(req.lease_id, *tag, &status);
                            self.summary.refused += 1;
                        }
                    }
                }
                if let Some(lease) = reply.lease {
                    self.take_grants(lease);
                }
                true
            }
            Err(status) if status.code() == Code::Unimplemented => {
                tracing::warn!(
                    "the coordinator has no batched completions; sending them one by one"
                );
                self.outbox.batches = false;
                self.outbox.requeue_front(completions);
                true
            }
            Err(status) if is_transient(status.code()) => {
                self.outbox.requeue_front(completions);
                self.contact.failed("delivery", &status);
                false
            }
            Err(status) => {
                // The batch as a whole was refused (the worker itself, not one result).
                self.on_refusal(&status);
                tracing::error!("the coordinator refused a delivery: {}", status.message());
                if self.worker_id == 0 || self.contact.locked_out().is_some() {
                    self.outbox.requeue_front(completions);
                } else {
                    for (req, tag) in &completions {
                        self.log_refused_result(req.lease_id, *tag, &status);
                    }
                    self.summary.refused += completions.len() as u64;
                }
                false
            }
        }
    }

    /// Counts an acknowledged completion.
    fn note_completion(&mut self, lease_id: i64, tag: UnitTag, reply: &pb::CompleteReply) {
        if reply.held {
            // The verifier failed on it, not the worker: the unit runs again.
            tracing::warn!("lease {lease_id}: {}", reply.detail);
            return;
        }
        if reply.duplicate {
            tracing::info!("lease {lease_id}: {}", reply.detail);
            self.log.emit(WorkerEvent::ResultDuplicate {
                worker_id: self.summary.worker_id,
                lease_id,
                campaign_id: tag.campaign_id,
                unit_id: tag.unit_id,
            });
        } else {
            self.summary.units_done += 1;
        }
        if reply.accepted {
            tracing::debug!("lease {lease_id}: result accepted");
            self.log.emit(WorkerEvent::ResultAccepted {
                worker_id: self.summary.worker_id,
                lease_id,
                campaign_id: tag.campaign_id,
                unit_id: tag.unit_id,
            });
        }
    }

    fn log_refused_result(&self, lease_id: i64, tag: UnitTag, status: &Status) {
        self.log.emit(WorkerEvent::ResultRefused {
            worker_id: self.summary.worker_id,
            lease_id,
            campaign_id: tag.campaign_id,
            unit_id: tag.unit_id,
            code: status.code() as i32,
            reason: status.message().to_string(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn improvement(lease_id: i64, claimed_score: i64) -> Outgoing {
        Outgoing::Improvement(pb::ImprovementRequest {
            lease_id,
            claimed_score,
            ..Default::default()
        })
    }

    fn completion(lease_id: i64) -> Outgoing {
        Outgoing::Complete(
            pb::CompleteRequest {
                lease_id,
                ..Default::default()
            },
            UnitTag::default(),
        )
    }

    /// (lease, claimed score or -1 for a completion) of every queued item, in order.
    fn queued(outbox: &Outbox) -> Vec<(i64, i64)> {
        outbox
            .items
            .iter()
            .map(|item| match item {
                Outgoing::Improvement(req) => (req.lease_id, req.claimed_score),
                Outgoing::Complete(req, _) => (req.lease_id, -1),
                _ => unreachable!("only improvements and completions here"),
            })
            .collect()
    }

    #[test]
    fn a_leases_newer_improvement_replaces_its_undelivered_ones() {
        let mut outbox = Outbox::default();
        outbox.push(improvement(1, 40));
        outbox.push(improvement(2, 45));
        outbox.push(improvement(1, 38));
        outbox.push(improvement(1, 37));
        assert_eq!(queued(&outbox), vec![(2, 45), (1, 37)]);
    }

    #[test]
    fn improvements_before_a_completion_stay() {
        let mut outbox = Outbox::default();
        outbox.push(improvement(1, 40));
        outbox.push(completion(2));
        outbox.push(improvement(1, 39));
        outbox.push(improvement(1, 38));
        assert_eq!(queued(&outbox), vec![(1, 40), (2, -1), (1, 38)]);
    }
}
