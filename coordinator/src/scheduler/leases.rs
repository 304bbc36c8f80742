//! Leases: granting units to workers, renewal by heartbeat, expiry, release, cancellation,
//! and the grace period after a coordinator restart. The only writer of the `leases` table.

use grind_proto::v1 as pb;
use rusqlite::{params, Connection};
use serde_json::json;

use super::events::event;
use super::workers::{touch_worker, trusts_checkpoint};
use super::{campaigns, pacing, units, Ctx, Usage};
use crate::error::Error;

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
    let lease = load_lease(conn, lease_id)?
        .ok_or_else(|| Error::NotFound(format!("unknown lease {lease_id}")))?;
    if lease.worker_id != worker_id {
        return Err(Error::PermissionDenied(format!(
            "lease {lease_id} belongs to worker {}, not to worker {worker_id}",
            lease.worker_id
        )));
    }
    Ok(lease)
}

/// The active leases of a worker.
pub(crate) fn active_of_worker(conn: &Connection, worker_id: i64) -> Result<Vec<LeaseRow>, Error> {
    leases_where(conn, "worker_id = ?1 AND state = 'active'", worker_id)
}

/// The active leases of a campaign.
pub(crate) fn active_of_campaign(
    conn: &Connection,
    campaign_id: i64,
) -> Result<Vec<LeaseRow>, Error> {
    leases_where(conn, "campaign_id = ?1 AND state = 'active'", campaign_id)
}

/// Grants up to `capacity` leases to a worker, sharing them fairly among running campaigns
/// (fewest active leases first, then least recently served, so that many campaigns on few
/// workers take turns) and producing units lazily from each campaign's splitter. A campaign
/// whose predecessor is still running or paused gets only the slots left over, the earliest
/// such campaign first.
pub fn grant_leases(
    ctx: &Ctx,
    worker_id: i64,
    capacity: u32,
    max_units: u32,
) -> Result<Vec<pb::LeaseGrant>, Error> {
    touch_worker(ctx, worker_id)?;
    let held: i64 = ctx
        .conn
        .prepare_cached("SELECT count(*) FROM leases WHERE worker_id = ?1 AND state = 'active'")?
        .query_row(params![worker_id], |r| r.get(0))?;
    // Runs only for workers that take them (`max_units` above `capacity`).
    let max_units = if max_units == 0 { capacity } else { max_units };
    let takes_runs = max_units > capacity;
    let mut room = ((i64::from(ctx.config.max_leases_per_worker) - held).max(0) as usize)
        .min(max_units as usize);
    let mut remaining = (capacity.min(ctx.config.max_capacity) as usize).min(room);
    let campaigns = running_campaigns_in_turn(ctx)?;
    let ready = campaigns.iter().filter(|c| !c.1).count();
    let mut grants = Vec::new();
    for (index, (campaign_id, waiting)) in campaigns.iter().enumerate() {
        if remaining == 0 {
            break;
        }
        let share = if *waiting {
            remaining
        } else {
            remaining.div_ceil(ready - index)
        };
        // Tiny units travel in runs: several units per slot, each its own lease.
        let run = if takes_runs {
            pacing::run_length(ctx, *campaign_id)?
        } else {
            1
        };
        let got = grant_from_campaign(ctx, *campaign_id, worker_id, (share * run).min(room))?;
        room -= got.len();
        remaining = remaining.saturating_sub(got.len().div_ceil(run)).min(room);
        grants.extend(got);
    }
    Ok(grants)
}

/// The running campaigns in the order they are served, each with whether it waits on a
/// running predecessor (see `successors`): ready ones first, fewest active leases first, then
/// least recently served; waiting ones last, earliest first, taking only what the others
/// leave. Counting a campaign's active leases costs a scan of them on every grant (a
/// thousand workers hold a thousand), so a lone running campaign skips the sort (it cannot
/// wait: its predecessor is not running).
fn running_campaigns_in_turn(ctx: &Ctx) -> Result<Vec<(i64, bool)>, Error> {
    let running: Vec<i64> = ctx
        .conn
        .prepare_cached("SELECT id FROM campaigns WHERE state = 'running' LIMIT 2")?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    if running.len() < 2 {
        return Ok(running.into_iter().map(|id| (id, false)).collect());
    }
    Ok(ctx
        .conn
        .prepare_cached(
            "SELECT c.id, EXISTS (SELECT 1 FROM campaigns p WHERE p.id = c.after_campaign
                                    AND p.state IN ('running', 'paused')) AS waiting
             FROM campaigns c WHERE c.state = 'running'
             ORDER BY waiting, CASE WHEN waiting THEN c.id ELSE 0 END,
                      (SELECT count(*) FROM leases l WHERE l.campaign_id = c.id AND l.state = 'active'),
                      c.last_lease_id, c.id",
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?)
}

/// Grants up to `limit` of a campaign's pending units to a worker, splitting more off when
/// too few are pending; near the campaign's end, no more than the worker's share of what is
/// left (`pacing::even_finish`).
fn grant_from_campaign(
    ctx: &Ctx,
    campaign_id: i64,
    worker_id: i64,
    limit: usize,
) -> Result<Vec<pb::LeaseGrant>, Error> {
    let mut pending = units::pending_units(ctx, campaign_id, worker_id, limit)?;
    while pending.len() < limit {
        if units::split_more(ctx, campaign_id, worker_id, limit - pending.len())? == 0 {
            break;
        }
        pending = units::pending_units(ctx, campaign_id, worker_id, limit)?;
    }
    if pending.is_empty() {
        return Ok(Vec::new());
    }
    let granting: i64 = pending.iter().map(|u| u.parts.max(1)).sum();
    if let Some(share) = pacing::even_finish(ctx, campaign_id, worker_id, granting)? {
        let keep = share.units_within(pending.iter().map(|u| u.parts));
        pending.truncate(keep);
    }
    let (problem, params_json, bound, solver_version): (String, String, Option<i64>, u32) = ctx
        .conn
        .prepare_cached(
            "SELECT problem, params_json, bound, solver_version FROM campaigns WHERE id = ?1",
        )?
        .query_row(params![campaign_id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })?;
    let deadline = ctx.now + ctx.config.lease_ttl_ms;
    let mut grants = Vec::with_capacity(pending.len());
    for mut unit in pending {
        let dropped =
            unit.cursor.is_some() && !trusts_checkpoint(ctx, worker_id, unit.cursor_worker)?;
        if dropped {
            // Not this worker's to resume: the unit starts again from its beginning.
            unit.cursor = None;
            units::drop_checkpoint(ctx, unit.id)?;
        }
        ctx.conn
            .prepare_cached(
                "INSERT INTO leases (unit_id, campaign_id, worker_id, granted_ms, deadline_ms, state, replica)
                 VALUES (?1, ?2, ?3, ?4, ?5, 'active', ?6)",
            )?
            .execute(params![unit.id, campaign_id, worker_id, ctx.now, deadline, unit.replica])?;
        let lease_id = ctx.conn.last_insert_rowid();
        units::mark_leased(ctx, unit.id, lease_id)?;
        campaigns::note_served(ctx, campaign_id, lease_id)?;
        event(
            ctx.conn,
            ctx.now,
            "lease_granted",
            Some(campaign_id),
            Some(unit.id),
            Some(lease_id),
            Some(worker_id),
            json!({"replica": unit.replica, "attempt": unit.attempts + 1,
                   "resumes": unit.cursor.is_some(), "checkpoint_dropped": dropped}),
        )?;
        grants.push(pb::LeaseGrant {
            lease_id,
            campaign_id,
            problem: problem.clone(),
            params_json: params_json.clone(),
            unit_id: unit.id,
            unit_label: unit.label,
            unit_payload: unit.payload,
            cursor: unit.cursor.unwrap_or_default(),
            deadline_ms: deadline,
            bound,
            attempt: unit.attempts + 1,
            replica: unit.replica,
            solver_version,
        });
    }
    Ok(grants)
}

/// A worker's full account of the leases it holds, sent with a heartbeat.
pub struct HeldLeases<'a> {
    /// The leases it is running or has queued.
    pub listed: &'a [pb::LeaseProgress],
    /// The leases whose results or releases wait in its outbox.
    pub delivering: &'a [i64],
    /// The highest lease id it has received.
    pub newest_lease_id: i64,
}

/// Renews a worker's leases, stores their progress and checkpoints, and tells the worker
/// which leases to drop and what the current bounds are. With `held`, the worker's active
/// leases it has forgotten are taken back first.
pub fn heartbeat(
    ctx: &Ctx,
    worker_id: i64,
    progress: &[pb::LeaseProgress],
    idle_workers: bool,
    held: Option<HeldLeases>,
) -> Result<pb::HeartbeatReply, Error> {
    touch_worker(ctx, worker_id)?;
    if let Some(held) = held {
        take_back_forgotten(ctx, worker_id, &held)?;
    }
    let mut reply = pb::HeartbeatReply::default();
    let mut campaigns = Vec::new();
    for item in progress {
        let verdict = renew_lease(ctx, worker_id, item)?;
        if let Some((campaign_id, deadline)) = verdict {
            campaigns.push(campaign_id);
            let split_requested = idle_workers && !units::has_pending_units(ctx, campaign_id)?;
            reply.leases.push(pb::LeaseStatus {
                lease_id: item.lease_id,
                verdict: pb::LeaseVerdict::Continue as i32,
                deadline_ms: deadline,
                split_requested,
            });
        } else {
            reply.leases.push(pb::LeaseStatus {
                lease_id: item.lease_id,
                verdict: pb::LeaseVerdict::Cancel as i32,
                deadline_ms: 0,
                split_requested: false,
            });
        }
    }
    campaigns.sort_unstable();
    campaigns.dedup();
    for campaign_id in campaigns {
        let bound: Option<i64> = ctx
            .conn
            .prepare_cached("SELECT bound FROM campaigns WHERE id = ?1")?
            .query_row(params![campaign_id], |r| r.get(0))?;
        if let Some(bound) = bound {
            reply.bounds.push(pb::CampaignBound { campaign_id, bound });
        }
    }
    Ok(reply)
}

/// Takes back the active leases of a worker that its account does not name although they
/// are not newer than the newest lease it has received: they were granted in a reply lost
/// with its connection, and the worker will never run them. Their units go back to pending
/// at once (no attempt counted, checkpoints kept) instead of waiting for the lease time.
/// Leases newer than the worker's newest may still be on their way and are left alone.
fn take_back_forgotten(ctx: &Ctx, worker_id: i64, held: &HeldLeases) -> Result<usize, Error> {
    let named: std::collections::HashSet<i64> = held
        .listed
        .iter()
        .map(|p| p.lease_id)
        .chain(held.delivering.iter().copied())
        .collect();
    let forgotten: Vec<LeaseRow> = active_of_worker(ctx.conn, worker_id)?
        .into_iter()
        .filter(|lease| lease.id <= held.newest_lease_id && !named.contains(&lease.id))
        .collect();
    for lease in &forgotten {
        end_lease(ctx, lease, "released", false, None)?;
        released_event(
            ctx,
            lease,
            json!({"forgotten": true, "newest_lease_id": held.newest_lease_id,
                   "checkpoint": false, "nodes": 0, "cpu_seconds": 0.0}),
        )?;
    }
    Ok(forgotten.len())
}

/// Extends one lease; `None` when the worker should stop working on it.
fn renew_lease(
    ctx: &Ctx,
    worker_id: i64,
    item: &pb::LeaseProgress,
) -> Result<Option<(i64, i64)>, Error> {
    let Some(lease) = load_lease(ctx.conn, item.lease_id)? else {
        return Ok(None);
    };
    if lease.worker_id != worker_id || lease.state != "active" {
        return Ok(None);
    }
    let campaign_state: String = ctx
        .conn
        .prepare_cached("SELECT state FROM campaigns WHERE id = ?1")?
        .query_row(params![lease.campaign_id], |r| r.get(0))?;
    if campaign_state != "running" {
        end_lease(ctx, &lease, "cancelled", false, None)?;
        return Ok(None);
    }
    let deadline = ctx.now + ctx.config.lease_ttl_ms;
    let fraction = (item.fraction >= 0.0 && item.fraction <= 1.0).then_some(item.fraction);
    ctx.conn
        .prepare_cached(
            "UPDATE leases SET deadline_ms = ?2, nodes = max(nodes, ?3), fraction = ?4 WHERE id = ?1",
        )?
        .execute(params![lease.id, deadline, item.nodes as i64, fraction])?;
    if !item.cursor.is_empty() {
        units::store_checkpoint(ctx, &lease, &item.cursor)?;
    }
    Ok(Some((lease.campaign_id, deadline)))
}

/// Ends a lease in `state`; when it still holds its unit, the unit goes back to pending
/// (counting a failed attempt when `count_attempt`), keeping or replacing its checkpoint.
pub(crate) fn end_lease(
    ctx: &Ctx,
    lease: &LeaseRow,
    state: &str,
    count_attempt: bool,
    cursor: Option<&[u8]>,
) -> Result<(), Error> {
    ctx.conn
        .prepare_cached("UPDATE leases SET state = ?2, ended_ms = ?3 WHERE id = ?1")?
        .execute(params![lease.id, state, ctx.now])?;
    units::take_back(ctx, lease, state, count_attempt, cursor)
}

/// Marks a lease completed (its result arrived, counted or not).
pub(crate) fn mark_completed(ctx: &Ctx, lease_id: i64) -> Result<(), Error> {
    ctx.conn
        .prepare_cached(
            "UPDATE leases SET state = 'completed', ended_ms = ?2 WHERE id = ?1 AND state != 'completed'",
        )?
        .execute(params![lease_id, ctx.now])?;
    Ok(())
}

/// Cancels a lease if it is still active (another run's result made it useless); its
/// worker is told to stop at its next heartbeat.
pub(crate) fn cancel_if_active(ctx: &Ctx, lease_id: i64) -> Result<(), Error> {
    ctx.conn
        .prepare_cached(
            "UPDATE leases SET state = 'cancelled', ended_ms = ?2 WHERE id = ?1 AND state = 'active'",
        )?
        .execute(params![lease_id, ctx.now])?;
    Ok(())
}

/// Expires every active lease whose deadline passed; returns how many.
pub fn expire_leases(ctx: &Ctx) -> Result<usize, Error> {
    let expired = leases_where(
        ctx.conn,
        "state = 'active' AND deadline_ms < ?1 LIMIT 10000",
        ctx.now,
    )?;
    for lease in &expired {
        end_lease(ctx, lease, "expired", true, None)?;
        event(
            ctx.conn,
            ctx.now,
            "lease_expired",
            Some(lease.campaign_id),
            Some(lease.unit_id),
            Some(lease.id),
            Some(lease.worker_id),
            json!({}),
        )?;
    }
    Ok(expired.len())
}

/// Gives every active lease a full lease time from now: called when the coordinator starts,
/// so the time it was down does not expire work that workers kept doing.
pub fn grace_after_restart(ctx: &Ctx) -> Result<usize, Error> {
    let changed = ctx
        .conn
        .prepare_cached(
            "UPDATE leases SET deadline_ms = max(deadline_ms, ?1) WHERE state = 'active'",
        )?
        .execute(params![ctx.now + ctx.config.lease_ttl_ms])?;
    event(
        ctx.conn,
        ctx.now,
        "coordinator_started",
        None,
        None,
        None,
        None,
        json!({"version": grind_shared::VERSION, "git_commit": grind_shared::GIT_COMMIT,
               "active_leases": changed}),
    )?;
    Ok(changed)
}

/// A worker gives a lease back unfinished; its checkpoint is kept and no attempt is counted.
pub fn release(
    ctx: &Ctx,
    worker_id: i64,
    lease_id: i64,
    cursor: &[u8],
    usage: Usage,
) -> Result<(), Error> {
    let lease = owned_lease(ctx.conn, worker_id, lease_id)?;
    if lease.state != "active" {
        return Ok(());
    }
    end_lease(ctx, &lease, "released", false, Some(cursor))?;
    campaigns::add_usage(ctx, lease.campaign_id, usage)?;
    released_event(
        ctx,
        &lease,
        json!({"checkpoint": !cursor.is_empty(), "nodes": usage.nodes, "cpu_seconds": usage.cpu_seconds}),
    )
}

/// Records that `lease` was handed back (by its worker, or taken back as forgotten).
fn released_event(ctx: &Ctx, lease: &LeaseRow, detail: serde_json::Value) -> Result<(), Error> {
    event(
        ctx.conn,
        ctx.now,
        "lease_released",
        Some(lease.campaign_id),
        Some(lease.unit_id),
        Some(lease.id),
        Some(lease.worker_id),
        detail,
    )?;
    Ok(())
}
