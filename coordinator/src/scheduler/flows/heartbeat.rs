//! Heartbeats: a worker's leases renewed with their progress and checkpoints, the leases it
//! forgot taken back, and the bounds it prunes with.

use grind_proto::v1 as pb;
use serde_json::json;

use super::lease_end;
use crate::error::Error;
use crate::scheduler::tables::leases::{self, LeaseRow};
use crate::scheduler::tables::{campaigns, units, workers};
use crate::scheduler::Ctx;

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
    workers::touch_worker(ctx, worker_id)?;
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
        if let Some(bound) = campaigns::bound(ctx, campaign_id)? {
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
    let forgotten: Vec<LeaseRow> = leases::active_of_worker(ctx.conn, worker_id)?
        .into_iter()
        .filter(|lease| lease.id <= held.newest_lease_id && !named.contains(&lease.id))
        .collect();
    for lease in &forgotten {
        lease_end::end_lease(ctx, lease, "released", false, None)?;
        lease_end::released_event(
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
    let Some(lease) = leases::load_lease(ctx.conn, item.lease_id)? else {
        return Ok(None);
    };
    if lease.worker_id != worker_id || lease.state != "active" {
        return Ok(None);
    }
    if campaigns::state(ctx.conn, lease.campaign_id)?.as_deref() != Some("running") {
        lease_end::end_lease(ctx, &lease, "cancelled", false, None)?;
        return Ok(None);
    }
    let deadline = ctx.now + ctx.config.lease_ttl_ms;
    let fraction = (item.fraction >= 0.0 && item.fraction <= 1.0).then_some(item.fraction);
    leases::renew(ctx, lease.id, deadline, item.nodes, fraction)?;
    if !item.cursor.is_empty() {
        units::store_checkpoint(ctx, lease.unit_id, lease.id, lease.worker_id, &item.cursor)?;
    }
    Ok(Some((lease.campaign_id, deadline)))
}
