//! Pacing: how much work one lease should carry, measured from the units already done. Tiny
//! units travel in runs (several units per requested slot, each its own lease) and, where
//! the problem's splitter allows, are created coarser (consecutive units joined into one
//! that covers exactly their union). Owns no table.

use rusqlite::params;

use super::Ctx;
use crate::error::Error;

/// Most units granted per requested slot.
pub const MAX_RUN: usize = 256;
/// Most splitter units joined into one new unit.
pub const MAX_JOIN: usize = 256;
/// Results a campaign needs before its unit size is trusted.
const SAMPLES_NEEDED: i64 = 4;
/// How many of the latest results the measure averages.
const SAMPLES_AVERAGED: i64 = 32;

/// The latest mean wall time of a campaign's results, per unit and per splitter unit (a
/// joined unit counts as its parts), with the campaign's target lease time in ms; `None`
/// until enough results are in or when the target is 0 (pacing off).
struct Measure {
    target_seconds: f64,
    per_unit: f64,
    per_part: f64,
}

fn measure(ctx: &Ctx, campaign_id: i64) -> Result<Option<Measure>, Error> {
    let (target_ms, per_unit, per_part, samples): (i64, Option<f64>, Option<f64>, i64) = ctx
        .conn
        .prepare_cached(
            "SELECT c.target_lease_ms, avg(r.wall_seconds), avg(r.wall_seconds / r.parts),
                    count(r.wall_seconds)
             FROM campaigns c LEFT JOIN
                  (SELECT res.wall_seconds, u.parts FROM results res
                   JOIN units u ON u.id = res.unit_id
                   WHERE res.campaign_id = ?1 ORDER BY res.id DESC LIMIT ?2) r
             WHERE c.id = ?1",
        )?
        .query_row(params![campaign_id, SAMPLES_AVERAGED], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })?;
    // The campaign's own target (negative: pacing off), else the coordinator's.
    let target_ms = if target_ms != 0 {
        target_ms
    } else {
        ctx.config.target_lease_ms
    };
    Ok(match (per_unit, per_part) {
        (Some(per_unit), Some(per_part)) if samples >= SAMPLES_NEEDED && target_ms > 0 => {
            Some(Measure {
                target_seconds: target_ms as f64 / 1000.0,
                per_unit: per_unit.max(1e-6),
                per_part: per_part.max(1e-6),
            })
        }
        _ => None,
    })
}

/// How many units one requested slot of a campaign receives: as many as fill the campaign's
/// target lease duration at the mean wall time of its latest results (1 until measured).
/// Each unit keeps its own lease, result, provenance and checkpoint.
pub(crate) fn run_length(ctx: &Ctx, campaign_id: i64) -> Result<usize, Error> {
    Ok(measure(ctx, campaign_id)?.map_or(1, |m| {
        ((m.target_seconds / m.per_unit).floor() as usize).clamp(1, MAX_RUN)
    }))
}

/// How many consecutive splitter units the next units of a campaign should join (1 until
/// measured): enough for one unit to take a fraction of the target lease time, so that a
/// campaign of tiny units costs few leases while runs still spread work over every slot
/// to the end.
pub(crate) fn join_factor(ctx: &Ctx, campaign_id: i64) -> Result<usize, Error> {
    Ok(measure(ctx, campaign_id)?.map_or(1, |m| {
        let per_unit_goal = m.target_seconds / JOINED_UNITS_PER_LEASE;
        ((per_unit_goal / m.per_part).floor() as usize).clamp(1, MAX_JOIN)
    }))
}

/// A joined unit aims at this fraction of the target lease time: a lease still carries a
/// run of several units, and the last units of a campaign stay small enough to share.
const JOINED_UNITS_PER_LEASE: f64 = 8.0;
