//! Shutdown: ask running units to checkpoint and stop, hand every lease back with its
//! checkpoint, and spend a short grace delivering what is left.

use grind_proto::v1 as pb;
use std::time::{Duration, Instant};

use super::outbox::{Outgoing, UnitTag};
use super::{next_event, Agent};
use crate::coordinator::Coordinator;

/// How long shutdown waits for running units to checkpoint and stop.
const STOP_GRACE: Duration = Duration::from_millis(3000);
/// How long shutdown spends handing leases and results back.
const DELIVERY_GRACE: Duration = Duration::from_millis(1500);

impl<C: Coordinator> Agent<C> {
    pub(super) async fn shut_down(&mut self) {
        tracing::info!(
            "shutting down: checkpointing {} running unit(s)",
            self.running.len()
        );
        for unit in self.running.values() {
            unit.ctx.request_stop();
        }
        self.release_queued();
        let stop_by = Instant::now() + STOP_GRACE;
        while !self.running.is_empty() {
            match tokio::time::timeout_at(stop_by.into(), next_event(&mut self.events)).await {
                Ok(Some(event)) => self.on_event(event),
                _ => break,
            }
        }
        // Units that did not stop in time are handed back with their last checkpoint.
        let stuck: Vec<i64> = self.running.keys().copied().collect();
        for lease_id in stuck {
            if let Some(unit) = self.running.remove(&lease_id) {
                if !unit.cancelled {
                    self.outbox.push(Outgoing::Release(
                        pb::ReleaseRequest {
                            worker_id: self.worker_id,
                            lease_id,
                            cursor: unit.ctx.last_checkpoint().unwrap_or_default(),
                            nodes: unit.ctx.nodes(),
                            cpu_seconds: 0.0,
                            reason: String::new(),
                        },
                        UnitTag::of(&unit.grant),
                    ));
                }
            }
        }
        self.take_waiting_events();
        if self.worker_id != 0 {
            self.contact.now();
            let _ = tokio::time::timeout(DELIVERY_GRACE, self.deliver()).await;
        }
        if !self.outbox.is_empty() {
            tracing::warn!(
                "{} message(s) could not be delivered before exit",
                self.outbox.len()
            );
        }
        self.summary.undelivered = self.outbox.len();
        if let Some(watch) = self.bound_watch.take() {
            watch.abort();
        }
    }
}
