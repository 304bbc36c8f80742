//! The `units` and `spawned_payloads` tables: units produced by a campaign's splitter,
//! donated by workers or spawned by other units' results; selected for leasing; moved
//! between states. The only writer of both tables; calls no other table module.

use grind_shared::problem::UnitSpec;
use rusqlite::{params, Connection, OptionalExtension};

use crate::error::Error;
use crate::scheduler::{ChildUnit, Ctx};

/// A pending unit as the grant needs it.
pub struct PendingUnit {
    /// Unit id.
    pub id: i64,
    /// Shown to people.
    pub label: String,
    /// What to solve.
    pub payload: Vec<u8>,
    /// The checkpoint to resume from, if any.
    pub cursor: Option<Vec<u8>>,
    /// The worker that wrote the checkpoint.
    pub cursor_worker: Option<i64>,
    /// Failed attempts so far.
    pub attempts: u32,
    /// Whether the next run is a replica run.
    pub replica: bool,
    /// Splitter units it covers (1 unless joined).
    pub parts: i64,
}

/// Up to `limit` pending units of a campaign that `worker_id` may run, lowest priority
/// first: a replica run goes to a worker that has not run the unit yet, unless the settings
/// allow self-replication or the unit has waited `self_check_after_ms` for another worker
/// (one worker is a valid cluster: its replica is then recorded as self-checked).
pub fn pending_units(
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

/// A unit about to be inserted, with how many splitter units it joins.
pub struct NewUnit {
    /// Its label and payload.
    pub spec: UnitSpec,
    /// Splitter units it covers (1 unless joined).
    pub parts: i64,
    /// The problem's bound on what the unit can hold.
    pub bound: Option<i64>,
}

/// Units of a campaign not finished yet (pending or leased).
pub fn open_units(ctx: &Ctx, campaign_id: i64) -> Result<i64, Error> {
    Ok(ctx
        .conn
        .prepare_cached(
            "SELECT count(*) FROM units WHERE campaign_id = ?1 AND state IN ('pending', 'leased')",
        )?
        .query_row(params![campaign_id], |r| r.get(0))?)
}

/// Whether a campaign has units ready to lease (or more to split off).
pub fn has_pending_units(ctx: &Ctx, campaign_id: i64) -> Result<bool, Error> {
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
pub fn insert_units(
    ctx: &Ctx,
    campaign_id: i64,
    first_seq: i64,
    units: &[NewUnit],
) -> Result<usize, Error> {
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
            unit.bound
        ])?;
    }
    Ok(units.len())
}

/// Adds a child unit (with `bound`, its problem's bound) numbered at the campaign's next
/// sequence number, unless the campaign already spawned its payload; returns whether it
/// was added (the caller then advances the campaign's sequence).
pub fn insert_child(
    ctx: &Ctx,
    campaign_id: i64,
    child: &ChildUnit,
    next_seq: i64,
    bound: Option<i64>,
) -> Result<bool, Error> {
    let fresh = ctx
        .conn
        .prepare_cached(
            "INSERT OR IGNORE INTO spawned_payloads (campaign_id, payload) VALUES (?1, ?2)",
        )?
        .execute(params![campaign_id, child.payload])?;
    if fresh == 0 {
        return Ok(false);
    }
    ctx.conn
        .prepare_cached(
            "INSERT INTO units (campaign_id, seq, label, payload, state, priority, bound)
             VALUES (?1, ?2, ?3, ?4, 'pending', ?5, ?6)",
        )?
        .execute(params![
            campaign_id,
            next_seq,
            child.label,
            child.payload,
            child.priority,
            bound
        ])?;
    Ok(true)
}

/// Gives a pending unit to a new lease.
pub fn mark_leased(ctx: &Ctx, unit_id: i64, lease_id: i64) -> Result<(), Error> {
    ctx.conn
        .prepare_cached("UPDATE units SET state = 'leased', lease_id = ?2 WHERE id = ?1")?
        .execute(params![unit_id, lease_id])?;
    Ok(())
}

/// Forgets a unit's checkpoint and its writer: the unit starts again from its beginning.
pub fn drop_checkpoint(ctx: &Ctx, unit_id: i64) -> Result<(), Error> {
    ctx.conn
        .prepare_cached("UPDATE units SET cursor = NULL, cursor_worker = NULL WHERE id = ?1")?
        .execute(params![unit_id])?;
    Ok(())
}

/// Forgets the checkpoint of a unit that is pending and held by no lease (a banned
/// worker's checkpoints are not trusted).
pub fn forget_unleased_checkpoint(ctx: &Ctx, unit_id: i64) -> Result<(), Error> {
    ctx.conn
        .prepare_cached(
            "UPDATE units SET cursor = NULL WHERE id = ?1 AND state = 'pending' AND lease_id IS NULL",
        )?
        .execute(params![unit_id])?;
    Ok(())
}

/// Stores a checkpoint written by `worker_id` under `lease_id`, if that lease still holds
/// the unit.
pub fn store_checkpoint(
    ctx: &Ctx,
    unit_id: i64,
    lease_id: i64,
    worker_id: i64,
    cursor: &[u8],
) -> Result<(), Error> {
    ctx.conn
        .prepare_cached(
            "UPDATE units SET cursor = ?2, cursor_worker = ?4 WHERE id = ?1 AND lease_id = ?3",
        )?
        .execute(params![unit_id, cursor, lease_id, worker_id])?;
    Ok(())
}

/// What became of a unit taken back from its lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TakenBack {
    /// The lease no longer held the unit: nothing changed.
    NotHeld,
    /// The unit is pending again.
    Pending,
    /// The unit failed for good after this many attempts.
    Failed(u32),
}

/// Takes a unit back from lease `lease_id` (of `worker_id`), if the lease still held it: the
/// unit goes back to pending (counting a failed attempt when `count_attempt`), keeping or
/// replacing its checkpoint, or fails for good after its campaign's `max_attempts`.
pub fn take_back(
    ctx: &Ctx,
    unit_id: i64,
    lease_id: i64,
    worker_id: i64,
    count_attempt: bool,
    cursor: Option<&[u8]>,
) -> Result<TakenBack, Error> {
    let unit: Option<(u32, i64)> = ctx
        .conn
        .prepare_cached(
            "SELECT u.attempts, c.max_attempts FROM units u JOIN campaigns c ON c.id = u.campaign_id
             WHERE u.id = ?1 AND u.lease_id = ?2 AND u.state = 'leased'",
        )?
        .query_row(params![unit_id, lease_id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    let Some((attempts, max_attempts)) = unit else {
        return Ok(TakenBack::NotHeld);
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
            unit_id,
            if failed { "failed" } else { "pending" },
            attempts,
            cursor.filter(|c| !c.is_empty()),
            worker_id
        ])?;
    Ok(if failed {
        TakenBack::Failed(attempts)
    } else {
        TakenBack::Pending
    })
}

/// Keeps only the donor's remaining part of a unit (and its checkpoint, written by `worker_id`).
pub fn keep_remaining(
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
pub fn want_replica(ctx: &Ctx, unit_id: i64) -> Result<(), Error> {
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
pub fn mark_disputed(ctx: &Ctx, unit_id: i64, give_up: bool) -> Result<(), Error> {
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
pub fn mark_done(ctx: &Ctx, unit_id: i64, value: &str) -> Result<(), Error> {
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
pub fn run_again(ctx: &Ctx, unit_id: i64) -> Result<(), Error> {
    ctx.conn
        .prepare_cached(
            "UPDATE units SET state = 'pending', value = NULL, done_ms = NULL, lease_id = NULL,
                 replica_needed = 0, cursor = NULL, attempts = 0 WHERE id = ?1",
        )?
        .execute(params![unit_id])?;
    Ok(())
}

/// Gives a campaign's failed units a fresh set of attempts.
pub fn retry_failed(ctx: &Ctx, campaign_id: i64) -> Result<(), Error> {
    ctx.conn
        .prepare_cached(
            "UPDATE units SET state = 'pending', attempts = 0 WHERE campaign_id = ?1 AND state = 'failed'",
        )?
        .execute(params![campaign_id])?;
    Ok(())
}

/// Closes every pending unit of a campaign without searching it (the campaign reached its
/// ceiling: nothing better exists); returns how many.
pub fn close_open(ctx: &Ctx, campaign_id: i64) -> Result<usize, Error> {
    Ok(ctx
        .conn
        .prepare_cached(
            "UPDATE units SET state = 'done', value = 'none', done_ms = ?2, lease_id = NULL,
                 replica_needed = 0 WHERE campaign_id = ?1 AND state = 'pending'",
        )?
        .execute(params![campaign_id, ctx.now])?)
}

/// A unit's payload (what it holds now), if it exists.
pub fn payload(conn: &Connection, unit_id: i64) -> Result<Option<Vec<u8>>, Error> {
    Ok(conn
        .prepare_cached("SELECT payload FROM units WHERE id = ?1")?
        .query_row(params![unit_id], |r| r.get(0))
        .optional()?)
}

/// Whether lease `lease_id` holds the unit.
pub fn held_by(ctx: &Ctx, unit_id: i64, lease_id: i64) -> Result<bool, Error> {
    Ok(ctx
        .conn
        .prepare_cached("SELECT lease_id IS ?2 FROM units WHERE id = ?1")?
        .query_row(params![unit_id, lease_id], |r| r.get(0))?)
}

/// Whether a unit's runs have disagreed before.
pub fn disputed(ctx: &Ctx, unit_id: i64) -> Result<bool, Error> {
    Ok(ctx
        .conn
        .prepare_cached("SELECT disputed FROM units WHERE id = ?1")?
        .query_row(params![unit_id], |r| r.get(0))?)
}

/// Whether a campaign has a unit not finished yet (pending or leased).
pub fn any_open(ctx: &Ctx, campaign_id: i64) -> Result<bool, Error> {
    Ok(ctx
        .conn
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM units WHERE campaign_id = ?1 AND state IN ('pending', 'leased'))",
        )?
        .query_row(params![campaign_id], |r| r.get(0))?)
}

/// How many of a campaign's units failed.
pub fn failed_count(ctx: &Ctx, campaign_id: i64) -> Result<i64, Error> {
    Ok(ctx
        .conn
        .prepare_cached("SELECT count(*) FROM units WHERE campaign_id = ?1 AND state = 'failed'")?
        .query_row(params![campaign_id], |r| r.get(0))?)
}

/// The splitter units (`parts`) of a campaign's pending units, counting at most `limit`
/// units.
pub fn pending_parts(ctx: &Ctx, campaign_id: i64, limit: i64) -> Result<i64, Error> {
    Ok(ctx
        .conn
        .prepare_cached(
            "SELECT coalesce(sum(parts), 0) FROM
                 (SELECT parts FROM units WHERE campaign_id = ?1 AND state = 'pending' LIMIT +?2)",
        )?
        .query_row(params![campaign_id, limit], |r| r.get(0))?)
}
