//! A worker's (already verified) result for a lease: read the lease with its unit and
//! campaign once, decide whether the result is wanted
//! ([`crate::scheduler::rules::settle::intake`]), record it with what it carries (samples,
//! child units, an incumbent) and settle the unit ([`super::settle`]).

use grind_proto::v1 as pb;
use serde_json::json;

use super::{expire, finish, incumbent, settle};
use crate::error::Error;
use crate::scheduler::rules::settle::{intake, Arrival, Intake};
use crate::scheduler::tables::leases::{self, LeaseNow, LeaseRow};
use crate::scheduler::tables::{campaigns, events, results, units};
use crate::scheduler::{Ctx, Origin, Usage, VerifiedResult};

/// Takes a worker's (already verified) result for a lease. Idempotent per unit: a result
/// for a unit that is already finished is acknowledged as a duplicate and changes nothing.
/// The caller has checked that the worker stands (`touch_worker`) in the same write.
pub fn complete(
    ctx: &Ctx,
    worker_id: i64,
    lease_id: i64,
    covered_payload: &[u8],
    result: &VerifiedResult,
    usage: Usage,
) -> Result<pb::CompleteReply, Error> {
    let found = leases::load_with_unit(ctx.conn, lease_id)?
        .ok_or_else(|| Error::NotFound(format!("unknown lease {lease_id}")))?;
    let LeaseNow {
        lease,
        unit_state,
        unit_lease,
        replica_needed,
        payload,
        campaign_state,
    } = found;
    let lease = lease.owned_by(worker_id)?;
    let arrival = Arrival {
        lease_state: &lease.state,
        lease_replica: lease.replica,
        unit_state: &unit_state,
        replica_needed,
        campaign_state: &campaign_state,
    };
    match intake(arrival) {
        Intake::Duplicate => return Ok(duplicate("this lease already delivered its result")),
        Intake::Ignore => return ignore_result(ctx, &lease),
        Intake::Take => {}
    }
    if payload != covered_payload && !matches!(result, VerifiedResult::Failed(_)) {
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
    // A late result from an expired or released lease is still taken when the unit needs
    // it: whoever holds the unit now is told to stop at its next heartbeat.
    if let Some(current) = unit_lease.filter(|&l| l != lease.id) {
        leases::cancel_if_active(ctx, current)?;
    }
    leases::mark_completed(ctx, lease.id)?;
    campaigns::add_usage(ctx, lease.campaign_id, usage)?;
    let result_id = results::insert(ctx, &lease, &value, solution, usage)?;
    events::append(
        ctx,
        "result",
        lease.subject(),
        json!({"value": value, "nodes": usage.nodes, "cpu_seconds": usage.cpu_seconds,
               "wall_seconds": usage.wall_seconds, "replica": lease.replica}),
    )?;
    apply_result(ctx, &lease, result_id, &value, result, usage)?;
    ctx.page_changed();
    Ok(pb::CompleteReply {
        accepted: true,
        duplicate: false,
        detail: String::new(),
    })
}

/// Closes the lease of a result the unit no longer needs, and says so.
fn ignore_result(ctx: &Ctx, lease: &LeaseRow) -> Result<pb::CompleteReply, Error> {
    leases::mark_completed(ctx, lease.id)?;
    events::append(
        ctx,
        "result_ignored",
        lease.subject(),
        json!({"reason": "unit already finished", "lease_state": lease.state}),
    )?;
    Ok(duplicate(
        "the unit is already finished; result not counted again",
    ))
}

/// A solver error on the worker: a failed attempt of the unit.
fn record_failure(ctx: &Ctx, lease: &LeaseRow, reason: &str) -> Result<pb::CompleteReply, Error> {
    expire::fail_attempt(ctx, lease, "failed")?;
    events::append(ctx, "unit_error", lease.subject(), json!({"error": reason}))?;
    Ok(pb::CompleteReply {
        accepted: false,
        duplicate: false,
        detail: format!("solver error recorded: {reason}"),
    })
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
            insert_children(ctx, lease, children)?;
            if let Some((solution, score)) = best {
                incumbent::offer(
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
                finish::close_if_reached(ctx, lease.campaign_id)?;
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
    let added = results::insert_samples(ctx, lease, result_id, samples)?;
    campaigns::add_samples(ctx, lease.campaign_id, added)
}

/// Adds the new child units of a result; a payload the campaign already spawned is skipped.
fn insert_children(
    ctx: &Ctx,
    lease: &LeaseRow,
    children: &[crate::scheduler::ChildUnit],
) -> Result<(), Error> {
    if children.is_empty() {
        return Ok(());
    }
    let problem = ctx.problems.get(ctx.conn, lease.campaign_id)?;
    let mut added = 0i64;
    for child in children {
        let next_seq = campaigns::next_seq(ctx, lease.campaign_id)?;
        let bound = problem.bound_of_unit(&child.payload);
        if units::insert_child(ctx, lease.campaign_id, child, next_seq, bound)? {
            campaigns::advance_sequence(ctx, lease.campaign_id, 1)?;
            added += 1;
        }
    }
    if added > 0 {
        ctx.work_appeared();
    }
    events::append(
        ctx,
        "units_spawned",
        lease.subject(),
        json!({"offered": children.len(), "added": added}),
    )?;
    Ok(())
}

fn duplicate(detail: &str) -> pb::CompleteReply {
    pb::CompleteReply {
        accepted: false,
        duplicate: true,
        detail: detail.to_string(),
    }
}
