//! The `workers` table: registration, liveness, standing, bans and checkpoint trust. The
//! only writer of the table; calls no other table module.

use grind_proto::v1 as pb;
use grind_shared::placement::HostFacts;
use rusqlite::{params, Connection, OptionalExtension};

use crate::error::Error;
use crate::scheduler::Ctx;

/// A worker's row as registration checks it: its host, whether banned, its token.
pub fn identity(ctx: &Ctx, worker_id: i64) -> Result<Option<(String, bool, Option<i64>)>, Error> {
    Ok(ctx
        .conn
        .prepare_cached("SELECT host, banned, token_id FROM workers WHERE id = ?1")?
        .query_row(params![worker_id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .optional()?)
}

/// Takes a known worker identity back with the registration's name, cores and versions.
pub fn reregister(ctx: &Ctx, worker_id: i64, req: &pb::RegisterRequest) -> Result<(), Error> {
    ctx.conn
        .prepare_cached(
            "UPDATE workers SET name = ?2, cores = ?3, version = ?4, git_commit = ?5,
             last_seen_ms = ?6, native_code_allowed = ?7, platform = ?8 WHERE id = ?1",
        )?
        .execute(params![
            worker_id,
            req.name,
            req.cores,
            req.version,
            req.git_commit,
            ctx.now,
            req.native_code_allowed,
            req.platform
        ])?;
    Ok(())
}

/// Inserts a new worker; returns its id.
pub fn insert(ctx: &Ctx, req: &pb::RegisterRequest, token_id: Option<i64>) -> Result<i64, Error> {
    ctx.conn
        .prepare_cached(
            "INSERT INTO workers (name, host, cores, version, git_commit, registered_ms,
                 last_seen_ms, token_id, native_code_allowed, platform)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?7, ?8, ?9)",
        )?
        .execute(params![
            req.name,
            req.host,
            req.cores,
            req.version,
            req.git_commit,
            ctx.now,
            token_id,
            req.native_code_allowed,
            req.platform
        ])?;
    Ok(ctx.conn.last_insert_rowid())
}

/// What a worker stated about itself when it registered (its opt-in to run users' native
/// code, its platform); an unknown worker states nothing.
pub fn host_facts(conn: &Connection, worker_id: i64) -> Result<HostFacts, Error> {
    Ok(conn
        .prepare_cached("SELECT native_code_allowed, platform FROM workers WHERE id = ?1")?
        .query_row(params![worker_id], |r| {
            Ok(HostFacts {
                native_code_allowed: r.get(0)?,
                platform: r.get(1)?,
            })
        })
        .optional()?
        .unwrap_or_default())
}

/// How stale a worker's `last_seen_ms` may get before a call rewrites it: a busy worker
/// calls several times a second, and each rewrite is a page write in the commit.
pub const SEEN_RESOLUTION_MS: i64 = 1_000;

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

/// Marks a worker banned, now; returns false when there is no such worker.
pub fn set_banned(ctx: &Ctx, worker_id: i64) -> Result<bool, Error> {
    Ok(ctx
        .conn
        .prepare_cached("UPDATE workers SET banned = 1, banned_ms = ?2 WHERE id = ?1")?
        .execute(params![worker_id, ctx.now])?
        > 0)
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
pub fn trusts_checkpoint(ctx: &Ctx, worker_id: i64, writer: Option<i64>) -> Result<bool, Error> {
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

/// The requesting worker's lanes (solve threads) and those of every worker holding an
/// active lease of a campaign (itself included), each at least 1.
pub fn lanes(ctx: &Ctx, campaign_id: i64, worker_id: i64) -> Result<(i64, i64), Error> {
    let (own, all): (i64, i64) = ctx
        .conn
        .prepare_cached(
            "SELECT (SELECT max(cores, 1) FROM workers WHERE id = ?2),
                    (SELECT coalesce(sum(max(cores, 1)), 0) FROM workers
                     WHERE id = ?2 OR id IN (SELECT worker_id FROM leases
                                             WHERE campaign_id = ?1 AND state = 'active'))",
        )?
        .query_row(params![campaign_id, worker_id], |r| {
            Ok((r.get::<_, Option<i64>>(0)?.unwrap_or(1), r.get(1)?))
        })?;
    Ok((own, all.max(own)))
}
