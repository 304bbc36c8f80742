//! The `leases` table: a unit granted to a worker until a deadline, renewed by heartbeats,
//! ended as completed, expired, released, cancelled or failed. The only writer of the
//! table; calls no other table module.

use rusqlite::{params, Connection, OptionalExtension};

use crate::error::Error;
use crate::scheduler::{Ctx, Subject};

/// A lease row.
#[derive(Clone, Debug)]
pub struct LeaseRow {
    /// Lease id.
    pub id: i64,
    /// Its unit.
    pub unit_id: i64,
    /// Its campaign.
    pub campaign_id: i64,
    /// The worker it was granted to.
    pub worker_id: i64,
    /// active, completed, expired, released, cancelled or failed.
    pub state: String,
    /// Whether it is a replica run.
    pub replica: bool,
}

impl LeaseRow {
    /// What an event about this lease is about: its campaign, unit, lease and worker.
    pub fn subject(&self) -> Subject {
        Subject {
            campaign: Some(self.campaign_id),
            unit: Some(self.unit_id),
            lease: Some(self.id),
            worker: Some(self.worker_id),
        }
    }

    /// Checks that `worker_id` holds this lease.
    pub fn owned_by(self, worker_id: i64) -> Result<LeaseRow, Error> {
        if self.worker_id != worker_id {
            return Err(Error::PermissionDenied(format!(
                "lease {} belongs to worker {}, not to worker {worker_id}",
                self.id, self.worker_id
            )));
        }
        Ok(self)
    }
}

const LEASE_COLUMNS: &str = "id, unit_id, campaign_id, worker_id, state, replica";

fn lease_from_row(r: &rusqlite::Row) -> rusqlite::Result<LeaseRow> {
    Ok(LeaseRow {
        id: r.get(0)?,
        unit_id: r.get(1)?,
        campaign_id: r.get(2)?,
        worker_id: r.get(3)?,
        state: r.get(4)?,
        replica: r.get(5)?,
    })
}

/// Leases matching `condition` (SQL over the leases table with one parameter).
fn leases_where(conn: &Connection, condition: &str, param: i64) -> Result<Vec<LeaseRow>, Error> {
    let sql = format!("SELECT {LEASE_COLUMNS} FROM leases WHERE {condition}");
    Ok(conn
        .prepare_cached(&sql)?
        .query_map(params![param], lease_from_row)?
        .collect::<Result<_, _>>()?)
}

/// Loads a lease by id.
pub fn load_lease(conn: &Connection, lease_id: i64) -> Result<Option<LeaseRow>, Error> {
    Ok(leases_where(conn, "id = ?1", lease_id)?.pop())
}

/// Loads a lease and checks that `worker_id` holds it.
pub fn owned_lease(conn: &Connection, worker_id: i64, lease_id: i64) -> Result<LeaseRow, Error> {
    load_lease(conn, lease_id)?
        .ok_or_else(|| Error::NotFound(format!("unknown lease {lease_id}")))?
        .owned_by(worker_id)
}

/// A lease with the state of its unit and campaign, as a result for it finds them.
pub struct LeaseNow {
    /// The lease.
    pub lease: LeaseRow,
    /// Its unit's state: pending, leased, done or failed.
    pub unit_state: String,
    /// The lease holding the unit now, if any.
    pub unit_lease: Option<i64>,
    /// Whether the unit waits for a replica run.
    pub replica_needed: bool,
    /// What the unit holds now (a donation shrinks it).
    pub payload: Vec<u8>,
    /// The campaign's state.
    pub campaign_state: String,
}

/// Loads a lease together with the state of its unit and campaign, in one query.
pub fn load_with_unit(conn: &Connection, lease_id: i64) -> Result<Option<LeaseNow>, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT l.id, l.unit_id, l.campaign_id, l.worker_id, l.state, l.replica,
                    u.state, u.lease_id, u.replica_needed, u.payload, c.state
             FROM leases l JOIN units u ON u.id = l.unit_id JOIN campaigns c ON c.id = l.campaign_id
             WHERE l.id = ?1",
        )?
        .query_row(params![lease_id], |r| {
            Ok(LeaseNow {
                lease: lease_from_row(r)?,
                unit_state: r.get(6)?,
                unit_lease: r.get(7)?,
                replica_needed: r.get(8)?,
                payload: r.get(9)?,
                campaign_state: r.get(10)?,
            })
        })
        .optional()?)
}

/// The active leases of a worker.
pub fn active_of_worker(conn: &Connection, worker_id: i64) -> Result<Vec<LeaseRow>, Error> {
    leases_where(conn, "worker_id = ?1 AND state = 'active'", worker_id)
}

/// The active leases of a campaign.
pub fn active_of_campaign(conn: &Connection, campaign_id: i64) -> Result<Vec<LeaseRow>, Error> {
    leases_where(conn, "campaign_id = ?1 AND state = 'active'", campaign_id)
}

/// The active leases whose deadline passed (at most 10,000).
pub fn overdue(ctx: &Ctx) -> Result<Vec<LeaseRow>, Error> {
    leases_where(
        ctx.conn,
        "state = 'active' AND deadline_ms < ?1 LIMIT 10000",
        ctx.now,
    )
}

/// How many active leases a worker holds.
pub fn held_count(ctx: &Ctx, worker_id: i64) -> Result<i64, Error> {
    Ok(ctx
        .conn
        .prepare_cached("SELECT count(*) FROM leases WHERE worker_id = ?1 AND state = 'active'")?
        .query_row(params![worker_id], |r| r.get(0))?)
}

/// Inserts an active lease of `unit_id` for `worker_id` until `deadline`; returns its id.
pub fn insert(
    ctx: &Ctx,
    unit_id: i64,
    campaign_id: i64,
    worker_id: i64,
    deadline: i64,
    replica: bool,
) -> Result<i64, Error> {
    ctx.conn
        .prepare_cached(
            "INSERT INTO leases (unit_id, campaign_id, worker_id, granted_ms, deadline_ms, state, replica)
             VALUES (?1, ?2, ?3, ?4, ?5, 'active', ?6)",
        )?
        .execute(params![unit_id, campaign_id, worker_id, ctx.now, deadline, replica])?;
    Ok(ctx.conn.last_insert_rowid())
}

/// Extends a lease to `deadline` and stores its progress (`fraction` done, if known).
pub fn renew(
    ctx: &Ctx,
    lease_id: i64,
    deadline: i64,
    nodes: u64,
    fraction: Option<f64>,
) -> Result<(), Error> {
    ctx.conn
        .prepare_cached(
            "UPDATE leases SET deadline_ms = ?2, nodes = max(nodes, ?3), fraction = ?4 WHERE id = ?1",
        )?
        .execute(params![lease_id, deadline, nodes as i64, fraction])?;
    Ok(())
}

/// Ends a lease in `state`, now.
pub fn set_ended(ctx: &Ctx, lease_id: i64, state: &str) -> Result<(), Error> {
    ctx.conn
        .prepare_cached("UPDATE leases SET state = ?2, ended_ms = ?3 WHERE id = ?1")?
        .execute(params![lease_id, state, ctx.now])?;
    Ok(())
}

/// Marks a lease completed (its result arrived, counted or not).
pub fn mark_completed(ctx: &Ctx, lease_id: i64) -> Result<(), Error> {
    ctx.conn
        .prepare_cached(
            "UPDATE leases SET state = 'completed', ended_ms = ?2 WHERE id = ?1 AND state != 'completed'",
        )?
        .execute(params![lease_id, ctx.now])?;
    Ok(())
}

/// Cancels a lease if it is still active (another run's result made it useless); its
/// worker is told to stop at its next heartbeat.
pub fn cancel_if_active(ctx: &Ctx, lease_id: i64) -> Result<(), Error> {
    ctx.conn
        .prepare_cached(
            "UPDATE leases SET state = 'cancelled', ended_ms = ?2 WHERE id = ?1 AND state = 'active'",
        )?
        .execute(params![lease_id, ctx.now])?;
    Ok(())
}

/// Gives every active lease a deadline of at least `deadline`; returns how many.
pub fn extend_all_active(ctx: &Ctx, deadline: i64) -> Result<usize, Error> {
    Ok(ctx
        .conn
        .prepare_cached(
            "UPDATE leases SET deadline_ms = max(deadline_ms, ?1) WHERE state = 'active'",
        )?
        .execute(params![deadline])?)
}
