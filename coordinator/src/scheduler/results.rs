//! Results: a worker's (already verified) result for a lease, taken in as a short sequence
//! of named steps. The only writer of the `results` and `samples` tables.

use grind_proto::v1 as pb;
use rusqlite::params;
use serde_json::json;

use super::events::event;
use super::incumbents::offer_incumbent;
use super::leases::{self, owned_lease, LeaseRow};
use super::{campaigns, settle, successors, units, Ctx, Origin, Usage, VerifiedResult};
use crate::error::Error;

/// Takes a worker's (already verified) result for a lease. Idempotent per unit: a result
/// for a unit that is already finished is acknowledged as a duplicate and changes nothing.
pub fn complete(
    ctx: &Ctx,
    worker_id: i64,
    lease_id: i64,
    covered_payload: &[u8],
    result: &VerifiedResult,
    usage: Usage,
) -> Result<pb::CompleteReply, Error> {
    let lease = owned_lease(ctx.conn, worker_id, lease_id)?;
    if lease.state == "completed" || lease.state == "failed" {
        return Ok(duplicate("this lease already delivered its result"));
    }
    let unit = UnitNow::load(ctx, &lease)?;
    if !unit.wants_result_of(&lease) {
        return ignore_result(ctx, &lease);
    }
    if unit.payload != covered_payload && !matches!(result, VerifiedResult::Failed(_)) {
        return Err(Error::FailedPrecondition(format!(
            "lease {lease_id}: the result covers a different part of unit {} than the unit \
             now holds (a donation was lost or the payload is wrong); not counted",
            lease.unit_id
        )));
    }
    let (value, solution) = match result {
        VerifiedResult::Failed(reason) => return record_failure(ctx, &lease, reason),
        VerifiedResult::Count(count) => (count.clone(), None),
        VerifiedResult::Best(Some((solution, score)), _, _) => {
            (score.to_string(), Some(solution.as_str()))
        }
        VerifiedResult::Best(None, _, _) => ("none".to_string(), None),
        VerifiedResult::Samples(samples) => (samples.len().to_string(), None),
    };
    take_over_unit(ctx, &lease, unit.lease_id)?;
    campaigns::add_usage(ctx, lease.campaign_id, usage)?;
    let result_id = record_result(ctx, &lease, &value, solution, usage)?;
    apply_result(ctx, &lease, result_id, &value, result, usage)?;
    Ok(pb::CompleteReply {
        accepted: true,
        duplicate: false,
        detail: String::new(),
    })
}

/// The state of a lease's unit (and its campaign) when a result arrives.
struct UnitNow {
    /// pending, leased, done or failed.
    state: String,
    /// The lease holding the unit now, if any.
    lease_id: Option<i64>,
    /// Whether the unit waits for a replica run.
    replica_needed: bool,
    /// What the unit holds now (a donation shrinks it).
    payload: Vec<u8>,
    /// The campaign's state.
    campaign_state: String,
}

impl UnitNow {
    fn load(ctx: &Ctx, lease: &LeaseRow) -> Result<UnitNow, Error> {
        let (state, lease_id, replica_needed, payload) = ctx
            .conn
            .prepare_cached(
                "SELECT state, lease_id, replica_needed, payload FROM units WHERE id = ?1",
            )?
            .query_row(params![lease.unit_id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })?;
        let campaign_state = ctx
            .conn
            .prepare_cached("SELECT state FROM campaigns WHERE id = ?1")?
            .query_row(params![lease.campaign_id], |r| r.get(0))?;
        Ok(UnitNow {
            state,
            lease_id,
            replica_needed,
            payload,
            campaign_state,
        })
    }

    /// A result is useful when the unit still needs it: never finished, and (for a replica
    /// run) still waiting for one, in a campaign not cancelled.
    fn wants_result_of(&self, lease: &LeaseRow) -> bool {
        let finished = self.state == "done" || self.state == "failed";
        !finished && lease.replica == self.replica_needed && self.campaign_state != "cancelled"
    }
}

/// Closes the lease of a result the unit no longer needs, and says so.
fn ignore_result(ctx: &Ctx, lease: &LeaseRow) -> Result<pb::CompleteReply, Error> {
    leases::mark_completed(ctx, lease.id)?;
    event(
        ctx.conn,
        ctx.now,
        "result_ignored",
        Some(lease.campaign_id),
        Some(lease.unit_id),
        Some(lease.id),
        Some(lease.worker_id),
        json!({"reason": "unit already finished", "lease_state": lease.state}),
    )?;
    Ok(duplicate(
        "the unit is already finished; result not counted again",
    ))
}

/// A solver error on the worker: a failed attempt of the unit.
fn record_failure(ctx: &Ctx, lease: &LeaseRow, reason: &str) -> Result<pb::CompleteReply, Error> {
    leases::end_lease(ctx, lease, "failed", true, None)?;
    event(
        ctx.conn,
        ctx.now,
        "unit_error",
        Some(lease.campaign_id),
        Some(lease.unit_id),
        Some(lease.id),
        Some(lease.worker_id),
        json!({"error": reason}),
    )?;
    Ok(pb::CompleteReply {
        accepted: false,
        duplicate: false,
        detail: format!("solver error recorded: {reason}"),
    })
}

/// Completes the result's lease. A late result from an expired or released lease is still
/// taken when the unit needs it; whoever holds the unit now (`holder`) is told to stop at
/// its next heartbeat.
fn take_over_unit(ctx: &Ctx, lease: &LeaseRow, holder: Option<i64>) -> Result<(), Error> {
    if let Some(current) = holder.filter(|&l| l != lease.id) {
        leases::cancel_if_active(ctx, current)?;
    }
    leases::mark_completed(ctx, lease.id)
}

/// Stores a run's result, awaiting settlement, and returns its id.
fn record_result(
    ctx: &Ctx,
    lease: &LeaseRow,
    value: &str,
    solution: Option<&str>,
    usage: Usage,
) -> Result<i64, Error> {
    ctx.conn
        .prepare_cached(
            "INSERT INTO results (unit_id, campaign_id, lease_id, worker_id, value, solution, nodes,
                 cpu_seconds, wall_seconds, created_ms, replica, status, solver_version, self_checked,
                 claims, claim_bound)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, 'awaiting', ?12,
                     ?11 AND EXISTS (SELECT 1 FROM results r WHERE r.unit_id = ?1 AND r.worker_id = ?4),
                     ?13, ?14)",
        )?
        .execute(params![
            lease.unit_id,
            lease.campaign_id,
            lease.id,
            lease.worker_id,
            value,
            solution,
            usage.nodes as i64,
            usage.cpu_seconds,
            usage.wall_seconds,
            ctx.now,
            lease.replica,
            usage.solver_version,
            usage.claim.is_some(),
            usage.claim.flatten()
        ])?;
    let result_id = ctx.conn.last_insert_rowid();
    event(
        ctx.conn,
        ctx.now,
        "result",
        Some(lease.campaign_id),
        Some(lease.unit_id),
        Some(lease.id),
        Some(lease.worker_id),
        json!({"value": value, "nodes": usage.nodes, "cpu_seconds": usage.cpu_seconds,
               "wall_seconds": usage.wall_seconds, "replica": lease.replica}),
    )?;
    Ok(result_id)
}

/// Keeps what the result carries (hits, child units, an incumbent) and settles the unit.
fn apply_result(
    ctx: &Ctx,
    lease: &LeaseRow,
    result_id: i64,
    value: &str,
    result: &VerifiedResult,
    usage: Usage,
) -> Result<(), Error> {
    match result {
        VerifiedResult::Count(count) => settle::settle_count(ctx, lease, result_id, count),
        VerifiedResult::Best(best, hits, children) => {
            insert_samples(ctx, lease, result_id, hits)?;
            units::insert_children(ctx, lease, children)?;
            if let Some((solution, score)) = best {
                offer_incumbent(
                    ctx,
                    lease.campaign_id,
                    solution,
                    *score,
                    Origin {
                        worker_id: Some(lease.worker_id),
                        lease_id: Some(lease.id),
                        unit_id: Some(lease.unit_id),
                        source: "unit result",
                        solver_version: usage.solver_version,
                    },
                )?;
            }
            settle::settle_search(ctx, lease, result_id, value)?;
            if best.is_some() {
                successors::close_if_reached(ctx, lease.campaign_id)?;
            }
            Ok(())
        }
        VerifiedResult::Samples(samples) => {
            insert_samples(ctx, lease, result_id, samples)?;
            settle::finish_unit(ctx, lease, value, &[result_id])
        }
        VerifiedResult::Failed(_) => Err(Error::Internal(format!(
            "lease {}: a failed run reached settlement",
            lease.id
        ))),
    }
}

/// Stores a result's verified samples (or hits) and counts them on the campaign.
fn insert_samples(
    ctx: &Ctx,
    lease: &LeaseRow,
    result_id: i64,
    samples: &[String],
) -> Result<(), Error> {
    if samples.is_empty() {
        return Ok(());
    }
    // A replica run of a search unit finds the same hits again: keep each hit once per unit.
    let sql = if lease.replica {
        "INSERT INTO samples (campaign_id, unit_id, result_id, data)
         SELECT ?1, ?2, ?3, ?4 WHERE NOT EXISTS
             (SELECT 1 FROM samples WHERE campaign_id = ?1 AND unit_id = ?2 AND data = ?4)"
    } else {
        "INSERT INTO samples (campaign_id, unit_id, result_id, data) VALUES (?1, ?2, ?3, ?4)"
    };
    let mut insert = ctx.conn.prepare_cached(sql)?;
    let mut added = 0i64;
    for sample in samples {
        added +=
            insert.execute(params![lease.campaign_id, lease.unit_id, result_id, sample])? as i64;
    }
    campaigns::add_samples(ctx, lease.campaign_id, added)
}

/// Marks the runs whose value was accepted for their unit.
pub(crate) fn accept(ctx: &Ctx, result_ids: &[i64]) -> Result<(), Error> {
    let mut accept = ctx
        .conn
        .prepare_cached("UPDATE results SET status = 'accepted' WHERE id = ?1")?;
    for id in result_ids {
        accept.execute(params![id])?;
    }
    Ok(())
}

/// Rejects runs: a lie (a contradicted search claim) or a claim discarded with its liar.
pub(crate) fn reject(ctx: &Ctx, result_ids: &[i64]) -> Result<(), Error> {
    let mut reject = ctx
        .conn
        .prepare_cached("UPDATE results SET status = 'rejected' WHERE id = ?1")?;
    for id in result_ids {
        reject.execute(params![id])?;
    }
    Ok(())
}

/// Rejects every run of a unit still awaiting settlement (the agreeing runs are accepted
/// right after).
pub(crate) fn reject_awaiting(ctx: &Ctx, unit_id: i64) -> Result<(), Error> {
    ctx.conn
        .prepare_cached(
            "UPDATE results SET status = 'rejected' WHERE unit_id = ?1 AND status = 'awaiting'",
        )?
        .execute(params![unit_id])?;
    Ok(())
}

fn duplicate(detail: &str) -> pb::CompleteReply {
    pb::CompleteReply {
        accepted: false,
        duplicate: true,
        detail: detail.to_string(),
    }
}
