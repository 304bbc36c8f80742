//! A campaign's end: finishing once nothing is left to run, restating a proven solution,
//! closing at a ceiling, and what a finished campaign sets off along the chain: the
//! premises it proves are backed ([`super::proof`]) and the campaigns that build on it adopt
//! its result ([`super::successors`]), which may close them at their ceiling in turn.

use serde_json::json;

use super::{lease_end, proof, successors};
use crate::error::Error;
use crate::scheduler::rules::campaign::{end_state, may_finish};
use crate::scheduler::rules::ceiling::{at_ceiling, AtCeiling};
use crate::scheduler::tables::events::campaign_event;
use crate::scheduler::tables::{campaigns, units};
use crate::scheduler::Ctx;

/// Ends a running campaign once its splitter is exhausted and no unit is left to run; a
/// campaign that finished `done` then backs the premises it proves and hands its result to
/// the campaigns that build on it.
pub fn maybe_finish(ctx: &Ctx, campaign_id: i64) -> Result<(), Error> {
    if finish_if_complete(ctx, campaign_id)? == Some("done") {
        proof::back_dependents(ctx, campaign_id)?;
        on_finished(ctx, campaign_id)?;
    }
    Ok(())
}

/// Ends a running campaign once its splitter is exhausted and no unit is left to run;
/// returns the state it ended in (`done` or `failed`), if it ended.
fn finish_if_complete(ctx: &Ctx, campaign_id: i64) -> Result<Option<&'static str>, Error> {
    // Cheap test first: almost every completion of a campaign happens while its splitter
    // still has units to produce, and then no unit needs counting.
    let (state, split_done) = campaigns::state_and_split_done(ctx, campaign_id)?;
    if !may_finish(&state, split_done) || units::any_open(ctx, campaign_id)? {
        return Ok(None);
    }
    let failed = units::failed_count(ctx, campaign_id)?;
    let new_state = end_state(failed);
    campaigns::set_finished(ctx, campaign_id, new_state)?;
    if new_state == "done" {
        restate_proven_solution(ctx, campaign_id)?;
    }
    let mut detail = json!({"state": new_state, "failed_units": failed});
    if !campaigns::coverage_checked(ctx, campaign_id)? {
        // The units were the user's split: finishing them is the solver's claim.
        detail["claimed"] = true.into();
    }
    campaign_event(ctx, campaign_id, "campaign_finished", detail)?;
    ctx.page_changed();
    ctx.bounds_changed();
    Ok(Some(new_state))
}

/// Lets the problem restate the best solution of a campaign that has just proven it
/// optimal ([`grind_shared::problem::Problem::proven_solution`]).
fn restate_proven_solution(ctx: &Ctx, campaign_id: i64) -> Result<(), Error> {
    let (exhaustive, best) = campaigns::exhaustive_best(ctx, campaign_id)?;
    let Some(best) = best.filter(|_| exhaustive) else {
        return Ok(());
    };
    let Ok(solution) = serde_json::from_str::<serde_json::Value>(&best) else {
        return Ok(());
    };
    let problem = ctx.problems.get(ctx.conn, campaign_id)?;
    if let Some(restated) = problem.proven_solution(&solution) {
        campaigns::restate_best(ctx, campaign_id, &restated.to_string())?;
    }
    Ok(())
}

/// After a campaign's incumbent improved (or it adopted a ceiling): closes it when the
/// incumbent reached its ceiling, and lets its successors adopt its result.
pub fn close_if_reached(ctx: &Ctx, campaign_id: i64) -> Result<(), Error> {
    if close_at_ceiling(ctx, campaign_id)? {
        proof::back_dependents(ctx, campaign_id)?;
        on_finished(ctx, campaign_id)?;
    }
    Ok(())
}

/// After `finished` finished `done`: every campaign waiting on it adopts its result, and
/// those that thereby reach their ceiling finish too, along the chain.
fn on_finished(ctx: &Ctx, finished: i64) -> Result<(), Error> {
    let mut queue = vec![finished];
    while let Some(id) = queue.pop() {
        for successor in campaigns::waiting_on(ctx, id)? {
            let problem = ctx.problems.get(ctx.conn, successor)?;
            successors::adopt(ctx, successor, id, problem.as_ref())?;
            if close_at_ceiling(ctx, successor)? {
                proof::back_dependents(ctx, successor)?;
                queue.push(successor);
            }
        }
    }
    Ok(())
}

/// Closes a running campaign whose incumbent equals its ceiling: its active leases are
/// cancelled, its open units closed unsearched, and it finishes. A ceiling the incumbent has
/// beaten is dropped (`predecessor_refuted`; the search then goes on in full). Returns
/// whether the campaign finished `done`.
fn close_at_ceiling(ctx: &Ctx, campaign_id: i64) -> Result<bool, Error> {
    let (state, objective, ceiling, best) = campaigns::ceiling_row(ctx, campaign_id)?;
    match at_ceiling(&state, &objective, ceiling, best) {
        AtCeiling::Open => Ok(false),
        AtCeiling::Refuted { ceiling, best } => {
            campaigns::set_ceiling(ctx, campaign_id, None)?;
            campaign_event(
                ctx,
                campaign_id,
                "predecessor_refuted",
                json!({"ceiling": ceiling, "refuted_by": "incumbent", "score": best}),
            )?;
            Ok(false)
        }
        AtCeiling::Reached(ceiling) => {
            lease_end::cancel_campaign_leases(ctx, campaign_id)?;
            let closed = units::close_open(ctx, campaign_id)?;
            campaigns::close_split(ctx, campaign_id)?;
            campaign_event(
                ctx,
                campaign_id,
                "closed_at_ceiling",
                json!({"ceiling": ceiling, "units_closed": closed}),
            )?;
            Ok(finish_if_complete(ctx, campaign_id)? == Some("done"))
        }
    }
}
