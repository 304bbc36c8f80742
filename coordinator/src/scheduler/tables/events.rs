//! The provenance log: the only writer of the `events` table, which the schema makes
//! append-only (triggers refuse UPDATE and DELETE).

use rusqlite::{params, Connection};
use serde_json::Value;

use crate::error::Error;
use crate::scheduler::{Ctx, Subject};

/// Appends one provenance event and returns its id.
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

/// Appends a provenance event about `about`, now, and returns its id.
pub fn append(ctx: &Ctx, kind: &str, about: Subject, detail: Value) -> Result<i64, Error> {
    event(
        ctx.conn,
        ctx.now,
        kind,
        about.campaign,
        about.unit,
        about.lease,
        about.worker,
        detail,
    )
}

/// Appends a provenance event about a campaign as a whole (no unit, lease or worker) and
/// returns its id.
pub fn campaign_event(
    ctx: &Ctx,
    campaign_id: i64,
    kind: &str,
    detail: Value,
) -> Result<i64, Error> {
    append(ctx, kind, Subject::campaign(campaign_id), detail)
}
