//! Campaigns that build on another campaign's result ([`Problem::predecessor`]: the sieve's
//! N on N - 1). Owns no table: it links, adopts and closes through the owners.
//!
//! Policy:
//! * **Link at creation.** A new campaign whose problem names a predecessor is linked to a
//!   matching campaign of the database (`campaigns.after_campaign`): the newest finished
//!   one, else the newest running or paused one (in a family, the member before it, created
//!   a moment earlier in the same transaction).
//! * **Wait for leftovers.** While its predecessor is running or paused, a campaign is
//!   granted only the slots that campaigns without a running predecessor leave idle
//!   ([`super::leases::grant_leases`]): workers finish N - 1 first and fill its tail with N,
//!   so no worker idles and little of N's work is done before N - 1's result can help it.
//! * **Adopt at the predecessor's finish.** When the predecessor finishes (`done`), or at
//!   creation when it already has, the campaign takes [`Problem::inherit`] of its value and
//!   best solution once: the starting solution is verified like any improvement; the ceiling
//!   is recorded with the premise "the predecessor's optimum is its value"
//!   ([`super::premises::add`]: backed at once when the predecessor proves, later along the
//!   proof chain otherwise), so the campaign's result is proven only when its predecessor's
//!   is. A ceiling that the campaign's own knowledge already beats (its incumbent, or the
//!   problem's initial bound, which promises a better solution) refutes the predecessor's
//!   value: it is not taken (`predecessor_refuted`).
//! * **Close at the ceiling.** When the incumbent reaches the ceiling, nothing better exists
//!   (given the premise): the campaign's active leases are cancelled, its open units closed
//!   without search and it finishes, which may in turn let its own successors adopt.

use grind_shared::problem::{Objective, Problem};
use rusqlite::{params, OptionalExtension};
use serde_json::{json, Value};

use super::campaigns::{self, finish_if_complete};
use super::events::campaign_event;
use super::{incumbents, leases, premises, units, Ctx, Origin};
use crate::error::Error;

/// Links a new campaign to the campaign its problem builds on, if the database has one, and
/// adopts that campaign's result at once when it has finished. `problem` is the new
/// campaign's instance.
pub(crate) fn link(ctx: &Ctx, campaign_id: i64, problem: &dyn Problem) -> Result<(), Error> {
    let Some(predecessor) = problem.predecessor() else {
        return Ok(());
    };
    let candidates: Vec<(i64, String, String)> = ctx
        .conn
        .prepare_cached(
            "SELECT id, params_json, state FROM campaigns
             WHERE problem = ?1 AND id != ?2 AND state IN ('running', 'paused', 'done')
             ORDER BY state = 'done' DESC, id DESC",
        )?
        .query_map(params![predecessor.problem, campaign_id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?
        .collect::<Result<_, _>>()?;
    let found = candidates.into_iter().find(|(_, params_json, _)| {
        serde_json::from_str::<Value>(params_json)
            .is_ok_and(|p| predecessor.premise(0).is_about(&predecessor.problem, &p))
    });
    let Some((after, _, state)) = found else {
        return Ok(());
    };
    campaigns::set_after(ctx, campaign_id, after)?;
    campaign_event(
        ctx,
        campaign_id,
        "predecessor_linked",
        json!({"predecessor": after, "label": predecessor.label, "state": state}),
    )?;
    if state == "done" {
        adopt(ctx, campaign_id, after, problem)?;
        close_if_reached(ctx, campaign_id)?;
    }
    Ok(())
}

/// After `finished` finished `done`: every campaign waiting on it adopts its result, and
/// those that thereby reach their ceiling finish too, along the chain.
pub(crate) fn on_finished(ctx: &Ctx, finished: i64) -> Result<(), Error> {
    let mut queue = vec![finished];
    while let Some(id) = queue.pop() {
        let waiting: Vec<i64> = ctx
            .conn
            .prepare_cached(
                "SELECT id FROM campaigns WHERE after_campaign = ?1 AND NOT inherited
                   AND state IN ('running', 'paused') ORDER BY id",
            )?
            .query_map(params![id], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        for successor in waiting {
            let problem = ctx.problems.get(ctx.conn, successor)?;
            adopt(ctx, successor, id, problem.as_ref())?;
            if close_at_ceiling(ctx, successor)? {
                premises::back_dependents(ctx, successor)?;
                queue.push(successor);
            }
        }
    }
    Ok(())
}

/// After a campaign's incumbent improved: closes it when the incumbent reached its ceiling
/// (and lets its successors adopt its result).
pub(crate) fn close_if_reached(ctx: &Ctx, campaign_id: i64) -> Result<(), Error> {
    if close_at_ceiling(ctx, campaign_id)? {
        premises::back_dependents(ctx, campaign_id)?;
        on_finished(ctx, campaign_id)?;
    }
    Ok(())
}

/// What a predecessor campaign left: its state, whether exhaustive, its best score and
/// solution.
type Left = (String, bool, Option<i64>, Option<String>);

/// Takes the finished predecessor's result into `campaign_id` (once): the starting solution
/// as an incumbent offer, the ceiling with its premise unless refuted.
fn adopt(ctx: &Ctx, campaign_id: i64, after: i64, problem: &dyn Problem) -> Result<(), Error> {
    campaigns::note_inherited(ctx, campaign_id)?;
    let left: Option<Left> = ctx
        .conn
        .prepare_cached(
            "SELECT state, exhaustive, best_score, best_solution FROM campaigns WHERE id = ?1",
        )?
        .query_row(params![after], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })
        .optional()?;
    let unusable = |why: String| -> Result<(), Error> {
        campaign_event(
            ctx,
            campaign_id,
            "predecessor_unusable",
            json!({"predecessor": after, "reason": why}),
        )?;
        Ok(())
    };
    let (value, solution) = match left {
        Some((state, true, Some(value), Some(solution))) if state == "done" => (value, solution),
        _ => return unusable("it did not finish an exhaustive search with a solution".into()),
    };
    let solution: Value = serde_json::from_str(&solution)
        .map_err(|e| Error::Internal(format!("campaign {after}: stored best: {e}")))?;
    let inherited = match problem.inherit(value, &solution) {
        Ok(inherited) => inherited,
        Err(e) => return unusable(e.to_string()),
    };
    if let Some(start) = inherited.start {
        match problem.score(&start) {
            Ok(score) => {
                let source = format!("predecessor: campaign {after}");
                incumbents::offer_incumbent(
                    ctx,
                    campaign_id,
                    &start.to_string(),
                    score,
                    Origin {
                        source: &source,
                        ..Default::default()
                    },
                )?;
            }
            Err(e) => unusable(format!("its starting solution: {e}"))?,
        }
    }
    let (Some(ceiling), Some(predecessor)) = (inherited.ceiling, problem.predecessor()) else {
        return Ok(());
    };
    let best: Option<i64> = ctx
        .conn
        .prepare_cached("SELECT best_score FROM campaigns WHERE id = ?1")?
        .query_row(params![campaign_id], |r| r.get(0))?;
    // The ceiling is refuted when a known solution beats it, or when the problem's initial
    // bound promises one that does (a campaign searches only for solutions beating it).
    let objective = problem.objective();
    let beats = |score: i64| objective.improves(score, Some(ceiling));
    let refuted_by = best
        .filter(|&b| beats(b))
        .map(|b| ("incumbent", b))
        .or(problem
            .initial_bound()
            .filter(|&b| !objective.improves(ceiling, Some(b)))
            .map(|b| ("initial bound", b)));
    if let Some((what, by)) = refuted_by {
        campaign_event(
            ctx,
            campaign_id,
            "predecessor_refuted",
            json!({"predecessor": after, "value": value, "ceiling": ceiling,
                   "refuted_by": what, "score": by}),
        )?;
        return Ok(());
    }
    let premise = predecessor.premise(value);
    if premises::add(ctx, campaign_id, &premise)? {
        campaigns::set_ceiling(ctx, campaign_id, Some(ceiling))?;
        campaign_event(
            ctx,
            campaign_id,
            "predecessor_adopted",
            json!({"predecessor": after, "premise": premise.label, "value": value,
                   "ceiling": ceiling}),
        )?;
    }
    Ok(())
}

/// Closes a running campaign whose incumbent equals its ceiling: its active leases are
/// cancelled, its open units closed unsearched, and it finishes. A ceiling the incumbent has
/// beaten is dropped (`predecessor_refuted`; the search then goes on in full). Returns
/// whether the campaign finished `done`.
fn close_at_ceiling(ctx: &Ctx, campaign_id: i64) -> Result<bool, Error> {
    let row: (String, String, Option<i64>, Option<i64>) = ctx
        .conn
        .prepare_cached(
            "SELECT state, objective, ceiling, best_score FROM campaigns WHERE id = ?1",
        )?
        .query_row(params![campaign_id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })?;
    let (state, objective, Some(ceiling), Some(best)) = row else {
        return Ok(false);
    };
    if state != "running" {
        return Ok(false);
    }
    if best != ceiling {
        let beaten = Objective::parse(&objective).is_some_and(|o| o.improves(best, Some(ceiling)));
        if beaten {
            campaigns::set_ceiling(ctx, campaign_id, None)?;
            campaign_event(
                ctx,
                campaign_id,
                "predecessor_refuted",
                json!({"ceiling": ceiling, "refuted_by": "incumbent", "score": best}),
            )?;
        }
        return Ok(false);
    }
    for lease in &leases::active_of_campaign(ctx.conn, campaign_id)? {
        leases::end_lease(ctx, lease, "cancelled", false, None)?;
    }
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
