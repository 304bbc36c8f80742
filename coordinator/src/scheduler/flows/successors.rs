//! Campaigns that build on another campaign's result ([`Chains::predecessor`](grind_shared::problem::Chains::predecessor): the sieve's
//! N on N - 1): linking at creation and adopting the predecessor's result. Closing at the
//! ceiling and the chain after a finish are [`super::finish`].
//!
//! Policy:
//! * **Link at creation.** A new campaign whose problem names a predecessor is linked to a
//!   matching campaign of the database (`campaigns.after_campaign`): the newest finished
//!   one, else the newest running or paused one (in a family, the member before it, created
//!   a moment earlier in the same transaction).
//! * **Wait for leftovers.** While its predecessor is running or paused, a campaign is
//!   granted only the slots that campaigns without a running predecessor leave idle
//!   ([`super::grant::grant_leases`]): workers finish N - 1 first and fill its tail with N,
//!   so no worker idles and little of N's work is done before N - 1's result can help it.
//! * **Adopt at the predecessor's finish.** When the predecessor finishes (`done`), or at
//!   creation when it already has, the campaign takes [`Chains::inherit`](grind_shared::problem::Chains::inherit) of its value and
//!   best solution once: the starting solution is verified like any improvement; the ceiling
//!   is recorded with the premise "the predecessor's optimum is its value"
//!   ([`super::proof::add`]: backed at once when the predecessor proves, later along the
//!   proof chain otherwise), so the campaign's result is proven only when its predecessor's
//!   is. A ceiling that the campaign's own knowledge already beats (its incumbent, or the
//!   problem's initial bound, which promises a better solution) refutes the predecessor's
//!   value: it is not taken (`predecessor_refuted`).
//! * **Close at the ceiling.** When the incumbent reaches the ceiling, nothing better exists
//!   (given the premise): the campaign's active leases are cancelled, its open units closed
//!   without search and it finishes, which may in turn let its own successors adopt.

use grind_shared::problem::Problem;
use serde_json::{json, Value};

use super::{incumbent, proof};
use crate::error::Error;
use crate::scheduler::rules::ceiling::refutes_ceiling;
use crate::scheduler::tables::campaigns;
use crate::scheduler::tables::events::campaign_event;
use crate::scheduler::{Ctx, Origin};

/// Links a new campaign to the campaign its problem builds on, if the database has one, and
/// adopts that campaign's result at once when it has finished (the caller then closes the
/// campaign if it reached its ceiling: [`super::finish::close_if_reached`]). `problem` is
/// the new campaign's instance. Returns whether it adopted a result.
pub fn link(ctx: &Ctx, campaign_id: i64, problem: &dyn Problem) -> Result<bool, Error> {
    let Some(predecessor) = problem.predecessor() else {
        return Ok(false);
    };
    let candidates = campaigns::predecessor_candidates(ctx, &predecessor.problem, campaign_id)?;
    let found = candidates.into_iter().find(|(_, params_json, _)| {
        serde_json::from_str::<Value>(params_json)
            .is_ok_and(|p| predecessor.premise(0).is_about(&predecessor.problem, &p))
    });
    let Some((after, _, state)) = found else {
        return Ok(false);
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
        return Ok(true);
    }
    Ok(false)
}

/// Takes the finished predecessor's result into `campaign_id` (once): the starting solution
/// as an incumbent offer, the ceiling with its premise unless refuted.
pub fn adopt(ctx: &Ctx, campaign_id: i64, after: i64, problem: &dyn Problem) -> Result<(), Error> {
    campaigns::note_inherited(ctx, campaign_id)?;
    let left = campaigns::left_by(ctx, after)?;
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
                incumbent::offer(
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
    let best = campaigns::best_score(ctx.conn, campaign_id)?;
    let refuted_by = refutes_ceiling(problem.objective(), ceiling, best, problem.initial_bound());
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
    if proof::add(ctx, campaign_id, &premise)? {
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
