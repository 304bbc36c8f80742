//! What running units report (improvements, donations, their end), turned into outbox
//! messages in the order it happened; a freed thread takes the next queued unit at once.

use grind_proto::v1 as pb;

use super::outbox::{Outgoing, UnitTag};
use super::problems::solver_version_of;
use super::results::{self, Report};
use super::Agent;
use crate::context::{Finished, FoundImprovement, UnitEvent};
use crate::coordinator::Coordinator;

impl<C: Coordinator> Agent<C> {
    /// Handles one unit event, then starts queued units on the threads it freed.
    pub(super) fn on_event(&mut self, event: UnitEvent) {
        self.handle_event(event);
        self.start_queued();
    }

    /// Handles every event already waiting, so that their results travel in one batch.
    pub(super) fn take_waiting_events(&mut self) {
        while let Some(Ok(event)) = self.events.as_mut().map(|rx| rx.try_recv()) {
            self.on_event(event);
        }
    }

    fn handle_event(&mut self, event: UnitEvent) {
        match event {
            UnitEvent::Improved(found) => self.on_improvement(found),
            UnitEvent::Finished(done) => self.on_finished(done),
            UnitEvent::Donated {
                lease_id,
                units,
                remaining,
                cursor,
            } => {
                tracing::info!("lease {lease_id}: donating {} unit(s)", units.len());
                self.outbox.push(Outgoing::Donate(pb::DonateRequest {
                    worker_id: self.worker_id,
                    lease_id,
                    units: units
                        .into_iter()
                        .map(|u| pb::UnitSpec {
                            label: u.label,
                            payload: u.payload,
                        })
                        .collect(),
                    remaining_payload: remaining,
                    remaining_cursor: cursor,
                }));
            }
        }
    }

    fn on_improvement(&mut self, found: FoundImprovement) {
        let solution_json = found.found.solution.to_string();
        let solver_version = self
            .running
            .get(&found.lease_id)
            .map_or(0, |unit| solver_version_of(&unit.grant.problem));
        self.outbox
            .push(Outgoing::Improvement(pb::ImprovementRequest {
                worker_id: self.worker_id,
                lease_id: found.lease_id,
                campaign_id: found.campaign_id,
                solution_json,
                claimed_score: found.found.score,
                solver_version,
            }));
    }

    fn on_finished(&mut self, done: Finished) {
        let Some(unit) = self.running.remove(&done.lease_id) else {
            return;
        };
        let (lease_id, cpu_seconds, wall_seconds) =
            (done.lease_id, done.cpu_seconds, done.wall_seconds);
        let nodes = unit.ctx.nodes();
        let tag = UnitTag::of(&unit.grant);
        match results::report(done, nodes, solver_version_of(&unit.grant.problem)) {
            Report::Stopped => {
                if !unit.cancelled {
                    // Stopped for shutdown: hand the lease back with its checkpoint.
                    self.outbox.push(Outgoing::Release(
                        pb::ReleaseRequest {
                            worker_id: self.worker_id,
                            lease_id,
                            cursor: unit.ctx.last_checkpoint().unwrap_or_default(),
                            nodes,
                            cpu_seconds,
                            reason: String::new(),
                        },
                        tag,
                    ));
                }
            }
            Report::Result(mut result) => {
                result.provenance_json = unit.ctx.provenance_json().unwrap_or_default();
                self.pace.unit_took(wall_seconds);
                tracing::info!(
                    "lease {lease_id} finished in {wall_seconds:.3}s wall, {cpu_seconds:.3}s CPU"
                );
                self.outbox.push(Outgoing::Complete(
                    pb::CompleteRequest {
                        worker_id: self.worker_id,
                        lease_id,
                        result: Some(result),
                        unit_payload: unit.ctx.payload(),
                    },
                    tag,
                ));
            }
        }
    }
}
