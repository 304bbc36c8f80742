//! Heartbeats: renew every lease this worker holds (running, queued, or ended and waiting in
//! the outbox), report progress and checkpoints, and act on the coordinator's answers
//! (cancel a lease, split a unit, tighter bounds).

use grind_proto::v1 as pb;
use std::time::Instant;

use super::contact::Refusal;
use super::Agent;
use crate::coordinator::{is_transient, Coordinator};
use crate::events::WorkerEvent;

impl<C: Coordinator> Agent<C> {
    pub(super) async fn heartbeat_if_due(&mut self) {
        if Instant::now() < self.next_heartbeat || !self.contact.reachable() {
            return;
        }
        self.next_heartbeat = Instant::now() + self.heartbeat_every;
        let request = self.heartbeat_request();
        let client = self.client.clone();
        match self
            .waiting(async move { client.heartbeat(request).await })
            .await
        {
            Ok(reply) => {
                self.contact.ok();
                self.on_heartbeat_reply(reply);
            }
            Err(status) if is_transient(status.code()) => self.contact.failed("heartbeat", &status),
            Err(status) => {
                if self.on_refusal(&status) != Refusal::Forgotten {
                    tracing::error!("heartbeat refused: {}", status.message());
                }
            }
        }
    }

    fn heartbeat_request(&self) -> pb::HeartbeatRequest {
        let leases: Vec<pb::LeaseProgress> = self
            .running
            .values()
            .filter(|r| !r.cancelled)
            .map(|r| pb::LeaseProgress {
                lease_id: r.grant.lease_id,
                nodes: r.ctx.nodes(),
                cursor: r.ctx.take_new_checkpoint().unwrap_or_default(),
                fraction: r.ctx.fraction().unwrap_or(-1.0),
            })
            .chain(self.queued.iter().map(|g| pb::LeaseProgress {
                lease_id: g.lease_id,
                nodes: 0,
                cursor: Vec::new(),
                fraction: -1.0,
            }))
            .collect();
        // Every lease this worker still holds: running, queued, or waiting in the outbox.
        let delivering = self
            .outbox
            .leases()
            .chain(
                self.running
                    .values()
                    .filter(|r| r.cancelled)
                    .map(|r| r.grant.lease_id),
            )
            .collect();
        pb::HeartbeatRequest {
            worker_id: self.worker_id,
            leases,
            complete_list: true,
            delivering,
            newest_lease_id: self.newest_lease,
        }
    }

    fn on_heartbeat_reply(&mut self, reply: pb::HeartbeatReply) {
        for status in reply.leases {
            let cancel = status.verdict == pb::LeaseVerdict::Cancel as i32;
            if cancel {
                self.queued.retain(|g| g.lease_id != status.lease_id);
            }
            if let Some(unit) = self.running.get_mut(&status.lease_id) {
                if cancel {
                    tracing::info!("lease {} cancelled by the coordinator", status.lease_id);
                    unit.cancelled = true;
                    unit.ctx.request_stop();
                    self.log.emit(WorkerEvent::LeaseCancelled {
                        worker_id: self.summary.worker_id,
                        lease_id: status.lease_id,
                    });
                } else {
                    unit.ctx.request_split(status.split_requested);
                }
            }
        }
        for bound in reply.bounds {
            self.bounds.offer(bound.campaign_id, bound.bound);
        }
    }
}
