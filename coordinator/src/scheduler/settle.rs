//! Settling a unit: what its runs' results mean. A unit is done when its result is accepted
//! (with or without a replica run), put back for a replica run when the campaign's draw picks
//! it, or disputed and run again when runs disagree. Owns no table: it changes results, units
//! and campaigns through their owners.

use grind_shared::rng::splitmix64;
use rusqlite::params;
use serde_json::json;

use super::campaigns::{self, maybe_finish_campaign};
use super::events::event;
use super::{results, units, Ctx, LeaseRow};
use crate::error::Error;

/// The other runs of a unit whose results await settlement: (result id, value).
fn other_awaiting_runs(
    ctx: &Ctx,
    unit_id: i64,
    result_id: i64,
) -> Result<Vec<(i64, String)>, Error> {
    Ok(ctx
        .conn
        .prepare_cached(
            "SELECT id, value FROM results WHERE unit_id = ?1 AND status = 'awaiting' AND id != ?2",
        )?
        .query_map(params![unit_id, result_id], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?)
}

/// Decides what a count result means for its unit: accept it, ask for a replica run, or
/// compare it with earlier runs (agreement accepts, disagreement disputes and re-runs).
pub(crate) fn settle_count(
    ctx: &Ctx,
    lease: &LeaseRow,
    result_id: i64,
    count: &str,
) -> Result<(), Error> {
    let earlier = other_awaiting_runs(ctx, lease.unit_id, result_id)?;
    if earlier.is_empty() {
        if wants_replica(ctx, lease)? {
            return ask_for_replica(ctx, lease, count);
        }
        return finish_unit(ctx, lease, count, &[result_id]);
    }
    let agreeing: Vec<i64> = earlier
        .iter()
        .filter(|(_, value)| value == count)
        .map(|(id, _)| *id)
        .chain([result_id])
        .collect();
    if agreeing.len() >= 2 {
        let disputed: bool = ctx
            .conn
            .prepare_cached("SELECT disputed FROM units WHERE id = ?1")?
            .query_row(params![lease.unit_id], |r| r.get(0))?;
        results::reject_awaiting(ctx, lease.unit_id)?;
        let liars: Vec<&(i64, String)> = earlier.iter().filter(|(_, v)| v != count).collect();
        event(
            ctx.conn,
            ctx.now,
            if disputed {
                "dispute_resolved"
            } else {
                "replica_agreed"
            },
            Some(lease.campaign_id),
            Some(lease.unit_id),
            Some(lease.id),
            Some(lease.worker_id),
            json!({"value": count, "agreeing_results": agreeing,
                   "rejected_results": liars.iter().map(|(id, v)| json!({"result": id, "value": v})).collect::<Vec<_>>()}),
        )?;
        return finish_unit(ctx, lease, count, &agreeing);
    }
    // Disagreement: mark the unit disputed and run it again on yet another worker.
    let (runs, max_attempts): (i64, i64) = ctx
        .conn
        .prepare_cached(
            "SELECT (SELECT count(*) FROM results WHERE unit_id = ?1 AND status = 'awaiting'),
                    max_attempts FROM campaigns WHERE id = ?2",
        )?
        .query_row(params![lease.unit_id, lease.campaign_id], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?;
    let give_up = runs > max_attempts + 1;
    units::mark_disputed(ctx, lease.unit_id, give_up)?;
    let values: Vec<&String> = earlier.iter().map(|(_, v)| v).collect();
    event(
        ctx.conn,
        ctx.now,
        "disputed",
        Some(lease.campaign_id),
        Some(lease.unit_id),
        Some(lease.id),
        Some(lease.worker_id),
        json!({"value": count, "earlier_values": values, "gave_up": give_up}),
    )?;
    if give_up {
        maybe_finish_campaign(ctx, lease.campaign_id)?;
    }
    Ok(())
}

/// Decides what a search unit's result means: done, or (drawn at the campaign's replication
/// rate) run again from its beginning on another worker. A search run can only be checked by
/// running it again: a worker that hides the best solution of its part of the search space
/// leaves no trace in what it returns. Both runs' verified solutions were already offered as
/// incumbents and both runs' child units and hits are kept (duplicates skipped).
///
/// Each run of an exhaustive search claims "nothing better than B in this unit" (B: the
/// bound it pruned against, [`super::Usage::claim`]); a claim better than any bound the
/// coordinator shared is not counted. When the problem's finds stay in their unit
/// (`Problem::finds_stay_in_unit`), runs whose claims and verified solutions fit together
/// agree (`replica_agreed`) whatever their values, as runs prune with different bounds, and
/// a run whose claim another run's verified solution contradicts lied
/// (`replica_contradicted`): it is struck, its result rejected, and its other unreplicated
/// claims in the campaign are discarded and run again. Other runs (older workers without
/// claims, heuristic searches, finds that may leave their unit such as the grid's polished
/// walks) are compared by value only (`replica_differed` when they differ). The unit keeps
/// the best value of the runs it accepts.
pub(crate) fn settle_search(
    ctx: &Ctx,
    lease: &LeaseRow,
    result_id: i64,
    value: &str,
) -> Result<(), Error> {
    let judges = ctx
        .problems
        .get(ctx.conn, lease.campaign_id)?
        .finds_stay_in_unit();
    let campaign = SearchCampaign::load(ctx, lease.campaign_id)?;
    let this = Run::load(ctx, result_id)?;
    if campaign.exhaustive {
        if let Some(why) = campaign.claim_weaker_than_shared(&this) {
            return refuse_claim(ctx, lease, &this, &why);
        }
    }
    let earlier = other_awaiting_runs(ctx, lease.unit_id, result_id)?;
    if earlier.is_empty() {
        if wants_replica(ctx, lease)? {
            return ask_for_replica(ctx, lease, value);
        }
        return finish_unit(ctx, lease, value, &[result_id]);
    }
    let mut runs = earlier
        .iter()
        .map(|(id, _)| Run::load(ctx, *id))
        .collect::<Result<Vec<_>, _>>()?;
    runs.push(this);
    let best =
        runs.iter()
            .filter_map(|r| r.value)
            .reduce(|a, b| if campaign.better(b, a) { b } else { a });
    if campaign.exhaustive && judges {
        if let Some(found) = best {
            let liars: Vec<Run> = runs
                .iter()
                .filter(|r| r.claim_contradicted_by(found, &campaign))
                .cloned()
                .collect();
            if !liars.is_empty() {
                let why = format!(
                    "claimed nothing better than its bound in unit {}, where another run \
                     found a verified solution scoring {found}",
                    lease.unit_id
                );
                return judge_lie(ctx, lease, &campaign, &liars, &why);
            }
        }
    }
    let kept = best.map_or_else(|| "none".to_string(), |v| v.to_string());
    let ids: Vec<i64> = runs.iter().map(|r| r.id).collect();
    let same_value = runs.iter().all(|r| r.value == runs[0].value);
    let consistent =
        same_value || (campaign.exhaustive && judges && runs.iter().all(|r| r.claim.is_some()));
    event(
        ctx.conn,
        ctx.now,
        if consistent {
            "replica_agreed"
        } else {
            "replica_differed"
        },
        Some(lease.campaign_id),
        Some(lease.unit_id),
        Some(lease.id),
        Some(lease.worker_id),
        json!({"value": value, "earlier_values": earlier.iter().map(|(_, v)| v).collect::<Vec<_>>(),
               "claims": runs.iter().map(Run::claim_json).collect::<Vec<_>>(),
               "kept": kept, "runs": ids}),
    )?;
    finish_unit(ctx, lease, &kept, &ids)
}

/// What settling a search unit needs to know of its campaign.
struct SearchCampaign {
    minimise: bool,
    exhaustive: bool,
    /// The pruning bound as the coordinator knows it (its best verified score or starting
    /// bound): at least as good as any bound it has shared with a worker.
    bound: Option<i64>,
}

impl SearchCampaign {
    fn load(ctx: &Ctx, campaign_id: i64) -> Result<SearchCampaign, Error> {
        let (objective, exhaustive, bound): (String, bool, Option<i64>) = ctx
            .conn
            .prepare_cached("SELECT objective, exhaustive, bound FROM campaigns WHERE id = ?1")?
            .query_row(params![campaign_id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })?;
        Ok(SearchCampaign {
            minimise: objective == "min",
            exhaustive,
            bound,
        })
    }

    /// Why a run's claim covers less than the coordinator needs, if it does: it claims to
    /// have pruned against a bound better than any the coordinator shared (or than none, when
    /// it shared none) that is not the run's own verified find, so the solutions between
    /// the two were never looked at. `None` when the claim can be taken.
    fn claim_weaker_than_shared(&self, run: &Run) -> Option<String> {
        let Some(Some(claimed)) = run.claim else {
            return None;
        };
        if run.value.is_some_and(|own| !self.better(claimed, own)) {
            return None;
        }
        match self.bound {
            Some(shared) if self.better(claimed, shared) => Some(format!(
                "the run claims to have pruned against {claimed}, better than any bound the \
                 coordinator shared ({shared})"
            )),
            None => Some(format!(
                "the run claims to have pruned against {claimed}, but the coordinator shared \
                 no bound"
            )),
            Some(_) => None,
        }
    }

    /// True when score `a` is strictly better than `b`.
    fn better(&self, a: i64, b: i64) -> bool {
        if self.minimise {
            a < b
        } else {
            a > b
        }
    }
}

/// One run of a unit, as settlement sees it.
#[derive(Clone, Debug)]
struct Run {
    id: i64,
    worker_id: i64,
    /// Its verified best score, if it found one.
    value: Option<i64>,
    /// Its claim (see [`super::Usage::claim`]).
    claim: Option<Option<i64>>,
}

impl Run {
    fn load(ctx: &Ctx, result_id: i64) -> Result<Run, Error> {
        let (worker_id, value, claims, claim_bound): (i64, String, bool, Option<i64>) = ctx
            .conn
            .prepare_cached(
                "SELECT worker_id, value, claims, claim_bound FROM results WHERE id = ?1",
            )?
            .query_row(params![result_id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })?;
        Ok(Run {
            id: result_id,
            worker_id,
            value: value.parse().ok(),
            claim: claims.then_some(claim_bound),
        })
    }

    /// True when this run claimed the unit holds nothing better than its bound (or its own
    /// find, whichever is better), and `found`, a verified solution of the same unit, is
    /// better than that.
    fn claim_contradicted_by(&self, found: i64, campaign: &SearchCampaign) -> bool {
        let Some(claimed) = self.claim else {
            return false;
        };
        let covered = match (claimed, self.value) {
            (Some(b), Some(v)) => Some(if campaign.better(v, b) { v } else { b }),
            (b, v) => b.or(v),
        };
        covered.is_none_or(|c| campaign.better(found, c))
    }

    fn claim_json(&self) -> serde_json::Value {
        json!({"result": self.id, "worker": self.worker_id, "value": self.value,
               "claims": self.claim.is_some(), "bound": self.claim.flatten()})
    }
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
        event(
            ctx.conn,
            ctx.now,
            "replica_contradicted",
            Some(lease.campaign_id),
            Some(lease.unit_id),
            None,
            Some(liar.worker_id),
            json!({"result": liar.id, "claim": liar.claim_json(), "reason": why}),
        )?;
        discard_unreplicated_claims(ctx, lease.campaign_id, liar.worker_id)?;
    }
    let honest: Vec<(i64, String)> = other_awaiting_runs(ctx, lease.unit_id, 0)?;
    let best = honest
        .iter()
        .filter_map(|(_, v)| v.parse::<i64>().ok())
        .reduce(|a, b| if campaign.better(b, a) { b } else { a });
    if honest.is_empty() {
        // Nothing trustworthy is left of the unit: it runs again from its beginning.
        units::want_replica(ctx, lease.unit_id)?;
        return Ok(());
    }
    let kept = best.map_or_else(|| "none".to_string(), |v| v.to_string());
    let ids: Vec<i64> = honest.iter().map(|(id, _)| *id).collect();
    finish_unit(ctx, lease, &kept, &ids)
}

/// A run whose claim covers less than the coordinator needs (see
/// [`SearchCampaign::claim_weaker_than_shared`]) is not counted: its result is rejected
/// (`claim_refused`; no strike: an honest worker's own find in another unit can reach its
/// bound a moment before it reaches the coordinator) and the unit runs again on another
/// worker. Its verified finds were kept already.
fn refuse_claim(ctx: &Ctx, lease: &LeaseRow, run: &Run, why: &str) -> Result<(), Error> {
    results::reject(ctx, &[run.id])?;
    units::want_replica(ctx, lease.unit_id)?;
    event(
        ctx.conn,
        ctx.now,
        "claim_refused",
        Some(lease.campaign_id),
        Some(lease.unit_id),
        Some(lease.id),
        Some(lease.worker_id),
        json!({"result": run.id, "claim": run.claim_json(), "reason": why}),
    )?;
    Ok(())
}

/// Discards every claim of `worker_id` in the campaign that no other run confirmed (a unit
/// done on its result alone): the results are rejected and the units run again.
fn discard_unreplicated_claims(ctx: &Ctx, campaign_id: i64, worker_id: i64) -> Result<(), Error> {
    let alone: Vec<(i64, i64)> = ctx
        .conn
        .prepare_cached(
            "SELECT r.unit_id, r.id FROM results r JOIN units u ON u.id = r.unit_id
             WHERE r.campaign_id = ?1 AND r.worker_id = ?2 AND r.status = 'accepted'
               AND u.state = 'done'
               AND NOT EXISTS (SELECT 1 FROM results o WHERE o.unit_id = r.unit_id
                               AND o.id != r.id AND o.status = 'accepted')",
        )?
        .query_map(params![campaign_id, worker_id], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?
        .collect::<Result<_, _>>()?;
    if alone.is_empty() {
        return Ok(());
    }
    for (unit_id, result_id) in &alone {
        results::reject(ctx, &[*result_id])?;
        units::run_again(ctx, *unit_id)?;
    }
    event(
        ctx.conn,
        ctx.now,
        "claims_discarded",
        Some(campaign_id),
        None,
        None,
        Some(worker_id),
        json!({"units": alone.iter().map(|(u, _)| u).collect::<Vec<_>>(),
               "results": alone.iter().map(|(_, r)| r).collect::<Vec<_>>(),
               "reason": "its worker lied about another unit of the campaign"}),
    )?;
    Ok(())
}

/// Whether the campaign's replication draw picks this unit for a second run.
fn wants_replica(ctx: &Ctx, lease: &LeaseRow) -> Result<bool, Error> {
    let (seed, rate): (i64, f64) = ctx
        .conn
        .prepare_cached("SELECT seed, verify_rate FROM campaigns WHERE id = ?1")?
        .query_row(params![lease.campaign_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(replicate(seed, lease.unit_id, rate))
}

/// Puts a unit back to pending for a replica run from its beginning on another worker.
fn ask_for_replica(ctx: &Ctx, lease: &LeaseRow, first_value: &str) -> Result<(), Error> {
    units::want_replica(ctx, lease.unit_id)?;
    event(
        ctx.conn,
        ctx.now,
        "replica_wanted",
        Some(lease.campaign_id),
        Some(lease.unit_id),
        Some(lease.id),
        Some(lease.worker_id),
        json!({"first_value": first_value}),
    )?;
    Ok(())
}

/// Marks a unit done with its accepted value and folds it into the campaign.
pub(crate) fn finish_unit(
    ctx: &Ctx,
    lease: &LeaseRow,
    value: &str,
    accepted: &[i64],
) -> Result<(), Error> {
    units::mark_done(ctx, lease.unit_id, value)?;
    results::accept(ctx, accepted)?;
    campaigns::fold_unit_value(ctx, lease.campaign_id, value)?;
    maybe_finish_campaign(ctx, lease.campaign_id)
}

/// Whether a unit's count is re-run on a second worker: a deterministic draw per unit, so a
/// restarted coordinator makes the same choices.
pub fn replicate(seed: i64, unit_id: i64, rate: f64) -> bool {
    if rate <= 0.0 {
        return false;
    }
    if rate >= 1.0 {
        return true;
    }
    let draw = splitmix64(seed as u64 ^ (unit_id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    (draw >> 11) as f64 / (1u64 << 53) as f64 <= rate
}
