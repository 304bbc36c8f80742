//! Lease ends other than a result: release by the worker, cancellation, and the grace
//! period after a coordinator restart. Ending a lease takes its unit back (leases, units,
//! events). Ends that count a failed attempt are [`super::expire`].

use serde_json::{json, Value};

use crate::error::Error;
use crate::scheduler::tables::leases::{self, LeaseRow};
use crate::scheduler::tables::units::{self, TakenBack};
use crate::scheduler::tables::{campaigns, events};
use crate::scheduler::{Ctx, Usage};

/// Ends a lease in `state`; when it still holds its unit, the unit goes back to pending
/// (counting a failed attempt when `count_attempt`), keeping or replacing its checkpoint,
/// or fails for good after its campaign's `max_attempts` (`unit_failed`). A caller that
/// counts attempts finishes the campaign when its unit failed ([`super::expire`]).
pub fn end_lease(
    ctx: &Ctx,
    lease: &LeaseRow,
    state: &str,
    count_attempt: bool,
    cursor: Option<&[u8]>,
) -> Result<TakenBack, Error> {
    leases::set_ended(ctx, lease.id, state)?;
    let taken = units::take_back(
        ctx,
        lease.unit_id,
        lease.id,
        lease.worker_id,
        count_attempt,
        cursor,
    )?;
    match taken {
        TakenBack::Failed(attempts) => {
            events::append(
                ctx,
                "unit_failed",
                lease.subject(),
                json!({"attempts": attempts, "last": state}),
            )?;
        }
        TakenBack::Pending => ctx.work_appeared(),
        TakenBack::NotHeld => {}
    }
    ctx.page_changed();
    Ok(taken)
}

/// Cancels every active lease of a campaign (paused, cancelled, closed at its ceiling).
pub fn cancel_campaign_leases(ctx: &Ctx, campaign_id: i64) -> Result<(), Error> {
    for lease in &leases::active_of_campaign(ctx.conn, campaign_id)? {
        end_lease(ctx, lease, "cancelled", false, None)?;
    }
    Ok(())
}

/// Gives every active lease a full lease time from now: called when the coordinator starts,
/// so the time it was down does not expire work that workers kept doing.
pub fn grace_after_restart(ctx: &Ctx) -> Result<usize, Error> {
    let changed = leases::extend_all_active(ctx, ctx.now + ctx.config.lease_ttl_ms)?;
    events::append(
        ctx,
        "coordinator_started",
        Default::default(),
        json!({"version": grind_shared::VERSION, "git_commit": grind_shared::GIT_COMMIT,
               "active_leases": changed}),
    )?;
    Ok(changed)
}

/// A worker gives a lease back unfinished; its checkpoint is kept and no attempt is counted.
/// `reason` (empty for a stop) says why, when the worker refused to run the unit.
pub fn release(
    ctx: &Ctx,
    worker_id: i64,
    lease_id: i64,
    cursor: &[u8],
    usage: Usage,
    reason: &str,
) -> Result<(), Error> {
    let lease = leases::owned_lease(ctx.conn, worker_id, lease_id)?;
    if lease.state != "active" {
        return Ok(());
    }
    end_lease(ctx, &lease, "released", false, Some(cursor))?;
    campaigns::add_usage(ctx, lease.campaign_id, usage)?;
    let mut detail = json!({"checkpoint": !cursor.is_empty(), "nodes": usage.nodes,
                            "cpu_seconds": usage.cpu_seconds});
    if !reason.is_empty() {
        detail["reason"] = reason.into();
    }
    released_event(ctx, &lease, detail)
}

/// Records that `lease` was handed back (by its worker, or taken back as forgotten).
pub fn released_event(ctx: &Ctx, lease: &LeaseRow, detail: Value) -> Result<(), Error> {
    events::append(ctx, "lease_released", lease.subject(), detail)?;
    Ok(())
}
