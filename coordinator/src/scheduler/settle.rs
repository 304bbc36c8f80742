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
/// incumbents and both runs' child units and hits are kept (duplicates skipped), so the
/// campaign is right when either run is honest. The runs' values may differ without anyone
/// lying (a run prunes with the bound it was given), so a difference is recorded, not
/// disputed; the unit keeps the better value.
pub(crate) fn settle_search(
    ctx: &Ctx,
    lease: &LeaseRow,
    result_id: i64,
    value: &str,
) -> Result<(), Error> {
    let earlier = other_awaiting_runs(ctx, lease.unit_id, result_id)?;
    if earlier.is_empty() {
        if wants_replica(ctx, lease)? {
            return ask_for_replica(ctx, lease, value);
        }
        return finish_unit(ctx, lease, value, &[result_id]);
    }
    let objective: String = ctx
        .conn
        .prepare_cached("SELECT objective FROM campaigns WHERE id = ?1")?
        .query_row(params![lease.campaign_id], |r| r.get(0))?;
    let better = |a: &str, b: &str| -> bool {
        match (a.parse::<i64>(), b.parse::<i64>()) {
            (Ok(a), Ok(b)) => {
                if objective == "min" {
                    a < b
                } else {
                    a > b
                }
            }
            (Ok(_), Err(_)) => true,
            _ => false,
        }
    };
    let mut best = value.to_string();
    for (_, v) in &earlier {
        if better(v, &best) {
            best = v.clone();
        }
    }
    let runs: Vec<i64> = earlier
        .iter()
        .map(|(id, _)| *id)
        .chain([result_id])
        .collect();
    // Every run's value stays on its result; the unit holds the best of them.
    let agreed = earlier.iter().all(|(_, v)| v == value);
    event(
        ctx.conn,
        ctx.now,
        if agreed {
            "replica_agreed"
        } else {
            "replica_differed"
        },
        Some(lease.campaign_id),
        Some(lease.unit_id),
        Some(lease.id),
        Some(lease.worker_id),
        json!({"value": value, "earlier_values": earlier.iter().map(|(_, v)| v).collect::<Vec<_>>(),
               "kept": best, "runs": runs}),
    )?;
    finish_unit(ctx, lease, &best, &runs)
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
