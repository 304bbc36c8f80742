//! Donations: a worker splits its leased unit and hands parts back as new pending units
//! (leases, units, campaigns' unit sequence, events).

use grind_proto::v1 as pb;
use grind_shared::problem::UnitSpec;
use rusqlite::Connection;
use serde_json::json;

use super::grant::new_unit;
use crate::error::Error;
use crate::scheduler::tables::leases::owned_lease;
use crate::scheduler::tables::{campaigns, events, units};
use crate::scheduler::Ctx;

/// Most units one donation may create.
pub const MAX_DONATED: usize = 100_000;

/// What a donation is checked against: the unit's current payload and the campaign's best
/// verified score (the bound under which dropped parts must hold nothing).
pub fn donation_basis(
    conn: &Connection,
    unit_id: i64,
    campaign_id: i64,
) -> Result<(Vec<u8>, Option<i64>), Error> {
    let payload = units::payload(conn, unit_id)?
        .ok_or_else(|| Error::NotFound(format!("no unit {unit_id}")))?;
    Ok((payload, campaigns::best_score(conn, campaign_id)?))
}

/// A worker splits its leased unit: the donated parts become new pending units and the
/// unit keeps only `remaining_payload` (with `remaining_cursor`). `checked` is the unit
/// payload the donation was checked against (`Problem::check_donation`, before this write):
/// a unit that changed since is refused.
pub fn donate(
    ctx: &Ctx,
    worker_id: i64,
    req: &pb::DonateRequest,
    checked: &[u8],
) -> Result<u32, Error> {
    let lease = owned_lease(ctx.conn, worker_id, req.lease_id)?;
    if lease.state != "active" {
        return Err(Error::FailedPrecondition(format!(
            "lease {} is {}, not active",
            lease.id, lease.state
        )));
    }
    if !units::held_by(ctx, lease.unit_id, lease.id)? {
        return Err(Error::FailedPrecondition(format!(
            "lease {} no longer holds unit {}",
            lease.id, lease.unit_id
        )));
    }
    let (payload, _) = donation_basis(ctx.conn, lease.unit_id, lease.campaign_id)?;
    if payload != checked {
        return Err(Error::FailedPrecondition(format!(
            "unit {} changed while its donation was checked",
            lease.unit_id
        )));
    }
    if req.units.len() > MAX_DONATED {
        return Err(Error::InvalidArgument(format!(
            "{} donated units is more than the {MAX_DONATED} allowed at once",
            req.units.len()
        )));
    }
    if req.remaining_payload.is_empty() {
        return Err(Error::InvalidArgument(
            "a donation must say what the donor keeps (remaining_payload)".into(),
        ));
    }
    let next_seq = campaigns::next_seq(ctx, lease.campaign_id)?;
    let problem = ctx.problems.get(ctx.conn, lease.campaign_id)?;
    let donated: Vec<_> = req
        .units
        .iter()
        .map(|u| {
            let spec = UnitSpec {
                label: u.label.clone(),
                payload: u.payload.clone(),
            };
            new_unit(problem.as_ref(), spec, 1)
        })
        .collect();
    let added = units::insert_units(ctx, lease.campaign_id, next_seq, &donated)?;
    campaigns::advance_sequence(ctx, lease.campaign_id, added)?;
    let cursor = (!req.remaining_cursor.is_empty()).then_some(req.remaining_cursor.as_slice());
    units::keep_remaining(
        ctx,
        lease.unit_id,
        &req.remaining_payload,
        cursor,
        lease.worker_id,
    )?;
    events::append(ctx, "donation", lease.subject(), json!({"units": added}))?;
    if added > 0 {
        // Idle workers waiting in a lease call take the donated units at once.
        ctx.work_appeared();
    }
    Ok(added as u32)
}
