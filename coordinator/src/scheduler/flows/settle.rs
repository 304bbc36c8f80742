//! Settling a unit: reads its runs, asks [`crate::scheduler::rules::settle`] what they mean,
//! and writes the verdict: the unit done (its value folded into the campaign), put back for
//! a replica run, disputed and run again, or a lie struck and its liar's other unconfirmed
//! claims discarded.

use serde_json::json;

use super::finish;
use crate::error::Error;
use crate::scheduler::rules::settle::{
    count_verdict, dispute_gives_up, kept, replicate, search_verdict, CountVerdict, Run,
    SearchCampaign, SearchVerdict,
};
use crate::scheduler::tables::campaigns::{self, SettleInfo};
use crate::scheduler::tables::leases::LeaseRow;
use crate::scheduler::tables::{events, results, units};
use crate::scheduler::{Ctx, Subject};

/// Settles a count unit after its run `result_id` (value `count`).
pub fn settle_count(ctx: &Ctx, lease: &LeaseRow, result_id: i64, count: &str) -> Result<(), Error> {
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
pub fn settle_search(
    ctx: &Ctx,
    lease: &LeaseRow,
    result_id: i64,
    value: &str,
) -> Result<(), Error> {
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
pub fn finish_unit(
    ctx: &Ctx,
    lease: &LeaseRow,
    value: &str,
    accepted: &[i64],
) -> Result<(), Error> {
    units::mark_done(ctx, lease.unit_id, value)?;
    results::accept(ctx, accepted)?;
    campaigns::fold_unit_value(ctx, lease.campaign_id, value)?;
    finish::maybe_finish(ctx, lease.campaign_id)
}
