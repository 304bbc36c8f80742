//! Incumbents: the best verified solution of an optimisation campaign, recorded with its
//! `improvement` event and stored on its campaign, whose pruning bound it tightens.

use grind_shared::problem::Objective;
use serde_json::json;

use crate::error::Error;
use crate::scheduler::tables::{campaigns, events};
use crate::scheduler::{Ctx, Origin, Subject};

/// Records a verified solution as the campaign's incumbent when it beats the current one.
/// Returns the campaign's best score afterwards and whether this solution became it.
pub fn offer(
    ctx: &Ctx,
    campaign_id: i64,
    solution_json: &str,
    score: i64,
    origin: Origin,
) -> Result<(Option<i64>, bool), Error> {
    let (objective, best) = campaigns::objective_and_best(ctx, campaign_id)?;
    let objective = Objective::parse(&objective)
        .ok_or_else(|| Error::Internal(format!("campaign {campaign_id} has no objective")))?;
    if !objective.is_optimisation() {
        return Err(Error::FailedPrecondition(format!(
            "campaign {campaign_id} is a {objective} campaign: it has no incumbent"
        )));
    }
    if !objective.improves(score, best) {
        return Ok((best, false));
    }
    let about = Subject {
        campaign: Some(campaign_id),
        unit: origin.unit_id,
        lease: origin.lease_id,
        worker: origin.worker_id,
    };
    let event_id = events::append(
        ctx,
        "improvement",
        about,
        json!({"score": score, "previous": best, "source": origin.source,
               "solver_version": origin.solver_version, "solution": solution_json}),
    )?;
    campaigns::set_incumbent(ctx, campaign_id, score, solution_json, event_id)?;
    ctx.page_changed();
    ctx.bounds_changed();
    Ok((Some(score), true))
}
