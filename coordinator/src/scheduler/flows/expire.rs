//! Failed attempts: a lease that expired, or a run whose solver failed on its worker. The
//! unit goes back to pending, or fails for good after its campaign's `max_attempts`, and
//! the campaign may then finish.

use serde_json::json;

use super::{finish, lease_end};
use crate::error::Error;
use crate::scheduler::tables::events;
use crate::scheduler::tables::leases::{self, LeaseRow};
use crate::scheduler::tables::units::TakenBack;
use crate::scheduler::Ctx;

/// Ends a lease as a failed attempt of its unit: the campaign may finish when the unit
/// failed for good.
pub fn fail_attempt(ctx: &Ctx, lease: &LeaseRow, state: &str) -> Result<(), Error> {
    let taken = lease_end::end_lease(ctx, lease, state, true, None)?;
    if matches!(taken, TakenBack::Failed(_)) {
        finish::maybe_finish(ctx, lease.campaign_id)?;
    }
    Ok(())
}

/// Expires every active lease whose deadline passed; returns how many.
pub fn expire_leases(ctx: &Ctx) -> Result<usize, Error> {
    let expired = leases::overdue(ctx)?;
    for lease in &expired {
        fail_attempt(ctx, lease, "expired")?;
        events::append(ctx, "lease_expired", lease.subject(), json!({}))?;
    }
    Ok(expired.len())
}
