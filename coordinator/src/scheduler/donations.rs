//! Donations: a worker splits its leased unit and hands parts back as new pending units.
//! Owns no table: it changes units and the campaign's unit sequence through their owners.

use grind_proto::v1 as pb;
use grind_shared::problem::UnitSpec;
use rusqlite::{params, Connection, OptionalExtension};
use serde_json::json;

use super::events::event;
use super::leases::owned_lease;
use super::{campaigns, units, Ctx};
use crate::error::Error;

/// Most units one donation may create.
pub const MAX_DONATED: usize = 100_000;

/// What a donation is checked against: the unit's current payload and the campaign's best
/// verified score (the bound under which dropped parts must hold nothing).
pub fn donation_basis(
    conn: &Connection,
    unit_id: i64,
    campaign_id: i64,
) -> Result<(Vec<u8>, Option<i64>), Error> {
    let payload: Option<Vec<u8>> = conn
        .prepare_cached("SELECT payload FROM units WHERE id = ?1")?
        .query_row(params![unit_id], |r| r.get(0))
        .optional()?;
    let payload = payload.ok_or_else(|| Error::NotFound(format!("no unit {unit_id}")))?;
    let best: Option<i64> = conn
        .prepare_cached("SELECT best_score FROM campaigns WHERE id = ?1")?
        .query_row(params![campaign_id], |r| r.get(0))?;
    Ok((payload, best))
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
    let holds_unit: bool = ctx
        .conn
        .prepare_cached("SELECT lease_id IS ?2 FROM units WHERE id = ?1")?
        .query_row(params![lease.unit_id, lease.id], |r| r.get(0))?;
    if !holds_unit {
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
    let next_seq: i64 = ctx
        .conn
        .prepare_cached("SELECT next_seq FROM campaigns WHERE id = ?1")?
        .query_row(params![lease.campaign_id], |r| r.get(0))?;
    let donated: Vec<_> = req
        .units
        .iter()
        .map(|u| {
            units::NewUnit::single(UnitSpec {
                label: u.label.clone(),
                payload: u.payload.clone(),
            })
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
    event(
        ctx.conn,
        ctx.now,
        "donation",
        Some(lease.campaign_id),
        Some(lease.unit_id),
        Some(lease.id),
        Some(worker_id),
        json!({"units": added}),
    )?;
    Ok(added as u32)
}
