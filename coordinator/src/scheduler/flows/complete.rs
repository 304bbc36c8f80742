//! A worker's (already verified) result for a lease: read the lease with its unit and
//! campaign once, decide whether the result is wanted
//! ([`crate::scheduler::rules::settle::intake`]), record it with what it carries (samples,
//! child units, an incumbent), and settle the unit: read its runs, ask
//! [`crate::scheduler::rules::settle`] what they mean, and write the verdict (the unit done
//! and its value folded into the campaign, put back for a replica run, disputed and run
//! again, or a lie struck and its liar's other unconfirmed claims discarded).

use grind_proto::v1 as pb;
use serde_json::json;

use super::{expire, finish, held, incumbent};
use crate::error::Error;
use crate::scheduler::rules::settle::{
    count_verdict, dispute_gives_up, intake, kept, replicate, search_verdict, Arrival,
    CountVerdict, Intake, Run, SearchCampaign, SearchVerdict,
};
use crate::scheduler::tables::campaigns::{self, SettleInfo};
use crate::scheduler::tables::leases::{self, LeaseNow, LeaseRow};
use crate::scheduler::tables::{events, results, units};
use crate::scheduler::{Ctx, Origin, Subject, Usage, VerifiedResult};

/// Takes a worker's (already verified) result for a lease. Idempotent per unit: a result
/// for a unit that is already finished is acknowledged as a duplicate and changes nothing.
/// The caller has checked that the worker stands (`touch_worker`) in the same write.
/// `provenance` is the solver's record of the run (checked JSON), kept with the result.
pub fn complete(
    ctx: &Ctx,
    worker_id: i64,
    lease_id: i64,
    covered_payload: &[u8],
    result: &VerifiedResult,
    usage: Usage,
    provenance: Option<&str>,
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
    if payload != covered_payload
        && !matches!(
            result,
            VerifiedResult::Failed(_) | VerifiedResult::Held { .. }
        )
    {
        return Err(Error::FailedPrecondition(format!(
            "lease {lease_id}: the result covers a different part of unit {} than the unit \
             now holds (a donation was lost or the payload is wrong); not counted",
            lease.unit_id
        )));
    }
    let (value, solution) = match result {
        VerifiedResult::Failed(reason) => return record_failure(ctx, &lease, reason),
        VerifiedResult::Held {
            solution,
            claimed_score,
            reason,
        } => return held::hold_result(ctx, &lease, solution, *claimed_score, reason),
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
    let result_id = results::insert(ctx, &lease, &value, solution, usage, provenance)?;
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
        held: false,
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
        held: false,
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
        VerifiedResult::Count(count) => settle_count(ctx, lease, result_id, count),
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
            settle_search(ctx, lease, result_id, value)?;
            if best.is_some() {
                finish::close_if_reached(ctx, lease.campaign_id)?;
            }
            Ok(())
        }
        VerifiedResult::Samples(samples) => {
            insert_samples(ctx, lease, result_id, samples)?;
            finish_unit(ctx, lease, value, &[result_id])
        }
        VerifiedResult::Failed(_) | VerifiedResult::Held { .. } => Err(Error::Internal(format!(
            "lease {}: a failed or held run reached settlement",
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
        held: false,
    }
}

/// Settles a count unit after its run `result_id` (value `count`).
fn settle_count(ctx: &Ctx, lease: &LeaseRow, result_id: i64, count: &str) -> Result<(), Error> {
    let campaign = campaigns::settle_info(ctx, lease.campaign_id)?;
    let earlier = results::awaiting(ctx, lease.unit_id, result_id)?;
    let drawn = replicate(campaign.seed, lease.unit_id, campaign.verify_rate);
    match count_verdict(result_id, count, &earlier, drawn) {
        CountVerdict::Replica => ask_for_replica(ctx, lease, count),
        CountVerdict::Done => finish_unit(ctx, lease, count, &[result_id]),
        CountVerdict::Agreed { agreeing, liars } => {
            let disputed = units::disputed(ctx, lease.unit_id)?;
            results::reject_awaiting(ctx, lease.unit_id)?;
            events::append(
                ctx,
                if disputed {
                    "dispute_resolved"
                } else {
                    "replica_agreed"
                },
                lease.subject(),
                json!({"value": count, "agreeing_results": agreeing,
                       "rejected_results": liars.iter().map(|(id, v)| json!({"result": id, "value": v})).collect::<Vec<_>>()}),
            )?;
            finish_unit(ctx, lease, count, &agreeing)
        }
        CountVerdict::Disputed => dispute(ctx, lease, &campaign, count, &earlier),
    }
}

/// Runs disagree: the unit is disputed and runs again on yet another worker, or fails when
/// it has run too often.
fn dispute(
    ctx: &Ctx,
    lease: &LeaseRow,
    campaign: &SettleInfo,
    count: &str,
    earlier: &[(i64, String)],
) -> Result<(), Error> {
    let runs = results::awaiting_count(ctx, lease.unit_id)?;
    let give_up = dispute_gives_up(runs, campaign.max_attempts);
    units::mark_disputed(ctx, lease.unit_id, give_up)?;
    let values: Vec<&String> = earlier.iter().map(|(_, v)| v).collect();
    events::append(
        ctx,
        "disputed",
        lease.subject(),
        json!({"value": count, "earlier_values": values, "gave_up": give_up}),
    )?;
    if give_up {
        finish::maybe_finish(ctx, lease.campaign_id)?;
    } else {
        ctx.work_appeared();
    }
    Ok(())
}

/// Settles a search unit after its run `result_id` (value `value`): done, replica wanted,
/// claim refused, a lie judged, or the runs settled on their best value.
fn settle_search(ctx: &Ctx, lease: &LeaseRow, result_id: i64, value: &str) -> Result<(), Error> {
    let judges = ctx
        .problems
        .get(ctx.conn, lease.campaign_id)?
        .finds_stay_in_unit();
    let info = campaigns::settle_info(ctx, lease.campaign_id)?;
    let campaign = SearchCampaign {
        minimise: info.objective == "min",
        exhaustive: info.exhaustive,
        bound: info.bound,
    };
    let this = load_run(ctx, result_id)?;
    let earlier_values = results::awaiting(ctx, lease.unit_id, result_id)?;
    let earlier = earlier_values
        .iter()
        .map(|(id, _)| load_run(ctx, *id))
        .collect::<Result<Vec<_>, _>>()?;
    let drawn = replicate(info.seed, lease.unit_id, info.verify_rate);
    match search_verdict(&campaign, judges, this.clone(), earlier, drawn) {
        SearchVerdict::RefuseClaim(why) => refuse_claim(ctx, lease, &this, &why),
        SearchVerdict::Replica => ask_for_replica(ctx, lease, value),
        SearchVerdict::Done => finish_unit(ctx, lease, value, &[result_id]),
        SearchVerdict::Lie { liars, found } => {
            let why = format!(
                "claimed nothing better than its bound in unit {}, where another run \
                 found a verified solution scoring {found}",
                lease.unit_id
            );
            judge_lie(ctx, lease, &campaign, &liars, &why)
        }
        SearchVerdict::Settled {
            consistent,
            kept,
            runs,
        } => {
            let ids: Vec<i64> = runs.iter().map(|r| r.id).collect();
            events::append(
                ctx,
                if consistent {
                    "replica_agreed"
                } else {
                    "replica_differed"
                },
                lease.subject(),
                json!({"value": value, "earlier_values": earlier_values.iter().map(|(_, v)| v).collect::<Vec<_>>(),
                       "claims": runs.iter().map(Run::claim_json).collect::<Vec<_>>(),
                       "kept": kept, "runs": ids}),
            )?;
            finish_unit(ctx, lease, &kept, &ids)
        }
    }
}

/// One run of a unit, as settlement sees it.
fn load_run(ctx: &Ctx, result_id: i64) -> Result<Run, Error> {
    let (worker_id, value, claims, claim_bound) = results::run(ctx, result_id)?;
    Ok(Run {
        id: result_id,
        worker_id,
        value: value.parse().ok(),
        claim: claims.then_some(claim_bound),
    })
}

/// Runs `liars` of the lease's unit lied: each is struck (`replica_contradicted`, against its
/// worker) and rejected, every other unreplicated claim of its worker in the campaign is
/// discarded and run again (`claims_discarded`), and the unit settles on its honest runs
/// (or runs again when none is left).
fn judge_lie(
    ctx: &Ctx,
    lease: &LeaseRow,
    campaign: &SearchCampaign,
    liars: &[Run],
    why: &str,
) -> Result<(), Error> {
    for liar in liars {
        results::reject(ctx, &[liar.id])?;
        events::append(
            ctx,
            "replica_contradicted",
            Subject {
                lease: None,
                worker: Some(liar.worker_id),
                ..lease.subject()
            },
            json!({"result": liar.id, "claim": liar.claim_json(), "reason": why}),
        )?;
        discard_unreplicated_claims(ctx, lease.campaign_id, liar.worker_id)?;
    }
    let honest = results::awaiting(ctx, lease.unit_id, 0)?;
    if honest.is_empty() {
        // Nothing trustworthy is left of the unit: it runs again from its beginning.
        units::want_replica(ctx, lease.unit_id)?;
        ctx.work_appeared();
        return Ok(());
    }
    let best = campaign.best(honest.iter().filter_map(|(_, v)| v.parse::<i64>().ok()));
    let ids: Vec<i64> = honest.iter().map(|(id, _)| *id).collect();
    finish_unit(ctx, lease, &kept(best), &ids)
}

/// A run whose claim covers less than the coordinator needs is not counted: its result is
/// rejected (`claim_refused`; no strike: an honest worker's own find in another unit can
/// reach its bound a moment before it reaches the coordinator) and the unit runs again on
/// another worker. Its verified finds were kept already.
fn refuse_claim(ctx: &Ctx, lease: &LeaseRow, run: &Run, why: &str) -> Result<(), Error> {
    results::reject(ctx, &[run.id])?;
    units::want_replica(ctx, lease.unit_id)?;
    ctx.work_appeared();
    events::append(
        ctx,
        "claim_refused",
        lease.subject(),
        json!({"result": run.id, "claim": run.claim_json(), "reason": why}),
    )?;
    Ok(())
}

/// Discards every claim of `worker_id` in the campaign that no other run confirmed (a unit
/// done on its result alone): the results are rejected and the units run again.
fn discard_unreplicated_claims(ctx: &Ctx, campaign_id: i64, worker_id: i64) -> Result<(), Error> {
    let alone = results::unreplicated_of_worker(ctx, campaign_id, worker_id)?;
    if alone.is_empty() {
        return Ok(());
    }
    for (unit_id, result_id) in &alone {
        results::reject(ctx, &[*result_id])?;
        units::run_again(ctx, *unit_id)?;
    }
    ctx.work_appeared();
    events::append(
        ctx,
        "claims_discarded",
        Subject {
            worker: Some(worker_id),
            ..Subject::campaign(campaign_id)
        },
        json!({"units": alone.iter().map(|(u, _)| u).collect::<Vec<_>>(),
               "results": alone.iter().map(|(_, r)| r).collect::<Vec<_>>(),
               "reason": "its worker lied about another unit of the campaign"}),
    )?;
    Ok(())
}

/// Puts a unit back to pending for a replica run from its beginning on another worker.
fn ask_for_replica(ctx: &Ctx, lease: &LeaseRow, first_value: &str) -> Result<(), Error> {
    units::want_replica(ctx, lease.unit_id)?;
    ctx.work_appeared();
    events::append(
        ctx,
        "replica_wanted",
        lease.subject(),
        json!({"first_value": first_value}),
    )?;
    Ok(())
}

/// Marks a unit done with its accepted value and folds it into the campaign, which may
/// then finish.
fn finish_unit(ctx: &Ctx, lease: &LeaseRow, value: &str, accepted: &[i64]) -> Result<(), Error> {
    units::mark_done(ctx, lease.unit_id, value)?;
    results::accept(ctx, accepted)?;
    campaigns::fold_unit_value(ctx, lease.campaign_id, value)?;
    finish::maybe_finish(ctx, lease.campaign_id)
}
