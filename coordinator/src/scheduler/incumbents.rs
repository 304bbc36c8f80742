//! Incumbents: the best verified solution of an optimisation campaign, and the pruning
//! bounds workers are told. Owns no table: the incumbent is stored on its campaign through
//! [`super::campaigns`].

use grind_proto::v1 as pb;
use grind_shared::problem::Objective;
use rusqlite::{params, Connection};
use serde_json::json;

use super::events::event;
use super::{campaigns, Ctx, Origin};
use crate::error::Error;

/// Records a verified solution as the campaign's incumbent when it beats the current one.
/// Returns the campaign's best score afterwards and whether this solution became it.
pub fn offer_incumbent(
    ctx: &Ctx,
    campaign_id: i64,
    solution_json: &str,
    score: i64,
    origin: Origin,
) -> Result<(Option<i64>, bool), Error> {
    let (objective, best): (String, Option<i64>) = ctx
        .conn
        .prepare_cached("SELECT objective, best_score FROM campaigns WHERE id = ?1")?
        .query_row(params![campaign_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
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
    let event_id = event(
        ctx.conn,
        ctx.now,
        "improvement",
        Some(campaign_id),
        origin.unit_id,
        origin.lease_id,
        origin.worker_id,
        json!({"score": score, "previous": best, "source": origin.source,
               "solver_version": origin.solver_version, "solution": solution_json}),
    )?;
    campaigns::set_incumbent(ctx, campaign_id, score, solution_json, event_id)?;
    Ok((Some(score), true))
}

/// The pruning bounds of every running campaign that has one.
pub fn running_bounds(conn: &Connection) -> Result<Vec<pb::CampaignBound>, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT id, bound FROM campaigns WHERE state = 'running' AND bound IS NOT NULL ORDER BY id",
        )?
        .query_map([], |r| {
            Ok(pb::CampaignBound {
                campaign_id: r.get(0)?,
                bound: r.get(1)?,
            })
        })?
        .collect::<Result<_, _>>()?)
}
