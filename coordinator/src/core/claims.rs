//! What the plumbing of users' own solvers (issue 29) adds to the worker API, for any
//! problem: improvements held when the problem's verifier itself fails on them (no strike
//! against the worker; see `scheduler/flows/held.rs`), the campaigns a worker may not run
//! noted once each in the event log, and the size limit on checkpoint cursors.

use grind_proto::v1 as pb;
use grind_shared::problem::MAX_CHECKPOINT_BYTES;
use serde_json::json;

use super::Coordinator;
use crate::error::Error;
use crate::scheduler::{self, HeldInsert, LeaseRow};

/// Refuses a checkpoint cursor over [`MAX_CHECKPOINT_BYTES`], naming the lease and sizes.
pub fn check_checkpoint_size(lease_id: i64, cursor: &[u8]) -> Result<(), Error> {
    if cursor.len() > MAX_CHECKPOINT_BYTES {
        return Err(Error::InvalidArgument(format!(
            "lease {lease_id}: the checkpoint is {} bytes, more than the {MAX_CHECKPOINT_BYTES} \
             accepted",
            cursor.len()
        )));
    }
    Ok(())
}

impl Coordinator {
    /// An improvement whose verifier failed: held for the operator (`claim_held` event), not
    /// accepted, and answered without an error (no strike against the worker).
    pub(super) async fn hold_improvement(
        &self,
        req: &pb::ImprovementRequest,
        lease: &LeaseRow,
        reason: String,
    ) -> Result<pb::ImprovementReply, Error> {
        let solution = req.solution_json.clone();
        let (claimed_score, subject) = (req.claimed_score, lease.subject());
        let detail = reason.clone();
        let id = self
            .write(move |ctx| {
                scheduler::hold_claim(
                    ctx,
                    &HeldInsert {
                        subject,
                        source: "improvement",
                        solution: &solution,
                        claimed_score,
                        reason: &detail,
                    },
                )
            })
            .await?;
        tracing::warn!(
            "the verifier failed on an improvement of campaign {} by worker {}: {reason}",
            lease.campaign_id,
            lease.worker_id
        );
        Ok(pb::ImprovementReply {
            accepted: false,
            verified_score: 0,
            campaign_best: None,
            reason: format!(
                "the verifier failed ({reason}); the claim is held for the operator{}",
                id.map_or(String::new(), |id| format!(" (held claim {id})"))
            ),
            held: true,
            unchecked: false,
        })
    }

    /// Records, once per worker and campaign in this coordinator's life, that a campaign
    /// was skipped for a worker and why (`campaign_skipped` event). A failed write is
    /// logged and tried again at the next skip.
    pub(super) async fn note_skipped(&self, worker_id: i64, skipped: &[pb::CampaignSkipped]) {
        let fresh: Vec<pb::CampaignSkipped> = match self.inner.skips_noted.lock() {
            Ok(mut noted) => skipped
                .iter()
                .filter(|s| noted.insert((worker_id, s.campaign_id)))
                .cloned()
                .collect(),
            Err(_) => return,
        };
        if fresh.is_empty() {
            return;
        }
        let events = fresh.clone();
        let written = self
            .write(move |ctx| {
                for skip in &events {
                    scheduler::event(
                        ctx.conn,
                        ctx.now,
                        "campaign_skipped",
                        Some(skip.campaign_id),
                        None,
                        None,
                        Some(worker_id),
                        json!({"reason": skip.reason}),
                    )?;
                }
                Ok(())
            })
            .await;
        if let Err(e) = written {
            tracing::warn!("cannot record the campaigns skipped for worker {worker_id}: {e}");
            if let Ok(mut noted) = self.inner.skips_noted.lock() {
                for skip in &fresh {
                    noted.remove(&(worker_id, skip.campaign_id));
                }
            }
        }
    }
}
