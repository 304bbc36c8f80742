//! The `results`, `samples` and `held_claims` tables: each run's result for a unit
//! (awaiting settlement, then accepted or rejected) with its solver's provenance record, the
//! samples or hits it carried, and the claims held because the verifier itself failed on
//! them. The only writer of the three tables; calls no other table module.

use rusqlite::params;

use crate::error::Error;
use crate::scheduler::tables::leases::LeaseRow;
use crate::scheduler::{Ctx, Usage};

/// Stores a run's result, awaiting settlement, and returns its id.
pub fn insert(
    ctx: &Ctx,
    lease: &LeaseRow,
    value: &str,
    solution: Option<&str>,
    usage: Usage,
    provenance: Option<&str>,
) -> Result<i64, Error> {
    ctx.conn
        .prepare_cached(
            "INSERT INTO results (unit_id, campaign_id, lease_id, worker_id, value, solution, nodes,
                 cpu_seconds, wall_seconds, created_ms, replica, status, solver_version, self_checked,
                 claims, claim_bound, provenance_json)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, 'awaiting', ?12,
                     ?11 AND EXISTS (SELECT 1 FROM results r WHERE r.unit_id = ?1 AND r.worker_id = ?4),
                     ?13, ?14, ?15)",
        )?
        .execute(params![
            lease.unit_id,
            lease.campaign_id,
            lease.id,
            lease.worker_id,
            value,
            solution,
            usage.nodes as i64,
            usage.cpu_seconds,
            usage.wall_seconds,
            ctx.now,
            lease.replica,
            usage.solver_version,
            usage.claim.is_some(),
            usage.claim.flatten(),
            provenance
        ])?;
    Ok(ctx.conn.last_insert_rowid())
}

/// Most claims kept whole per campaign in `held_claims`; later ones are still recorded in
/// the event log, without their solution.
pub const MAX_HELD_PER_CAMPAIGN: i64 = 1_000;

/// A claim the verifier failed on, to keep for the operator.
pub struct HeldInsert<'a> {
    /// Its campaign, unit, lease and worker.
    pub subject: crate::scheduler::Subject,
    /// `improvement` or `result`.
    pub source: &'a str,
    /// The claimed solution (or sample) as sent.
    pub solution: &'a str,
    /// The score claimed (0 for a sample).
    pub claimed_score: i64,
    /// What the verifier said.
    pub reason: &'a str,
}

/// Keeps a claim the verifier failed on; returns its id, or `None` when the campaign
/// already holds [`MAX_HELD_PER_CAMPAIGN`].
pub fn hold(ctx: &Ctx, claim: &HeldInsert) -> Result<Option<i64>, Error> {
    let campaign = claim.subject.campaign.unwrap_or(0);
    let held: i64 = ctx
        .conn
        .prepare_cached("SELECT count(*) FROM held_claims WHERE campaign_id = ?1")?
        .query_row(params![campaign], |r| r.get(0))?;
    if held >= MAX_HELD_PER_CAMPAIGN {
        return Ok(None);
    }
    ctx.conn
        .prepare_cached(
            "INSERT INTO held_claims (campaign_id, unit_id, lease_id, worker_id, source,
                 solution_json, claimed_score, reason, at_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        )?
        .execute(params![
            campaign,
            claim.subject.unit,
            claim.subject.lease,
            claim.subject.worker,
            claim.source,
            claim.solution,
            claim.claimed_score,
            claim.reason,
            ctx.now
        ])?;
    Ok(Some(ctx.conn.last_insert_rowid()))
}

/// Stores a result's verified samples (or hits); returns how many were added. A replica
/// run of a search unit finds the same hits again: with `once_per_unit`, each is kept once
/// per unit.
pub fn insert_samples(
    ctx: &Ctx,
    lease: &LeaseRow,
    result_id: i64,
    samples: &[String],
) -> Result<i64, Error> {
    if samples.is_empty() {
        return Ok(0);
    }
    let sql = if lease.replica {
        "INSERT INTO samples (campaign_id, unit_id, result_id, data)
         SELECT ?1, ?2, ?3, ?4 WHERE NOT EXISTS
             (SELECT 1 FROM samples WHERE campaign_id = ?1 AND unit_id = ?2 AND data = ?4)"
    } else {
        "INSERT INTO samples (campaign_id, unit_id, result_id, data) VALUES (?1, ?2, ?3, ?4)"
    };
    let mut insert = ctx.conn.prepare_cached(sql)?;
    let mut added = 0i64;
    for sample in samples {
        added +=
            insert.execute(params![lease.campaign_id, lease.unit_id, result_id, sample])? as i64;
    }
    Ok(added)
}

/// Marks the runs whose value was accepted for their unit.
pub fn accept(ctx: &Ctx, result_ids: &[i64]) -> Result<(), Error> {
    let mut accept = ctx
        .conn
        .prepare_cached("UPDATE results SET status = 'accepted' WHERE id = ?1")?;
    for id in result_ids {
        accept.execute(params![id])?;
    }
    Ok(())
}

/// Rejects runs: a lie (a contradicted search claim) or a claim discarded with its liar.
pub fn reject(ctx: &Ctx, result_ids: &[i64]) -> Result<(), Error> {
    let mut reject = ctx
        .conn
        .prepare_cached("UPDATE results SET status = 'rejected' WHERE id = ?1")?;
    for id in result_ids {
        reject.execute(params![id])?;
    }
    Ok(())
}

/// Rejects every run of a unit still awaiting settlement (the agreeing runs are accepted
/// right after).
pub fn reject_awaiting(ctx: &Ctx, unit_id: i64) -> Result<(), Error> {
    ctx.conn
        .prepare_cached(
            "UPDATE results SET status = 'rejected' WHERE unit_id = ?1 AND status = 'awaiting'",
        )?
        .execute(params![unit_id])?;
    Ok(())
}

/// The runs of a unit whose results await settlement, other than `except`: (id, value).
pub fn awaiting(ctx: &Ctx, unit_id: i64, except: i64) -> Result<Vec<(i64, String)>, Error> {
    Ok(ctx
        .conn
        .prepare_cached(
            "SELECT id, value FROM results WHERE unit_id = ?1 AND status = 'awaiting' AND id != ?2",
        )?
        .query_map(params![unit_id, except], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?)
}

/// How many runs of a unit await settlement.
pub fn awaiting_count(ctx: &Ctx, unit_id: i64) -> Result<i64, Error> {
    Ok(ctx
        .conn
        .prepare_cached("SELECT count(*) FROM results WHERE unit_id = ?1 AND status = 'awaiting'")?
        .query_row(params![unit_id], |r| r.get(0))?)
}

/// One run as settlement sees it: its worker, value text, whether it claims and its bound.
pub fn run(ctx: &Ctx, result_id: i64) -> Result<(i64, String, bool, Option<i64>), Error> {
    Ok(ctx
        .conn
        .prepare_cached("SELECT worker_id, value, claims, claim_bound FROM results WHERE id = ?1")?
        .query_row(params![result_id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })?)
}

/// The accepted results of `worker_id` in a campaign that alone decided their (done) unit,
/// no other run confirming them: (unit, result).
pub fn unreplicated_of_worker(
    ctx: &Ctx,
    campaign_id: i64,
    worker_id: i64,
) -> Result<Vec<(i64, i64)>, Error> {
    Ok(ctx
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
        .collect::<Result<_, _>>()?)
}

/// The measure pacing works from: the campaign's own target lease time (ms; 0 = the
/// server's, negative = pacing off), and over its latest `latest` results the mean wall
/// time per unit and per splitter unit, and how many results that is.
pub fn recent_wall_times(
    ctx: &Ctx,
    campaign_id: i64,
    latest: i64,
) -> Result<(i64, Option<f64>, Option<f64>, i64), Error> {
    Ok(ctx
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
        .query_row(params![campaign_id, latest], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })?)
}
