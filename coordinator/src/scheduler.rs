//! The lease and unit state machine. Every function here runs inside one store write (one
//! atomic change), takes "now" from its caller (the injected clock), and never touches the
//! network: the gRPC layer decodes, verifies what needs CPU outside the store, then calls in.
//!
//! Unit states: pending -> leased -> done, or back to pending (lease expired or released,
//! or a replica run wanted), or failed after `max_attempts` failed attempts.
//! Lease states: active -> completed | expired | released | cancelled | failed.

use grind_proto::v1 as pb;
use grind_shared::count::add_counts;
use grind_shared::problem::Objective;
use grind_shared::registry;
use grind_shared::rng::splitmix64;
use rusqlite::{params, Connection, OptionalExtension};
use serde_json::{json, Value};

use crate::config::Config;
use crate::error::Error;
use crate::problems::Problems;

/// What every scheduler operation needs: the open transaction, the time, the settings and
/// the problem instances.
pub struct Ctx<'a> {
    /// The connection, inside the current write transaction.
    pub conn: &'a Connection,
    /// Now, in ms since the epoch.
    pub now: i64,
    /// Coordinator settings.
    pub config: &'a Config,
    /// Problem instances by campaign.
    pub problems: &'a Problems,
}

/// A worker's result after the CPU-heavy checks (re-scoring, sample verification) passed.
#[derive(Clone, Debug)]
pub enum VerifiedResult {
    /// An exact count, as a canonical decimal string.
    Count(String),
    /// The best solution of an optimisation unit (JSON text and its recomputed score), its
    /// verified proof-mode hits (JSON texts) and the checked child units it created.
    Best(Option<(String, i64)>, Vec<String>, Vec<ChildUnit>),
    /// Verified samples (JSON texts).
    Samples(Vec<String>),
    /// The solver failed on the worker; counts as a failed attempt.
    Failed(String),
}

/// A unit created by another unit's result, checked by the problem.
#[derive(Clone, Debug)]
pub struct ChildUnit {
    /// Shown to people.
    pub label: String,
    /// The child's payload.
    pub payload: Vec<u8>,
    /// Pending units are granted smallest priority first.
    pub priority: i64,
}

/// Resource use reported with a result.
#[derive(Clone, Copy, Debug, Default)]
pub struct Usage {
    /// Work items (search nodes) done.
    pub nodes: u64,
    /// CPU seconds spent.
    pub cpu_seconds: f64,
    /// Wall seconds spent.
    pub wall_seconds: f64,
    /// The solver version the worker reports it ran (0: not reported).
    pub solver_version: u32,
}

/// Where an offered incumbent comes from, recorded in its `improvement` event.
#[derive(Clone, Copy, Debug, Default)]
pub struct Origin<'a> {
    /// The worker that found it (none for an import).
    pub worker_id: Option<i64>,
    /// The lease it was found under.
    pub lease_id: Option<i64>,
    /// The unit it was found in.
    pub unit_id: Option<i64>,
    /// What delivered it: `unit result`, `improvement`, `import: ...`.
    pub source: &'a str,
    /// The solver version that found it, as its worker reported it (0: unknown).
    pub solver_version: u32,
}

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

/// Appends one provenance event.
#[allow(clippy::too_many_arguments)]
pub fn event(
    conn: &Connection,
    now: i64,
    kind: &str,
    campaign: Option<i64>,
    unit: Option<i64>,
    lease: Option<i64>,
    worker: Option<i64>,
    detail: Value,
) -> Result<i64, Error> {
    conn.prepare_cached(
        "INSERT INTO events (at_ms, kind, campaign_id, unit_id, lease_id, worker_id, detail)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        now,
        kind,
        campaign,
        unit,
        lease,
        worker,
        detail.to_string()
    ])?;
    Ok(conn.last_insert_rowid())
}

/// Settings of a new campaign.
pub struct NewCampaign<'a> {
    /// Registered problem name.
    pub problem: &'a str,
    /// Parameters as JSON text.
    pub params_json: &'a str,
    /// Display name (defaults to problem and parameters).
    pub name: &'a str,
    /// Replication rate for count and search units; `None` = server default.
    pub verify_rate: Option<f64>,
    /// Failed attempts before a unit fails; `None` = server default.
    pub max_attempts: Option<u32>,
    /// The family (contest) label the campaign belongs to, if any.
    pub family: Option<&'a str>,
}

/// Most campaigns one family of parameters may create.
pub const MAX_FAMILY_MEMBERS: usize = 10_000;

/// Creates the campaign `new` describes, or one campaign per member when its parameters name
/// a family of instances (see `ProblemDef::family`), all in one transaction.
pub fn create_campaigns(ctx: &Ctx, new: &NewCampaign) -> Result<Vec<i64>, Error> {
    let entry = registry::lookup(new.problem)?;
    let params: Value = serde_json::from_str(new.params_json)
        .map_err(|e| Error::InvalidArgument(format!("parameters are not JSON: {e}")))?;
    let Some(members) = entry.family(&params)? else {
        return Ok(vec![create_campaign(ctx, new)?]);
    };
    if new.family.is_some_and(|f| f.len() > 200) {
        return Err(Error::InvalidArgument(
            "a family label must be at most 200 bytes".into(),
        ));
    }
    let label = match new.family {
        Some(label) => label.to_string(),
        None => format!("{} {}", new.problem, params),
    };
    if members.is_empty() || members.len() > MAX_FAMILY_MEMBERS {
        return Err(Error::InvalidArgument(format!(
            "the parameters name {} campaigns; between 1 and {MAX_FAMILY_MEMBERS} are allowed",
            members.len()
        )));
    }
    members
        .iter()
        .enumerate()
        .map(|(index, member)| {
            let params_json = member.to_string();
            let name = if new.name.is_empty() {
                String::new()
            } else {
                format!("{} #{}", new.name, index + 1)
            };
            create_campaign(
                ctx,
                &NewCampaign {
                    params_json: &params_json,
                    name: &name,
                    family: Some(&label),
                    ..*new
                },
            )
        })
        .collect()
}

/// Creates one running campaign after validating its problem and parameters.
pub fn create_campaign(ctx: &Ctx, new: &NewCampaign) -> Result<i64, Error> {
    let entry = registry::lookup(new.problem)?;
    let params: Value = serde_json::from_str(new.params_json)
        .map_err(|e| Error::InvalidArgument(format!("parameters are not JSON: {e}")))?;
    let (canonical, problem) = entry.build(&params)?;
    let verify_rate = new.verify_rate.unwrap_or(ctx.config.verify_rate);
    if !(0.0..=1.0).contains(&verify_rate) {
        return Err(Error::InvalidArgument(format!(
            "verify rate {verify_rate} is not between 0 and 1"
        )));
    }
    let max_attempts = new.max_attempts.unwrap_or(ctx.config.max_attempts);
    if max_attempts == 0 || max_attempts > 1000 {
        return Err(Error::InvalidArgument(format!(
            "max attempts {max_attempts} is not between 1 and 1000"
        )));
    }
    let canonical_text = canonical.to_string();
    let name = if new.name.is_empty() {
        format!("{} {}", new.problem, canonical_text)
    } else {
        new.name.to_string()
    };
    let seed = splitmix64(ctx.now as u64 ^ 0x6772_696e_6400) as i64;
    ctx.conn
        .prepare_cached(
            "INSERT INTO campaigns (name, problem, params_json, objective, exhaustive,
                 solver_version, state, created_ms, verify_rate, max_attempts, seed, bound, family)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'running', ?7, ?8, ?9, ?10, ?11, ?12)",
        )?
        .execute(params![
            name,
            new.problem,
            canonical_text,
            problem.objective().as_str(),
            problem.exhaustive(),
            entry.solver_version,
            ctx.now,
            verify_rate,
            max_attempts,
            seed,
            problem.initial_bound(),
            new.family,
        ])?;
    let id = ctx.conn.last_insert_rowid();
    event(
        ctx.conn,
        ctx.now,
        "campaign_created",
        Some(id),
        None,
        None,
        None,
        json!({"problem": new.problem, "params": canonical, "verify_rate": verify_rate,
               "max_attempts": max_attempts, "solver_version": entry.solver_version}),
    )?;
    Ok(id)
}

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
                return Err(Error::PermissionDenied(format!(
                    "worker {} is banned",
                    req.previous_worker_id
                )));
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

/// Checks that a worker exists and is not banned, and notes that it was seen.
pub fn touch_worker(ctx: &Ctx, worker_id: i64) -> Result<(), Error> {
    let banned: Option<bool> = ctx
        .conn
        .prepare_cached("SELECT banned FROM workers WHERE id = ?1")?
        .query_row(params![worker_id], |r| r.get(0))
        .optional()?;
    match banned {
        None => Err(Error::NotFound(format!(
            "unknown worker {worker_id}: register first"
        ))),
        Some(true) => Err(Error::PermissionDenied(format!(
            "worker {worker_id} is banned"
        ))),
        Some(false) => {
            ctx.conn
                .prepare_cached("UPDATE workers SET last_seen_ms = ?2 WHERE id = ?1")?
                .execute(params![worker_id, ctx.now])?;
            Ok(())
        }
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

/// Grants up to `capacity` leases to a worker, sharing them fairly among running campaigns
/// (fewest active leases first, then least recently served, so that many campaigns on few
/// workers take turns) and producing units lazily from each campaign's splitter.
pub fn grant_leases(
    ctx: &Ctx,
    worker_id: i64,
    capacity: u32,
) -> Result<Vec<pb::LeaseGrant>, Error> {
    touch_worker(ctx, worker_id)?;
    let held: i64 = ctx
        .conn
        .prepare_cached("SELECT count(*) FROM leases WHERE worker_id = ?1 AND state = 'active'")?
        .query_row(params![worker_id], |r| r.get(0))?;
    let room = (i64::from(ctx.config.max_leases_per_worker) - held).max(0) as usize;
    let mut remaining = (capacity.min(ctx.config.max_capacity) as usize).min(room);
    let campaigns: Vec<i64> = ctx
        .conn
        .prepare_cached(
            "SELECT c.id FROM campaigns c WHERE c.state = 'running'
             ORDER BY (SELECT count(*) FROM leases l WHERE l.campaign_id = c.id AND l.state = 'active'),
                      c.last_lease_id, c.id",
        )?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    let mut grants = Vec::new();
    for (index, campaign_id) in campaigns.iter().enumerate() {
        if remaining == 0 {
            break;
        }
        let share = remaining.div_ceil(campaigns.len() - index);
        let got = grant_from_campaign(ctx, *campaign_id, worker_id, share)?;
        remaining -= got.len();
        grants.extend(got);
    }
    Ok(grants)
}

struct PendingUnit {
    id: i64,
    label: String,
    payload: Vec<u8>,
    cursor: Option<Vec<u8>>,
    cursor_worker: Option<i64>,
    attempts: u32,
    replica: bool,
}

fn pending_units(
    ctx: &Ctx,
    campaign_id: i64,
    worker_id: i64,
    limit: usize,
) -> Result<Vec<PendingUnit>, Error> {
    let units = ctx
        .conn
        .prepare_cached(
            "SELECT u.id, u.label, u.payload, u.cursor, u.attempts, u.replica_needed, u.cursor_worker
             FROM units u
             WHERE u.campaign_id = ?1 AND u.state = 'pending'
               AND (u.replica_needed = 0 OR ?3 OR NOT EXISTS
                    (SELECT 1 FROM results r WHERE r.unit_id = u.id AND r.worker_id = ?2))
             ORDER BY u.priority, u.id LIMIT +?4",
        )?
        .query_map(
            params![
                campaign_id,
                worker_id,
                ctx.config.allow_self_replication,
                limit as i64
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
                })
            },
        )?
        .collect::<Result<_, _>>()?;
    Ok(units)
}

/// Asks the campaign's splitter for more units; returns how many were added.
fn split_more(ctx: &Ctx, campaign_id: i64, wanted: usize) -> Result<usize, Error> {
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
    let batch = problem.split_from(
        cursor.as_deref(),
        wanted.max(ctx.config.split_batch),
        incumbent.as_ref(),
    )?;
    let added = insert_units(ctx, campaign_id, next_seq, &batch.units)?;
    ctx.conn
        .prepare_cached(
            "UPDATE campaigns SET split_cursor = ?2, split_done = ?3, next_seq = next_seq + ?4
             WHERE id = ?1",
        )?
        .execute(params![
            campaign_id,
            batch.next,
            batch.next.is_none(),
            added as i64
        ])?;
    if batch.next.is_none() {
        maybe_finish_campaign(ctx, campaign_id)?;
    }
    Ok(added)
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

fn insert_units(
    ctx: &Ctx,
    campaign_id: i64,
    first_seq: i64,
    units: &[grind_shared::problem::UnitSpec],
) -> Result<usize, Error> {
    let mut insert = ctx.conn.prepare_cached(
        "INSERT INTO units (campaign_id, seq, label, payload, state) VALUES (?1, ?2, ?3, ?4, 'pending')",
    )?;
    for (offset, unit) in units.iter().enumerate() {
        insert.execute(params![
            campaign_id,
            first_seq + offset as i64,
            unit.label,
            unit.payload
        ])?;
    }
    Ok(units.len())
}

fn grant_from_campaign(
    ctx: &Ctx,
    campaign_id: i64,
    worker_id: i64,
    limit: usize,
) -> Result<Vec<pb::LeaseGrant>, Error> {
    let mut units = pending_units(ctx, campaign_id, worker_id, limit)?;
    while units.len() < limit {
        if split_more(ctx, campaign_id, limit - units.len())? == 0 {
            break;
        }
        units = pending_units(ctx, campaign_id, worker_id, limit)?;
    }
    if units.is_empty() {
        return Ok(Vec::new());
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
    let mut grants = Vec::with_capacity(units.len());
    for mut unit in units {
        let dropped =
            unit.cursor.is_some() && !trusts_checkpoint(ctx, worker_id, unit.cursor_worker)?;
        if dropped {
            // Not this worker's to resume: the unit starts again from its beginning.
            unit.cursor = None;
            ctx.conn
                .prepare_cached(
                    "UPDATE units SET cursor = NULL, cursor_worker = NULL WHERE id = ?1",
                )?
                .execute(params![unit.id])?;
        }
        ctx.conn
            .prepare_cached(
                "INSERT INTO leases (unit_id, campaign_id, worker_id, granted_ms, deadline_ms, state, replica)
                 VALUES (?1, ?2, ?3, ?4, ?5, 'active', ?6)",
            )?
            .execute(params![unit.id, campaign_id, worker_id, ctx.now, deadline, unit.replica])?;
        let lease_id = ctx.conn.last_insert_rowid();
        ctx.conn
            .prepare_cached("UPDATE units SET state = 'leased', lease_id = ?2 WHERE id = ?1")?
            .execute(params![unit.id, lease_id])?;
        ctx.conn
            .prepare_cached("UPDATE campaigns SET last_lease_id = ?2 WHERE id = ?1")?
            .execute(params![campaign_id, lease_id])?;
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

/// Whether `worker_id` may resume a checkpoint written by `writer`: its own, or one written
/// by a worker registered with the same authentication token (the token's holder vouches for
/// both). A checkpoint is the writer's unverified claim about the work done so far, so any
/// other worker restarts the unit from its beginning: a forged checkpoint can then only
/// spoil its writer's own results, which replication checks. Workers registered without a
/// token (a coordinator that requires none, which only listens on loopback) form one trust
/// domain: any of them can act for any other anyway, so refusing their checkpoints would only
/// lose work (for example when `grind run --db` resumes a campaign with new worker ids).
fn trusts_checkpoint(ctx: &Ctx, worker_id: i64, writer: Option<i64>) -> Result<bool, Error> {
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

/// Renews a worker's leases, stores their progress and checkpoints, and tells the worker
/// which leases to drop and what the current bounds are.
pub fn heartbeat(
    ctx: &Ctx,
    worker_id: i64,
    progress: &[pb::LeaseProgress],
    idle_workers: bool,
) -> Result<pb::HeartbeatReply, Error> {
    touch_worker(ctx, worker_id)?;
    let mut reply = pb::HeartbeatReply::default();
    let mut campaigns = Vec::new();
    for item in progress {
        let verdict = renew_lease(ctx, worker_id, item)?;
        if let Some((campaign_id, deadline)) = verdict {
            campaigns.push(campaign_id);
            let split_requested = idle_workers && !has_pending_units(ctx, campaign_id)?;
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

/// Whether a campaign has units ready to lease (or more to split off).
fn has_pending_units(ctx: &Ctx, campaign_id: i64) -> Result<bool, Error> {
    Ok(ctx
        .conn
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM units WHERE campaign_id = ?1 AND state = 'pending')
                 OR NOT (SELECT split_done FROM campaigns WHERE id = ?1)",
        )?
        .query_row(params![campaign_id], |r| r.get(0))?)
}

/// The pruning bounds of every running campaign that has one.
pub fn running_bounds(conn: &Connection) -> Result<Vec<pb::CampaignBound>, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT id, bound FROM campaigns WHERE state = 'running' AND bound IS NOT NULL ORDER BY id",
        )?
        .query_map([], |r| {
            Ok(pb::CampaignBound {
                campaign_id: r.get(0)?,
                bound: r.get(1)?,
            })
        })?
        .collect::<Result<_, _>>()?)
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
        ctx.conn
            .prepare_cached(
                "UPDATE units SET cursor = ?2, cursor_worker = ?4 WHERE id = ?1 AND lease_id = ?3",
            )?
            .execute(params![
                lease.unit_id,
                item.cursor,
                lease.id,
                lease.worker_id
            ])?;
    }
    Ok(Some((lease.campaign_id, deadline)))
}

/// Ends a lease in `state`; when it still holds its unit, the unit goes back to pending
/// (counting a failed attempt when `count_attempt`), keeping or replacing its checkpoint.
fn end_lease(
    ctx: &Ctx,
    lease: &LeaseRow,
    state: &str,
    count_attempt: bool,
    cursor: Option<&[u8]>,
) -> Result<(), Error> {
    ctx.conn
        .prepare_cached("UPDATE leases SET state = ?2, ended_ms = ?3 WHERE id = ?1")?
        .execute(params![lease.id, state, ctx.now])?;
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
            json!({"attempts": attempts, "last": state}),
        )?;
        maybe_finish_campaign(ctx, lease.campaign_id)?;
    }
    Ok(())
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
    let active = leases_where(ctx.conn, "worker_id = ?1 AND state = 'active'", worker_id)?;
    for lease in &active {
        end_lease(ctx, lease, "cancelled", false, None)?;
        ctx.conn
            .prepare_cached(
                "UPDATE units SET cursor = NULL WHERE id = ?1 AND state = 'pending' AND lease_id IS NULL",
            )?
            .execute(params![lease.unit_id])?;
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
    add_usage(ctx, lease.campaign_id, usage)?;
    event(
        ctx.conn,
        ctx.now,
        "lease_released",
        Some(lease.campaign_id),
        Some(lease.unit_id),
        Some(lease.id),
        Some(worker_id),
        json!({"checkpoint": !cursor.is_empty(), "nodes": usage.nodes, "cpu_seconds": usage.cpu_seconds}),
    )?;
    Ok(())
}

/// A worker splits its leased unit: the donated parts become new pending units and the
/// unit keeps only `remaining_payload` (with `remaining_cursor`).
pub fn donate(ctx: &Ctx, worker_id: i64, req: &pb::DonateRequest) -> Result<u32, Error> {
    const MAX_DONATED: usize = 100_000;
    let lease = owned_lease(ctx.conn, worker_id, req.lease_id)?;
    if lease.state != "active" {
        return Err(Error::FailedPrecondition(format!(
            "lease {} is {}, not active",
            lease.id, lease.state
        )));
    }
    let holds_unit: bool = ctx
        .conn
        .prepare_cached("SELECT lease_id IS ?2 FROM units WHERE id = ?1")?
        .query_row(params![lease.unit_id, lease.id], |r| r.get(0))?;
    if !holds_unit {
        return Err(Error::FailedPrecondition(format!(
            "lease {} no longer holds unit {}",
            lease.id, lease.unit_id
        )));
    }
    if req.units.len() > MAX_DONATED {
        return Err(Error::InvalidArgument(format!(
            "{} donated units is more than the {MAX_DONATED} allowed at once",
            req.units.len()
        )));
    }
    if req.remaining_payload.is_empty() {
        return Err(Error::InvalidArgument(
            "a donation must say what the donor keeps (remaining_payload)".into(),
        ));
    }
    let next_seq: i64 = ctx
        .conn
        .prepare_cached("SELECT next_seq FROM campaigns WHERE id = ?1")?
        .query_row(params![lease.campaign_id], |r| r.get(0))?;
    let units: Vec<_> = req
        .units
        .iter()
        .map(|u| grind_shared::problem::UnitSpec {
            label: u.label.clone(),
            payload: u.payload.clone(),
        })
        .collect();
    let added = insert_units(ctx, lease.campaign_id, next_seq, &units)?;
    ctx.conn
        .prepare_cached("UPDATE campaigns SET next_seq = next_seq + ?2 WHERE id = ?1")?
        .execute(params![lease.campaign_id, added as i64])?;
    let cursor = (!req.remaining_cursor.is_empty()).then_some(&req.remaining_cursor);
    ctx.conn
        .prepare_cached(
            "UPDATE units SET payload = ?2, cursor = ?3, cursor_worker = ?4 WHERE id = ?1",
        )?
        .execute(params![
            lease.unit_id,
            req.remaining_payload,
            cursor,
            lease.worker_id
        ])?;
    event(
        ctx.conn,
        ctx.now,
        "donation",
        Some(lease.campaign_id),
        Some(lease.unit_id),
        Some(lease.id),
        Some(worker_id),
        json!({"units": added}),
    )?;
    Ok(added as u32)
}

/// Records a verified solution as the campaign's incumbent when it beats the current one.
/// Returns the campaign's best score afterwards and whether this solution became it.
pub fn offer_incumbent(
    ctx: &Ctx,
    campaign_id: i64,
    solution_json: &str,
    score: i64,
    origin: Origin,
) -> Result<(Option<i64>, bool), Error> {
    let (objective, best): (String, Option<i64>) = ctx
        .conn
        .prepare_cached("SELECT objective, best_score FROM campaigns WHERE id = ?1")?
        .query_row(params![campaign_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
    let objective = Objective::parse(&objective)
        .ok_or_else(|| Error::Internal(format!("campaign {campaign_id} has no objective")))?;
    if !objective.is_optimisation() {
        return Err(Error::FailedPrecondition(format!(
            "campaign {campaign_id} is a {objective} campaign: it has no incumbent"
        )));
    }
    if !objective.improves(score, best) {
        return Ok((best, false));
    }
    let event_id = event(
        ctx.conn,
        ctx.now,
        "improvement",
        Some(campaign_id),
        origin.unit_id,
        origin.lease_id,
        origin.worker_id,
        json!({"score": score, "previous": best, "source": origin.source,
               "solver_version": origin.solver_version, "solution": solution_json}),
    )?;
    // The pruning bound only ever tightens: an initial bound better than this solution stays.
    ctx.conn
        .prepare_cached(
            "UPDATE campaigns SET best_score = ?2, best_solution = ?3, best_event = ?4,
                 bound = CASE WHEN bound IS NULL THEN ?2
                              WHEN objective = 'max' THEN max(bound, ?2)
                              ELSE min(bound, ?2) END
             WHERE id = ?1",
        )?
        .execute(params![campaign_id, score, solution_json, event_id])?;
    Ok((Some(score), true))
}

fn add_usage(ctx: &Ctx, campaign_id: i64, usage: Usage) -> Result<(), Error> {
    ctx.conn
        .prepare_cached(
            "UPDATE campaigns SET cpu_seconds = cpu_seconds + ?2, nodes = nodes + ?3 WHERE id = ?1",
        )?
        .execute(params![
            campaign_id,
            usage.cpu_seconds.max(0.0),
            usage.nodes as i64
        ])?;
    Ok(())
}

/// Takes a worker's (already verified) result for a lease. Idempotent per unit: a result
/// for a unit that is already finished is acknowledged as a duplicate and changes nothing.
pub fn complete(
    ctx: &Ctx,
    worker_id: i64,
    lease_id: i64,
    covered_payload: &[u8],
    result: &VerifiedResult,
    usage: Usage,
) -> Result<pb::CompleteReply, Error> {
    let lease = owned_lease(ctx.conn, worker_id, lease_id)?;
    if lease.state == "completed" || lease.state == "failed" {
        return Ok(duplicate("this lease already delivered its result"));
    }
    let (unit_state, unit_lease, replica_needed, payload): (String, Option<i64>, bool, Vec<u8>) =
        ctx.conn
            .prepare_cached(
                "SELECT state, lease_id, replica_needed, payload FROM units WHERE id = ?1",
            )?
            .query_row(params![lease.unit_id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })?;
    let campaign_state: String = ctx
        .conn
        .prepare_cached("SELECT state FROM campaigns WHERE id = ?1")?
        .query_row(params![lease.campaign_id], |r| r.get(0))?;
    let unit_finished = unit_state == "done" || unit_state == "failed";
    let this_run_is_replica = lease.replica;
    // A result is useful when the unit still needs it: never finished, and (for a replica
    // run) still waiting for one.
    let still_wanted = !unit_finished && (this_run_is_replica == replica_needed);
    if !still_wanted || campaign_state == "cancelled" {
        ctx.conn
            .prepare_cached(
                "UPDATE leases SET state = 'completed', ended_ms = ?2 WHERE id = ?1 AND state != 'completed'",
            )?
            .execute(params![lease.id, ctx.now])?;
        event(
            ctx.conn,
            ctx.now,
            "result_ignored",
            Some(lease.campaign_id),
            Some(lease.unit_id),
            Some(lease.id),
            Some(worker_id),
            json!({"reason": "unit already finished", "lease_state": lease.state}),
        )?;
        return Ok(duplicate(
            "the unit is already finished; result not counted again",
        ));
    }
    if payload != covered_payload && !matches!(result, VerifiedResult::Failed(_)) {
        return Err(Error::FailedPrecondition(format!(
            "lease {lease_id}: the result covers a different part of unit {} than the unit \
             now holds (a donation was lost or the payload is wrong); not counted",
            lease.unit_id
        )));
    }
    if let VerifiedResult::Failed(reason) = result {
        end_lease(ctx, &lease, "failed", true, None)?;
        event(
            ctx.conn,
            ctx.now,
            "unit_error",
            Some(lease.campaign_id),
            Some(lease.unit_id),
            Some(lease.id),
            Some(worker_id),
            json!({"error": reason}),
        )?;
        return Ok(pb::CompleteReply {
            accepted: false,
            duplicate: false,
            detail: format!("solver error recorded: {reason}"),
        });
    }
    // A late result from an expired or released lease is still taken when the unit needs
    // it; whoever holds the unit now is told to stop at its next heartbeat.
    if let Some(current) = unit_lease.filter(|&l| l != lease.id) {
        ctx.conn
            .prepare_cached(
                "UPDATE leases SET state = 'cancelled', ended_ms = ?2 WHERE id = ?1 AND state = 'active'",
            )?
            .execute(params![current, ctx.now])?;
    }
    ctx.conn
        .prepare_cached("UPDATE leases SET state = 'completed', ended_ms = ?2 WHERE id = ?1")?
        .execute(params![lease.id, ctx.now])?;
    add_usage(ctx, lease.campaign_id, usage)?;
    let (value, solution) = match result {
        VerifiedResult::Count(count) => (count.clone(), None),
        VerifiedResult::Best(Some((solution, score)), _, _) => {
            (score.to_string(), Some(solution.clone()))
        }
        VerifiedResult::Best(None, _, _) => ("none".to_string(), None),
        VerifiedResult::Samples(samples) => (samples.len().to_string(), None),
        VerifiedResult::Failed(_) => unreachable!("handled above"),
    };
    ctx.conn
        .prepare_cached(
            "INSERT INTO results (unit_id, campaign_id, lease_id, worker_id, value, solution, nodes,
                 cpu_seconds, wall_seconds, created_ms, replica, status, solver_version)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, 'awaiting', ?12)",
        )?
        .execute(params![
            lease.unit_id,
            lease.campaign_id,
            lease.id,
            worker_id,
            value,
            solution,
            usage.nodes as i64,
            usage.cpu_seconds,
            usage.wall_seconds,
            ctx.now,
            lease.replica,
            usage.solver_version
        ])?;
    let result_id = ctx.conn.last_insert_rowid();
    event(
        ctx.conn,
        ctx.now,
        "result",
        Some(lease.campaign_id),
        Some(lease.unit_id),
        Some(lease.id),
        Some(worker_id),
        json!({"value": value, "nodes": usage.nodes, "cpu_seconds": usage.cpu_seconds,
               "wall_seconds": usage.wall_seconds, "replica": lease.replica}),
    )?;
    match result {
        VerifiedResult::Count(count) => settle_count(ctx, &lease, result_id, count)?,
        VerifiedResult::Best(best, hits, children) => {
            insert_samples(ctx, &lease, result_id, hits)?;
            insert_children(ctx, &lease, children)?;
            if let Some((solution, score)) = best {
                offer_incumbent(
                    ctx,
                    lease.campaign_id,
                    solution,
                    *score,
                    Origin {
                        worker_id: Some(worker_id),
                        lease_id: Some(lease.id),
                        unit_id: Some(lease.unit_id),
                        source: "unit result",
                        solver_version: usage.solver_version,
                    },
                )?;
            }
            settle_search(ctx, &lease, result_id, &value)?;
        }
        VerifiedResult::Samples(samples) => {
            insert_samples(ctx, &lease, result_id, samples)?;
            finish_unit(ctx, &lease, &value, &[result_id])?;
        }
        VerifiedResult::Failed(_) => unreachable!("handled above"),
    }
    Ok(pb::CompleteReply {
        accepted: true,
        duplicate: false,
        detail: String::new(),
    })
}

/// Adds the new child units of a result; a payload the campaign already spawned is skipped.
fn insert_children(ctx: &Ctx, lease: &LeaseRow, children: &[ChildUnit]) -> Result<(), Error> {
    if children.is_empty() {
        return Ok(());
    }
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
                "INSERT INTO units (campaign_id, seq, label, payload, state, priority)
                 SELECT ?1, next_seq, ?2, ?3, 'pending', ?4 FROM campaigns WHERE id = ?1",
            )?
            .execute(params![
                lease.campaign_id,
                child.label,
                child.payload,
                child.priority
            ])?;
        ctx.conn
            .prepare_cached("UPDATE campaigns SET next_seq = next_seq + 1 WHERE id = ?1")?
            .execute(params![lease.campaign_id])?;
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

fn insert_samples(
    ctx: &Ctx,
    lease: &LeaseRow,
    result_id: i64,
    samples: &[String],
) -> Result<(), Error> {
    if samples.is_empty() {
        return Ok(());
    }
    // A replica run of a search unit finds the same hits again: keep each hit once per unit.
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
    ctx.conn
        .prepare_cached("UPDATE campaigns SET samples = samples + ?2 WHERE id = ?1")?
        .execute(params![lease.campaign_id, added])?;
    Ok(())
}

fn duplicate(detail: &str) -> pb::CompleteReply {
    pb::CompleteReply {
        accepted: false,
        duplicate: true,
        detail: detail.to_string(),
    }
}

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
fn settle_count(ctx: &Ctx, lease: &LeaseRow, result_id: i64, count: &str) -> Result<(), Error> {
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
        ctx.conn
            .prepare_cached(
                "UPDATE results SET status = 'rejected' WHERE unit_id = ?1 AND status = 'awaiting'",
            )?
            .execute(params![lease.unit_id])?;
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
    ctx.conn
        .prepare_cached(
            "UPDATE units SET state = ?2, lease_id = NULL, replica_needed = 1, disputed = 1,
                 cursor = NULL WHERE id = ?1",
        )?
        .execute(params![
            lease.unit_id,
            if give_up { "failed" } else { "pending" }
        ])?;
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
fn settle_search(ctx: &Ctx, lease: &LeaseRow, result_id: i64, value: &str) -> Result<(), Error> {
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
    ctx.conn
        .prepare_cached(
            "UPDATE units SET state = 'pending', lease_id = NULL, replica_needed = 1,
                 cursor = NULL WHERE id = ?1",
        )?
        .execute(params![lease.unit_id])?;
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
fn finish_unit(ctx: &Ctx, lease: &LeaseRow, value: &str, accepted: &[i64]) -> Result<(), Error> {
    ctx.conn
        .prepare_cached(
            "UPDATE units SET state = 'done', value = ?2, done_ms = ?3, lease_id = NULL,
                 replica_needed = 0 WHERE id = ?1",
        )?
        .execute(params![lease.unit_id, value, ctx.now])?;
    let mut accept = ctx
        .conn
        .prepare_cached("UPDATE results SET status = 'accepted' WHERE id = ?1")?;
    for id in accepted {
        accept.execute(params![id])?;
    }
    let (objective, total): (String, String) = ctx
        .conn
        .prepare_cached("SELECT objective, total FROM campaigns WHERE id = ?1")?
        .query_row(params![lease.campaign_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
    if objective == "count" {
        let total = add_counts(&total, value)?;
        ctx.conn
            .prepare_cached("UPDATE campaigns SET total = ?2 WHERE id = ?1")?
            .execute(params![lease.campaign_id, total])?;
    }
    maybe_finish_campaign(ctx, lease.campaign_id)
}

/// Ends a running campaign once its splitter is exhausted and no unit is left to run.
pub fn maybe_finish_campaign(ctx: &Ctx, campaign_id: i64) -> Result<(), Error> {
    // Cheap test first: almost every completion of a campaign happens while its splitter
    // still has units to produce, and then no unit needs counting.
    let (state, split_done): (String, bool) = ctx
        .conn
        .prepare_cached("SELECT state, split_done FROM campaigns WHERE id = ?1")?
        .query_row(params![campaign_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
    if state != "running" || !split_done {
        return Ok(());
    }
    let open: bool = ctx
        .conn
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM units WHERE campaign_id = ?1 AND state IN ('pending', 'leased'))",
        )?
        .query_row(params![campaign_id], |r| r.get(0))?;
    if open {
        return Ok(());
    }
    let failed: i64 = ctx
        .conn
        .prepare_cached("SELECT count(*) FROM units WHERE campaign_id = ?1 AND state = 'failed'")?
        .query_row(params![campaign_id], |r| r.get(0))?;
    let new_state = if failed > 0 { "failed" } else { "done" };
    ctx.conn
        .prepare_cached("UPDATE campaigns SET state = ?2, finished_ms = ?3 WHERE id = ?1")?
        .execute(params![campaign_id, new_state, ctx.now])?;
    if new_state == "done" {
        restate_proven_solution(ctx, campaign_id)?;
    }
    event(
        ctx.conn,
        ctx.now,
        "campaign_finished",
        Some(campaign_id),
        None,
        None,
        None,
        json!({"state": new_state, "failed_units": failed}),
    )?;
    Ok(())
}

/// Lets the problem restate the best solution of a campaign that has just proven it
/// optimal ([`grind_shared::problem::Problem::proven_solution`]).
fn restate_proven_solution(ctx: &Ctx, campaign_id: i64) -> Result<(), Error> {
    let (exhaustive, best): (bool, Option<String>) = ctx
        .conn
        .prepare_cached("SELECT exhaustive, best_solution FROM campaigns WHERE id = ?1")?
        .query_row(params![campaign_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
    let Some(best) = best.filter(|_| exhaustive) else {
        return Ok(());
    };
    let Ok(solution) = serde_json::from_str::<serde_json::Value>(&best) else {
        return Ok(());
    };
    let problem = ctx.problems.get(ctx.conn, campaign_id)?;
    if let Some(restated) = problem.proven_solution(&solution) {
        ctx.conn
            .prepare_cached("UPDATE campaigns SET best_solution = ?2 WHERE id = ?1")?
            .execute(params![campaign_id, restated.to_string()])?;
    }
    Ok(())
}

/// An administrative state change.
#[derive(Clone, Copy, Debug)]
pub enum Action {
    /// Stop handing out units; running leases are cancelled.
    Pause,
    /// Hand out units again; a failed campaign retries its failed units.
    Resume,
    /// End the campaign for good.
    Cancel,
}

/// Applies an administrative action to a campaign.
pub fn change_state(ctx: &Ctx, campaign_id: i64, action: Action) -> Result<(), Error> {
    let state: Option<String> = ctx
        .conn
        .prepare_cached("SELECT state FROM campaigns WHERE id = ?1")?
        .query_row(params![campaign_id], |r| r.get(0))
        .optional()?;
    let state = state.ok_or_else(|| Error::NotFound(format!("no campaign {campaign_id}")))?;
    let new_state = match (action, state.as_str()) {
        (Action::Pause, "running") => "paused",
        (Action::Resume, "paused") => "running",
        (Action::Resume, "failed") => {
            ctx.conn
                .prepare_cached(
                    "UPDATE units SET state = 'pending', attempts = 0 WHERE campaign_id = ?1 AND state = 'failed'",
                )?
                .execute(params![campaign_id])?;
            "running"
        }
        (Action::Cancel, "running" | "paused") => "cancelled",
        (action, state) => {
            return Err(Error::FailedPrecondition(
                format!("cannot {action:?} campaign {campaign_id}: it is {state}").to_lowercase(),
            ))
        }
    };
    if matches!(action, Action::Pause | Action::Cancel) {
        let active = leases_where(
            ctx.conn,
            "campaign_id = ?1 AND state = 'active'",
            campaign_id,
        )?;
        for lease in &active {
            end_lease(ctx, lease, "cancelled", false, None)?;
        }
    }
    let finished = (new_state == "cancelled").then_some(ctx.now);
    ctx.conn
        .prepare_cached(
            "UPDATE campaigns SET state = ?2, finished_ms = coalesce(?3, CASE WHEN ?2 = 'running' THEN NULL ELSE finished_ms END) WHERE id = ?1",
        )?
        .execute(params![campaign_id, new_state, finished])?;
    event(
        ctx.conn,
        ctx.now,
        "campaign_state",
        Some(campaign_id),
        None,
        None,
        None,
        json!({"from": state, "to": new_state}),
    )?;
    if new_state == "running" {
        maybe_finish_campaign(ctx, campaign_id)?;
    }
    Ok(())
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
