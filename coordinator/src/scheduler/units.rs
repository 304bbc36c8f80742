//! Units: produced lazily by the campaign's splitter, donated by workers or spawned by other
//! units' results; selected for leasing; moved between states. The only writer of the `units`
//! and `spawned_payloads` tables.

use grind_shared::problem::{Problem, UnitSpec};
use rusqlite::{params, OptionalExtension};
use serde_json::{json, Value};

use super::campaigns::{self, maybe_finish_campaign};
use super::events::event;
use super::{pacing, ChildUnit, Ctx, LeaseRow};
use crate::error::Error;

/// A pending unit as the grant needs it.
pub(crate) struct PendingUnit {
    /// Unit id.
    pub(crate) id: i64,
    /// Shown to people.
    pub(crate) label: String,
    /// What to solve.
    pub(crate) payload: Vec<u8>,
    /// The checkpoint to resume from, if any.
    pub(crate) cursor: Option<Vec<u8>>,
    /// The worker that wrote the checkpoint.
    pub(crate) cursor_worker: Option<i64>,
    /// Failed attempts so far.
    pub(crate) attempts: u32,
    /// Whether the next run is a replica run.
    pub(crate) replica: bool,
    /// Splitter units it covers (1 unless joined).
    pub(crate) parts: i64,
}

/// Up to `limit` pending units of a campaign that `worker_id` may run, lowest priority
/// first: a replica run goes to a worker that has not run the unit yet, unless the settings
/// allow self-replication or the unit has waited `self_check_after_ms` for another worker
/// (one worker is a valid cluster: its replica is then recorded as self-checked).
pub(crate) fn pending_units(
    ctx: &Ctx,
    campaign_id: i64,
    worker_id: i64,
    limit: usize,
) -> Result<Vec<PendingUnit>, Error> {
    let units = ctx
        .conn
        .prepare_cached(
            "SELECT u.id, u.label, u.payload, u.cursor, u.attempts, u.replica_needed, u.cursor_worker,
                    u.parts
             FROM units u
             WHERE u.campaign_id = ?1 AND u.state = 'pending'
               AND (u.replica_needed = 0 OR ?3 OR u.replica_wanted_ms <= ?5 OR NOT EXISTS
                    (SELECT 1 FROM results r WHERE r.unit_id = u.id AND r.worker_id = ?2))
             ORDER BY u.priority, u.id LIMIT +?4",
        )?
        .query_map(
            params![
                campaign_id,
                worker_id,
                ctx.config.allow_self_replication,
                limit as i64,
                ctx.now - ctx.config.self_check_after_ms
            ],
            |r| {
                Ok(PendingUnit {
                    id: r.get(0)?,
                    label: r.get(1)?,
                    payload: r.get(2)?,
                    cursor: r.get(3)?,
                    attempts: r.get(4)?,
                    replica: r.get(5)?,
                    cursor_worker: r.get(6)?,
                    parts: r.get(7)?,
                })
            },
        )?
        .collect::<Result<_, _>>()?;
    Ok(units)
}

/// Asks the campaign's splitter for more units for `worker_id`; returns how many were added.
pub(crate) fn split_more(
    ctx: &Ctx,
    campaign_id: i64,
    worker_id: i64,
    wanted: usize,
) -> Result<usize, Error> {
    let (done, cursor, next_seq, best): (bool, Option<Vec<u8>>, i64, Option<String>) = ctx
        .conn
        .prepare_cached(
            "SELECT split_done, split_cursor, next_seq, best_solution FROM campaigns WHERE id = ?1",
        )?
        .query_row(params![campaign_id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })?;
    if done {
        return Ok(0);
    }
    let problem = ctx.problems.get(ctx.conn, campaign_id)?;
    if let Some(at) = cursor.as_deref() {
        if problem.waits_at(at) && open_units(ctx, campaign_id)? > 0 {
            // A stage boundary: the next stage needs every result of this one.
            return Ok(0);
        }
    }
    let incumbent = match best.as_deref() {
        Some(text) => Some(serde_json::from_str::<Value>(text).map_err(|e| {
            Error::Internal(format!(
                "campaign {campaign_id}: stored best is not JSON: {e}"
            ))
        })?),
        None => None,
    };
    // Tiny units are created coarser where the problem can join them exactly.
    let join = pacing::join_factor(ctx, campaign_id)?;
    let batch = problem.split_from(
        cursor.as_deref(),
        wanted.max(ctx.config.split_batch) * join,
        incumbent.as_ref(),
    )?;
    let last = batch.next.is_none();
    // The last batch ends on small units, one size level per lane working on it.
    let per_level = if last && join > 1 {
        pacing::lanes(ctx, campaign_id, worker_id)?.1 as usize
    } else {
        1
    };
    let sizes = pacing::join_sizes(batch.units.len(), join, last, per_level);
    let units = join_units(problem.as_ref(), batch.units, &sizes);
    let added = insert_units(ctx, campaign_id, next_seq, &units)?;
    campaigns::advance_split(ctx, campaign_id, batch.next.as_deref(), added)?;
    if batch.next.is_none() {
        maybe_finish_campaign(ctx, campaign_id)?;
    }
    Ok(added)
}

/// Joins consecutive splitter units, `sizes` at a time (summing to their number), into one
/// unit covering exactly their union, where the problem can (each joined unit counts its
/// parts); units it cannot join stay as they are.
fn join_units(problem: &dyn Problem, units: Vec<UnitSpec>, sizes: &[usize]) -> Vec<NewUnit> {
    if sizes.iter().all(|&size| size <= 1) {
        return units.into_iter().map(NewUnit::single).collect();
    }
    let mut joined = Vec::with_capacity(sizes.len());
    let mut at = 0;
    for &size in sizes {
        let chunk = &units[at.min(units.len())..(at + size).min(units.len())];
        at += size;
        match problem.join_units(chunk) {
            Some(unit) if chunk.len() > 1 => joined.push(NewUnit {
                spec: unit,
                parts: chunk.len() as i64,
            }),
            _ => joined.extend(chunk.iter().cloned().map(NewUnit::single)),
        }
    }
    joined
}

/// A unit about to be inserted, with how many splitter units it joins.
pub(crate) struct NewUnit {
    /// Its label and payload.
    pub(crate) spec: UnitSpec,
    /// Splitter units it covers (1 unless joined).
    pub(crate) parts: i64,
}

impl NewUnit {
    /// A unit as the splitter (or a donation) made it.
    pub(crate) fn single(spec: UnitSpec) -> NewUnit {
        NewUnit { spec, parts: 1 }
    }
}

/// Units of a campaign not finished yet (pending or leased).
fn open_units(ctx: &Ctx, campaign_id: i64) -> Result<i64, Error> {
    Ok(ctx
        .conn
        .prepare_cached(
            "SELECT count(*) FROM units WHERE campaign_id = ?1 AND state IN ('pending', 'leased')",
        )?
        .query_row(params![campaign_id], |r| r.get(0))?)
}

/// Whether a campaign has units ready to lease (or more to split off).
pub(crate) fn has_pending_units(ctx: &Ctx, campaign_id: i64) -> Result<bool, Error> {
    Ok(ctx
        .conn
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM units WHERE campaign_id = ?1 AND state = 'pending')
                 OR NOT (SELECT split_done FROM campaigns WHERE id = ?1)",
        )?
        .query_row(params![campaign_id], |r| r.get(0))?)
}

/// Adds pending units numbered from `first_seq`; the caller advances the campaign's
/// sequence. Returns how many were added.
pub(crate) fn insert_units(
    ctx: &Ctx,
    campaign_id: i64,
    first_seq: i64,
    units: &[NewUnit],
) -> Result<usize, Error> {
    let problem = ctx.problems.get(ctx.conn, campaign_id)?;
    let mut insert = ctx.conn.prepare_cached(
        "INSERT INTO units (campaign_id, seq, label, payload, state, parts, bound)
         VALUES (?1, ?2, ?3, ?4, 'pending', ?5, ?6)",
    )?;
    for (offset, unit) in units.iter().enumerate() {
        insert.execute(params![
            campaign_id,
            first_seq + offset as i64,
            unit.spec.label,
            unit.spec.payload,
            unit.parts,
            problem.bound_of_unit(&unit.spec.payload)
        ])?;
    }
    Ok(units.len())
}

/// Adds the new child units of a result; a payload the campaign already spawned is skipped.
pub(crate) fn insert_children(
    ctx: &Ctx,
    lease: &LeaseRow,
    children: &[ChildUnit],
) -> Result<(), Error> {
    if children.is_empty() {
        return Ok(());
    }
    let problem = ctx.problems.get(ctx.conn, lease.campaign_id)?;
    let mut added = 0i64;
    for child in children {
        let fresh = ctx
            .conn
            .prepare_cached(
                "INSERT OR IGNORE INTO spawned_payloads (campaign_id, payload) VALUES (?1, ?2)",
            )?
            .execute(params![lease.campaign_id, child.payload])?;
        if fresh == 0 {
            continue;
        }
        ctx.conn
            .prepare_cached(
                "INSERT INTO units (campaign_id, seq, label, payload, state, priority, bound)
                 SELECT ?1, next_seq, ?2, ?3, 'pending', ?4, ?5 FROM campaigns WHERE id = ?1",
            )?
            .execute(params![
                lease.campaign_id,
                child.label,
                child.payload,
                child.priority,
                problem.bound_of_unit(&child.payload)
            ])?;
        campaigns::advance_sequence(ctx, lease.campaign_id, 1)?;
        added += 1;
    }
    event(
        ctx.conn,
        ctx.now,
        "units_spawned",
        Some(lease.campaign_id),
        Some(lease.unit_id),
        Some(lease.id),
        Some(lease.worker_id),
        json!({"offered": children.len(), "added": added}),
    )?;
    Ok(())
}

/// Gives a pending unit to a new lease.
pub(crate) fn mark_leased(ctx: &Ctx, unit_id: i64, lease_id: i64) -> Result<(), Error> {
    ctx.conn
        .prepare_cached("UPDATE units SET state = 'leased', lease_id = ?2 WHERE id = ?1")?
        .execute(params![unit_id, lease_id])?;
    Ok(())
}

/// Forgets a unit's checkpoint and its writer: the unit starts again from its beginning.
pub(crate) fn drop_checkpoint(ctx: &Ctx, unit_id: i64) -> Result<(), Error> {
    ctx.conn
        .prepare_cached("UPDATE units SET cursor = NULL, cursor_worker = NULL WHERE id = ?1")?
        .execute(params![unit_id])?;
    Ok(())
}

/// Forgets the checkpoint of a unit that is pending and held by no lease (a banned
/// worker's checkpoints are not trusted).
pub(crate) fn forget_unleased_checkpoint(ctx: &Ctx, unit_id: i64) -> Result<(), Error> {
    ctx.conn
        .prepare_cached(
            "UPDATE units SET cursor = NULL WHERE id = ?1 AND state = 'pending' AND lease_id IS NULL",
        )?
        .execute(params![unit_id])?;
    Ok(())
}

/// Stores a checkpoint written under `lease`, if the lease still holds its unit.
pub(crate) fn store_checkpoint(ctx: &Ctx, lease: &LeaseRow, cursor: &[u8]) -> Result<(), Error> {
    ctx.conn
        .prepare_cached(
            "UPDATE units SET cursor = ?2, cursor_worker = ?4 WHERE id = ?1 AND lease_id = ?3",
        )?
        .execute(params![lease.unit_id, cursor, lease.id, lease.worker_id])?;
    Ok(())
}

/// Takes a unit back from a lease that ended in `lease_state`, if the lease still held it:
/// the unit goes back to pending (counting a failed attempt when `count_attempt`), keeping
/// or replacing its checkpoint, or fails for good after its campaign's `max_attempts`.
pub(crate) fn take_back(
    ctx: &Ctx,
    lease: &LeaseRow,
    lease_state: &str,
    count_attempt: bool,
    cursor: Option<&[u8]>,
) -> Result<(), Error> {
    let unit: Option<(u32, i64)> = ctx
        .conn
        .prepare_cached(
            "SELECT u.attempts, c.max_attempts FROM units u JOIN campaigns c ON c.id = u.campaign_id
             WHERE u.id = ?1 AND u.lease_id = ?2 AND u.state = 'leased'",
        )?
        .query_row(params![lease.unit_id, lease.id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    let Some((attempts, max_attempts)) = unit else {
        return Ok(());
    };
    let attempts = attempts + u32::from(count_attempt);
    let failed = attempts as i64 >= max_attempts;
    ctx.conn
        .prepare_cached(
            "UPDATE units SET state = ?2, attempts = ?3, lease_id = NULL,
                 cursor_worker = CASE WHEN ?4 IS NULL THEN cursor_worker ELSE ?5 END,
                 cursor = coalesce(?4, cursor) WHERE id = ?1",
        )?
        .execute(params![
            lease.unit_id,
            if failed { "failed" } else { "pending" },
            attempts,
            cursor.filter(|c| !c.is_empty()),
            lease.worker_id
        ])?;
    if failed {
        event(
            ctx.conn,
            ctx.now,
            "unit_failed",
            Some(lease.campaign_id),
            Some(lease.unit_id),
            Some(lease.id),
            Some(lease.worker_id),
            json!({"attempts": attempts, "last": lease_state}),
        )?;
        maybe_finish_campaign(ctx, lease.campaign_id)?;
    }
    Ok(())
}

/// Keeps only the donor's remaining part of a unit (and its checkpoint, written by `worker_id`).
pub(crate) fn keep_remaining(
    ctx: &Ctx,
    unit_id: i64,
    payload: &[u8],
    cursor: Option<&[u8]>,
    worker_id: i64,
) -> Result<(), Error> {
    ctx.conn
        .prepare_cached(
            "UPDATE units SET payload = ?2, cursor = ?3, cursor_worker = ?4 WHERE id = ?1",
        )?
        .execute(params![unit_id, payload, cursor, worker_id])?;
    Ok(())
}

/// Puts a unit back to pending for a replica run from its beginning on another worker.
pub(crate) fn want_replica(ctx: &Ctx, unit_id: i64) -> Result<(), Error> {
    ctx.conn
        .prepare_cached(
            "UPDATE units SET state = 'pending', lease_id = NULL, replica_needed = 1,
                 cursor = NULL, replica_wanted_ms = ?2 WHERE id = ?1",
        )?
        .execute(params![unit_id, ctx.now])?;
    Ok(())
}

/// Marks a unit disputed: its runs disagree. It runs again on yet another worker, or fails
/// when `give_up`.
pub(crate) fn mark_disputed(ctx: &Ctx, unit_id: i64, give_up: bool) -> Result<(), Error> {
    ctx.conn
        .prepare_cached(
            "UPDATE units SET state = ?2, lease_id = NULL, replica_needed = 1, disputed = 1,
                 cursor = NULL, replica_wanted_ms = ?3 WHERE id = ?1",
        )?
        .execute(params![
            unit_id,
            if give_up { "failed" } else { "pending" },
            ctx.now
        ])?;
    Ok(())
}

/// Marks a unit done with its accepted value.
pub(crate) fn mark_done(ctx: &Ctx, unit_id: i64, value: &str) -> Result<(), Error> {
    ctx.conn
        .prepare_cached(
            "UPDATE units SET state = 'done', value = ?2, done_ms = ?3, lease_id = NULL,
                 replica_needed = 0 WHERE id = ?1",
        )?
        .execute(params![unit_id, value, ctx.now])?;
    Ok(())
}

/// Puts a finished unit back to pending, to run from its beginning: its accepted result
/// came from a worker caught lying elsewhere in the campaign.
pub(crate) fn run_again(ctx: &Ctx, unit_id: i64) -> Result<(), Error> {
    ctx.conn
        .prepare_cached(
            "UPDATE units SET state = 'pending', value = NULL, done_ms = NULL, lease_id = NULL,
                 replica_needed = 0, cursor = NULL, attempts = 0 WHERE id = ?1",
        )?
        .execute(params![unit_id])?;
    Ok(())
}

/// Gives a campaign's failed units a fresh set of attempts.
pub(crate) fn retry_failed(ctx: &Ctx, campaign_id: i64) -> Result<(), Error> {
    ctx.conn
        .prepare_cached(
            "UPDATE units SET state = 'pending', attempts = 0 WHERE campaign_id = ?1 AND state = 'failed'",
        )?
        .execute(params![campaign_id])?;
    Ok(())
}

/// Closes every pending unit of a campaign without searching it (the campaign reached its
/// ceiling: nothing better exists); returns how many.
pub(crate) fn close_open(ctx: &Ctx, campaign_id: i64) -> Result<usize, Error> {
    Ok(ctx
        .conn
        .prepare_cached(
            "UPDATE units SET state = 'done', value = 'none', done_ms = ?2, lease_id = NULL,
                 replica_needed = 0 WHERE campaign_id = ?1 AND state = 'pending'",
        )?
        .execute(params![campaign_id, ctx.now])?)
}
