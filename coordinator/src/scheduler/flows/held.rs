//! Claims held because the problem's verifier itself failed on them
//! (`ProblemError::VerifierFailed`, e.g. a user's checker crashed or hung): the claim is
//! kept whole for the operator (`held_claims`, listed by `grind campaign show`) with a
//! `claim_held` event ("the checker failed on a claim by worker W"), never accepted and
//! never held against its worker. A result held so goes back to pending without counting a
//! failed attempt. Re-checking held claims (after the checker is fixed) is a later step:
//! today the operator sees them and can `grind import` a solution by hand.

use grind_proto::v1 as pb;
use serde_json::json;

use super::lease_end;
use crate::error::Error;
use crate::scheduler::tables::events;
use crate::scheduler::tables::leases::LeaseRow;
use crate::scheduler::tables::results::{self, HeldInsert};
use crate::scheduler::Ctx;

/// Keeps `claim` and records the `claim_held` event; returns the held claim's id (`None`
/// when the campaign already holds as many as are kept).
pub fn hold_claim(ctx: &Ctx, claim: &HeldInsert) -> Result<Option<i64>, Error> {
    let id = results::hold(ctx, claim)?;
    let mut reason = claim.reason.to_string();
    reason.truncate(2000);
    events::append(
        ctx,
        "claim_held",
        claim.subject,
        json!({"message": format!("the checker failed on a claim by worker {}: {reason}",
                                  claim.subject.worker.unwrap_or(0)),
               "source": claim.source, "claimed": claim.claimed_score, "reason": reason,
               "held_claim": id, "kept": id.is_some()}),
    )?;
    ctx.page_changed();
    Ok(id)
}

/// A unit result whose verifier failed: the claim is held; an active lease ends `released`
/// and its unit goes back to pending (its checkpoint kept), no attempt counted.
pub fn hold_result(
    ctx: &Ctx,
    lease: &LeaseRow,
    solution: &str,
    claimed_score: i64,
    reason: &str,
) -> Result<pb::CompleteReply, Error> {
    let id = hold_claim(
        ctx,
        &HeldInsert {
            subject: lease.subject(),
            source: "result",
            solution,
            claimed_score,
            reason,
        },
    )?;
    if lease.state == "active" {
        lease_end::end_lease(ctx, lease, "released", false, None)?;
    }
    let held = id.map_or("not kept: too many held".to_string(), |id| {
        format!("held claim {id}")
    });
    Ok(pb::CompleteReply {
        accepted: false,
        duplicate: false,
        held: true,
        detail: format!(
            "the verifier failed on this result ({reason}); the claim is held for the \
             operator ({held}) and the unit runs again"
        ),
    })
}
