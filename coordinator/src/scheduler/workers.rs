//! Workers: registration, liveness, standing and bans. The only writer of the `workers`
//! table.

use grind_proto::v1 as pb;
use rusqlite::{params, Connection, OptionalExtension};
use serde_json::json;

use super::events::event;
use super::{leases, units, Ctx};
use crate::error::Error;

/// Records a worker and returns its id (a new one, or its previous one when still known).
pub fn register_worker(
    ctx: &Ctx,
    req: &pb::RegisterRequest,
    token_id: Option<i64>,
) -> Result<i64, Error> {
    for (what, value, max) in [
        ("name", &req.name, 200),
        ("host", &req.host, 255),
        ("version", &req.version, 100),
        ("git commit", &req.git_commit, 100),
    ] {
        if value.len() > max {
            return Err(Error::InvalidArgument(format!(
                "worker {what} is longer than {max} bytes"
            )));
        }
    }
    if req.previous_worker_id > 0 {
        let known: Option<(String, bool, Option<i64>)> = ctx
            .conn
            .prepare_cached("SELECT host, banned, token_id FROM workers WHERE id = ?1")?
            .query_row(params![req.previous_worker_id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .optional()?;
        // An identity is only taken back by the token that created it.
        if let Some((host, banned, _)) = known.filter(|k| k.2 == token_id) {
            if banned {
                return Err(Error::Banned(req.previous_worker_id));
            }
            if host == req.host {
                ctx.conn
                    .prepare_cached(
                        "UPDATE workers SET name = ?2, cores = ?3, version = ?4, git_commit = ?5,
                         last_seen_ms = ?6 WHERE id = ?1",
                    )?
                    .execute(params![
                        req.previous_worker_id,
                        req.name,
                        req.cores,
                        req.version,
                        req.git_commit,
                        ctx.now
                    ])?;
                event(
                    ctx.conn,
                    ctx.now,
                    "worker_reregistered",
                    None,
                    None,
                    None,
                    Some(req.previous_worker_id),
                    json!({"name": req.name, "host": req.host, "version": req.version,
                           "git_commit": req.git_commit, "cores": req.cores}),
                )?;
                return Ok(req.previous_worker_id);
            }
        }
    }
    ctx.conn
        .prepare_cached(
            "INSERT INTO workers (name, host, cores, version, git_commit, registered_ms,
                 last_seen_ms, token_id)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?7)",
        )?
        .execute(params![
            req.name,
            req.host,
            req.cores,
            req.version,
            req.git_commit,
            ctx.now,
            token_id
        ])?;
    let id = ctx.conn.last_insert_rowid();
    event(
        ctx.conn,
        ctx.now,
        "worker_registered",
        None,
        None,
        None,
        Some(id),
        json!({"name": req.name, "host": req.host, "version": req.version,
               "git_commit": req.git_commit, "cores": req.cores}),
    )?;
    Ok(id)
}

/// How stale a worker's `last_seen_ms` may get before a call rewrites it: a busy worker
/// calls several times a second, and each rewrite is a page write in the commit.
const SEEN_RESOLUTION_MS: i64 = 1_000;

/// Checks that a worker exists and is not banned, and notes that it was seen (to within
/// [`SEEN_RESOLUTION_MS`]).
pub fn touch_worker(ctx: &Ctx, worker_id: i64) -> Result<(), Error> {
    let found: Option<(bool, i64)> = ctx
        .conn
        .prepare_cached("SELECT banned, last_seen_ms FROM workers WHERE id = ?1")?
        .query_row(params![worker_id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    match found {
        None => Err(Error::UnknownWorker(worker_id)),
        Some((true, _)) => Err(Error::Banned(worker_id)),
        Some((false, seen)) => {
            if ctx.now - seen >= SEEN_RESOLUTION_MS {
                ctx.conn
                    .prepare_cached("UPDATE workers SET last_seen_ms = ?2 WHERE id = ?1")?
                    .execute(params![worker_id, ctx.now])?;
            }
            Ok(())
        }
    }
}

/// Bans a worker: its further calls are refused, its active leases go back to pending and
/// its units restart from their beginning (its checkpoints are not trusted). Returns how many
/// leases were taken back.
pub fn ban_worker(ctx: &Ctx, worker_id: i64, reason: &str) -> Result<usize, Error> {
    let changed = ctx
        .conn
        .prepare_cached("UPDATE workers SET banned = 1, banned_ms = ?2 WHERE id = ?1")?
        .execute(params![worker_id, ctx.now])?;
    if changed == 0 {
        return Err(Error::NotFound(format!("no worker {worker_id}")));
    }
    let active = leases::active_of_worker(ctx.conn, worker_id)?;
    for lease in &active {
        leases::end_lease(ctx, lease, "cancelled", false, None)?;
        units::forget_unleased_checkpoint(ctx, lease.unit_id)?;
    }
    let mut reason = reason.to_string();
    reason.truncate(500);
    event(
        ctx.conn,
        ctx.now,
        "worker_banned",
        None,
        None,
        None,
        Some(worker_id),
        json!({"reason": reason, "leases_taken_back": active.len()}),
    )?;
    Ok(active.len())
}

/// The token a worker registered with and whether it is banned; `None` if it is unknown.
pub fn worker_standing(
    conn: &Connection,
    worker_id: i64,
) -> Result<Option<(Option<i64>, bool)>, Error> {
    Ok(conn
        .prepare_cached("SELECT token_id, banned FROM workers WHERE id = ?1")?
        .query_row(params![worker_id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?)
}

/// Whether `worker_id` may resume a checkpoint written by `writer`: its own, or one written
/// by a worker registered with the same authentication token (the token's holder vouches for
/// both). A checkpoint is the writer's unverified claim about the work done so far, so any
/// other worker restarts the unit from its beginning: a forged checkpoint can then only
/// spoil its writer's own results, which replication checks. Workers registered without a
/// token (a coordinator that requires none, which only listens on loopback) form one trust
/// domain: any of them can act for any other anyway, so refusing their checkpoints would only
/// lose work (for example when `grind run --db` resumes a campaign with new worker ids).
pub(crate) fn trusts_checkpoint(
    ctx: &Ctx,
    worker_id: i64,
    writer: Option<i64>,
) -> Result<bool, Error> {
    let Some(writer) = writer else {
        return Ok(false);
    };
    if writer == worker_id {
        return Ok(true);
    }
    Ok(ctx
        .conn
        .prepare_cached(
            "SELECT EXISTS(SELECT 1 FROM workers AS reader, workers AS author
                           WHERE reader.id = ?1 AND author.id = ?2
                             AND reader.token_id IS author.token_id)",
        )?
        .query_row(params![worker_id, writer], |r| r.get(0))?)
}
