//! Workers joining and being thrown out: registration (a new identity or a known one taken
//! back) and bans (the worker's leases taken back, its checkpoints no longer trusted).

use grind_proto::v1 as pb;
use serde_json::json;

use super::lease_end;
use crate::error::Error;
use crate::scheduler::tables::{events, leases, units, workers};
use crate::scheduler::{Ctx, Subject};

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
        ("platform", &req.platform, 100),
    ] {
        if value.len() > max {
            return Err(Error::InvalidArgument(format!(
                "worker {what} is longer than {max} bytes"
            )));
        }
    }
    let detail = json!({"name": req.name, "host": req.host, "version": req.version,
                        "git_commit": req.git_commit, "cores": req.cores,
                        "native_code_allowed": req.native_code_allowed, "platform": req.platform});
    if req.previous_worker_id > 0 {
        let known = workers::identity(ctx, req.previous_worker_id)?;
        // An identity is only taken back by the token that created it.
        if let Some((host, banned, _)) = known.filter(|k| k.2 == token_id) {
            if banned {
                return Err(Error::Banned(req.previous_worker_id));
            }
            if host == req.host {
                workers::reregister(ctx, req.previous_worker_id, req)?;
                events::append(
                    ctx,
                    "worker_reregistered",
                    Subject::worker(req.previous_worker_id),
                    detail,
                )?;
                return Ok(req.previous_worker_id);
            }
        }
    }
    let id = workers::insert(ctx, req, token_id)?;
    events::append(ctx, "worker_registered", Subject::worker(id), detail)?;
    Ok(id)
}

/// Bans a worker: its further calls are refused, its active leases go back to pending and
/// its units restart from their beginning (its checkpoints are not trusted). Returns how many
/// leases were taken back.
pub fn ban_worker(ctx: &Ctx, worker_id: i64, reason: &str) -> Result<usize, Error> {
    if !workers::set_banned(ctx, worker_id)? {
        return Err(Error::NotFound(format!("no worker {worker_id}")));
    }
    let active = leases::active_of_worker(ctx.conn, worker_id)?;
    for lease in &active {
        lease_end::end_lease(ctx, lease, "cancelled", false, None)?;
        units::forget_unleased_checkpoint(ctx, lease.unit_id)?;
    }
    let mut reason = reason.to_string();
    reason.truncate(500);
    events::append(
        ctx,
        "worker_banned",
        Subject::worker(worker_id),
        json!({"reason": reason, "leases_taken_back": active.len()}),
    )?;
    ctx.page_changed();
    Ok(active.len())
}
