//! What the pages show, read from the store in one read transaction per page: campaign rows
//! with their estimates and throughput, one campaign's history (improvements, events), and
//! the workers with their leases and tallies. The JSON API serialises these; the pages render
//! them. The fields shared with `grind status --json` come from the same views and are
//! rendered by the same functions, so the numbers agree.

use grind_proto::v1 as pb;
use rusqlite::{params, Connection};
use serde_json::{json, Value};
use std::collections::HashMap;

use super::estimate::{self, Estimate, Inputs, RunningLease};
use crate::cli::render;
use crate::error::Error;
use crate::metrics::WorkerTally;
use crate::views;

/// Throughput is measured over this trailing window (or the campaign's life, if shorter).
pub const THROUGHPUT_WINDOW_MS: i64 = 5 * 60 * 1000;
/// Results needed in the window before the lanes of work are measured rather than counted.
const MIN_RESULTS_FOR_LANES: i64 = 8;

/// Work done per second over the trailing window.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Throughput {
    /// Length of the window measured, in seconds.
    pub window_seconds: f64,
    /// Units finished per second.
    pub units_per_second: f64,
    /// CPU seconds contributed per second (about the number of busy cores).
    pub cpu_seconds_per_second: f64,
}

/// A campaign with its estimate and throughput.
#[derive(Clone, Debug)]
pub struct CampaignRow {
    /// The status `grind status` shows.
    pub status: pb::CampaignStatus,
    /// Progress and ETA.
    pub estimate: Estimate,
    /// Recent throughput.
    pub throughput: Throughput,
    /// An anytime search (not exhaustive): while its splitter may still add work, it has no
    /// end to estimate.
    pub anytime: bool,
    /// Wall seconds since the campaign was created (to its end once it ended).
    pub elapsed_seconds: f64,
    /// The limit its parameters set on an anytime search (`8 rounds`), if any.
    pub limit: Option<String>,
}

impl CampaignRow {
    /// The JSON of `grind status --json` for this campaign, plus `estimate` and `throughput`.
    pub fn to_json(&self) -> Value {
        let mut value = render::campaign(&self.status);
        value["estimate"] = json!(self.estimate);
        value["throughput"] = json!(self.throughput);
        value["anytime"] = json!(self.anytime);
        value["elapsed_seconds"] = json!(self.elapsed_seconds);
        value["limit"] = json!(self.limit);
        value
    }

    /// A running anytime search whose end is not known (no splitter end in sight): the
    /// views show the time it has run (and its limit), never a progress fraction or an ETA.
    pub fn open_ended_search(&self) -> bool {
        self.anytime && self.estimate.open_ended && self.status.state == "running"
    }
}

/// The limit an anytime search's parameters set, in words (`8 rounds`): the `rounds`
/// parameter when it is a number. `None` when it sets none (the search ends when it stops
/// improving, if its problem says so, or when it is cancelled).
pub fn limit_words(params_json: &str) -> Option<String> {
    let params: Value = serde_json::from_str(params_json).ok()?;
    let rounds = params.get("rounds")?.as_u64()?;
    Some(format!(
        "{rounds} round{}",
        if rounds == 1 { "" } else { "s" }
    ))
}

/// Reads one campaign's row.
pub fn campaign_row(
    conn: &Connection,
    status: pb::CampaignStatus,
    now_ms: i64,
) -> Result<CampaignRow, Error> {
    let id = status.campaign_id;
    let units = status.units.unwrap_or_default();
    let exhaustive: bool = conn
        .prepare_cached("SELECT exhaustive FROM campaigns WHERE id = ?1")?
        .query_row(params![id], |r| r.get(0))?;
    let (results, sum, sum_sq): (i64, f64, f64) = conn
        .prepare_cached(
            "SELECT count(*), coalesce(sum(wall_seconds), 0), coalesce(sum(wall_seconds * wall_seconds), 0)
             FROM results WHERE campaign_id = ?1",
        )?
        .query_row(params![id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    let mut running = Vec::new();
    let mut per_worker: HashMap<i64, (u32, u32)> = HashMap::new();
    let mut stmt = conn.prepare_cached(
        "SELECT l.granted_ms, l.fraction, l.worker_id, w.cores FROM leases l
         JOIN workers w ON w.id = l.worker_id WHERE l.campaign_id = ?1 AND l.state = 'active'",
    )?;
    let mut rows = stmt.query(params![id])?;
    while let Some(r) = rows.next()? {
        running.push(RunningLease {
            elapsed: (now_ms - r.get::<_, i64>(0)?).max(0) as f64 / 1000.0,
            fraction: r.get(1)?,
        });
        let held = per_worker.entry(r.get(2)?).or_insert((0, r.get(3)?));
        held.0 += 1;
    }
    let end = if status.finished_ms > 0 {
        status.finished_ms
    } else {
        now_ms
    };
    let start = (end - THROUGHPUT_WINDOW_MS).max(status.created_ms);
    let window_seconds = ((end - start) as f64 / 1000.0).max(0.001);
    let (done_recently, results_recently, cpu_recently, wall_recently): (i64, i64, f64, f64) = conn
        .prepare_cached(
            "SELECT (SELECT count(*) FROM units WHERE campaign_id = ?1 AND state = 'done'
                        AND done_ms > ?2 AND done_ms <= ?3),
                    count(*), coalesce(sum(cpu_seconds), 0), coalesce(sum(wall_seconds), 0)
             FROM results WHERE campaign_id = ?1 AND created_ms > ?2 AND created_ms <= ?3",
        )?
        .query_row(params![id, start, end], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })?;
    let lanes = if results_recently >= MIN_RESULTS_FOR_LANES {
        wall_recently / window_seconds
    } else {
        per_worker
            .values()
            .map(|&(held, cores)| f64::from(held.min(cores.max(1))))
            .sum()
    };
    let estimate = estimate::estimate(&Inputs {
        finished_units: units.done + units.failed,
        pending_units: units.pending + units.verifying,
        split_complete: units.split_complete,
        results: results as u64,
        result_seconds: sum,
        result_seconds_sq: sum_sq,
        running,
        lanes,
    });
    Ok(CampaignRow {
        estimate,
        throughput: Throughput {
            window_seconds,
            units_per_second: done_recently as f64 / window_seconds,
            cpu_seconds_per_second: cpu_recently / window_seconds,
        },
        anytime: !exhaustive,
        elapsed_seconds: ((end - status.created_ms).max(0) as f64) / 1000.0,
        limit: if exhaustive {
            None
        } else {
            limit_words(&status.params_json)
        },
        status,
    })
}

/// Every campaign's row, oldest first.
pub fn campaign_rows(conn: &Connection, now_ms: i64) -> Result<Vec<CampaignRow>, Error> {
    views::campaigns(conn)?
        .into_iter()
        .map(|status| campaign_row(conn, status, now_ms))
        .collect()
}

/// One improvement with where it came from.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Improvement {
    /// The event that recorded it.
    pub event: i64,
    /// When it was accepted (ms since the epoch).
    pub at_ms: i64,
    /// The verified score.
    pub score: i64,
    /// The best score before it.
    pub previous: Option<i64>,
    /// `improvement` (found by a worker), or `import: ...` for imported solutions.
    pub source: String,
    /// The worker that found it, when a worker did.
    pub worker_id: Option<i64>,
    /// That worker's name.
    pub worker: String,
    /// Its host.
    pub host: String,
    /// Its grind version.
    pub worker_version: String,
    /// Its git commit.
    pub git_commit: String,
    /// The solver version that found it (see [`crate::views::EVENT_SOLVER_VERSION`]).
    pub solver_version: u32,
    /// The lease and unit it came from.
    pub lease: Option<i64>,
    /// The unit it came from.
    pub unit: Option<i64>,
    /// CPU seconds of the lease that found it, once that lease delivered its result.
    pub lease_cpu_seconds: Option<f64>,
}

/// Every improvement of a campaign, oldest first.
pub fn improvements(conn: &Connection, campaign_id: i64) -> Result<Vec<Improvement>, Error> {
    let sql = format!(
        "SELECT e.id, e.at_ms, json_extract(e.detail, '$.score'), json_extract(e.detail, '$.previous'),
                coalesce(json_extract(e.detail, '$.source'), ''), e.worker_id,
                coalesce(w.name, ''), coalesce(w.host, ''), coalesce(w.version, ''),
                coalesce(w.git_commit, ''), {}, e.lease_id, e.unit_id,
                (SELECT r.cpu_seconds FROM results r WHERE r.unit_id = e.unit_id AND r.lease_id = e.lease_id)
         FROM events e JOIN campaigns c ON c.id = e.campaign_id
         LEFT JOIN workers w ON w.id = e.worker_id
         WHERE e.campaign_id = ?1 AND e.kind = 'improvement' ORDER BY e.id",
        crate::views::EVENT_SOLVER_VERSION
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(params![campaign_id], |r| {
        Ok(Improvement {
            event: r.get(0)?,
            at_ms: r.get(1)?,
            score: r.get(2)?,
            previous: r.get(3)?,
            source: r.get(4)?,
            worker_id: r.get(5)?,
            worker: r.get(6)?,
            host: r.get(7)?,
            worker_version: r.get(8)?,
            git_commit: r.get(9)?,
            solver_version: r.get(10)?,
            lease: r.get(11)?,
            unit: r.get(12)?,
            lease_cpu_seconds: r.get(13)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// One provenance event.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Event {
    /// Its id (events are numbered in order).
    pub id: i64,
    /// When (ms since the epoch).
    pub at_ms: i64,
    /// What happened (`lease_granted`, `result`, `improvement`, ...).
    pub kind: String,
    /// The unit concerned.
    pub unit: Option<i64>,
    /// The lease concerned.
    pub lease: Option<i64>,
    /// The worker concerned.
    pub worker: Option<i64>,
    /// The event's details (JSON).
    pub detail: Value,
}

/// Most events returned at once.
pub const MAX_EVENTS: u32 = 1000;

/// A campaign's events before `before` (newest first), at most `limit`.
pub fn events(
    conn: &Connection,
    campaign_id: i64,
    before: Option<i64>,
    limit: u32,
) -> Result<Vec<Event>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, at_ms, kind, unit_id, lease_id, worker_id, detail FROM events
         WHERE campaign_id = ?1 AND id < ?2 ORDER BY id DESC LIMIT ?3",
    )?;
    let rows = stmt.query_map(
        params![
            campaign_id,
            before.unwrap_or(i64::MAX),
            limit.min(MAX_EVENTS)
        ],
        |r| {
            let detail: String = r.get(6)?;
            Ok(Event {
                id: r.get(0)?,
                at_ms: r.get(1)?,
                kind: r.get(2)?,
                unit: r.get(3)?,
                lease: r.get(4)?,
                worker: r.get(5)?,
                detail: serde_json::from_str(&detail).unwrap_or(Value::String(detail)),
            })
        },
    )?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// A lease running now.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ActiveLease {
    /// The lease.
    pub lease: i64,
    /// Its campaign.
    pub campaign: i64,
    /// Its unit.
    pub unit: i64,
    /// The unit's label.
    pub label: String,
    /// When it was granted (ms since the epoch).
    pub granted_ms: i64,
    /// Nodes reported so far.
    pub nodes: u64,
    /// The last completed-fraction report.
    pub fraction: Option<f64>,
}

/// A worker with its leases and tallies.
#[derive(Clone, Debug)]
pub struct WorkerRow {
    /// What `grind status` shows.
    pub info: pb::WorkerInfo,
    /// Milliseconds since its last request.
    pub heartbeat_age_ms: i64,
    /// Silent for longer than three heartbeat intervals.
    pub stale: bool,
    /// Its leases running now.
    pub leases: Vec<ActiveLease>,
    /// Its results rejected by replication (outvoted by other workers).
    pub rejected_results: u64,
    /// Its improvements, accepted and refused.
    pub tally: WorkerTally,
}

impl WorkerRow {
    /// The JSON of `grind status --json` for this worker, plus the page's extra fields.
    pub fn to_json(&self) -> Value {
        let mut value = render::worker(&self.info);
        value["heartbeat_age_ms"] = json!(self.heartbeat_age_ms);
        value["stale"] = json!(self.stale);
        value["leases"] = json!(self.leases);
        value["rejected_results"] = json!(self.rejected_results);
        value["improvements"] = json!(self.tally.improvements);
        value["rejected_improvements"] = json!(self.tally.rejected_improvements);
        value
    }
}

/// Every worker, with `tallies` from the event log; `stale_ms` is the silence that marks a
/// worker stale.
pub fn worker_rows(
    conn: &Connection,
    now_ms: i64,
    stale_ms: i64,
    tallies: &HashMap<i64, WorkerTally>,
) -> Result<Vec<WorkerRow>, Error> {
    let mut leases: HashMap<i64, Vec<ActiveLease>> = HashMap::new();
    let mut stmt = conn.prepare_cached(
        "SELECT l.worker_id, l.id, l.campaign_id, l.unit_id, u.label, l.granted_ms, l.nodes, l.fraction
         FROM leases l JOIN units u ON u.id = l.unit_id WHERE l.state = 'active' ORDER BY l.id",
    )?;
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        leases.entry(r.get(0)?).or_default().push(ActiveLease {
            lease: r.get(1)?,
            campaign: r.get(2)?,
            unit: r.get(3)?,
            label: r.get(4)?,
            granted_ms: r.get(5)?,
            nodes: r.get::<_, i64>(6)? as u64,
            fraction: r.get(7)?,
        });
    }
    let rejected: HashMap<i64, i64> = conn
        .prepare_cached(
            "SELECT worker_id, count(*) FROM results WHERE status = 'rejected' GROUP BY worker_id",
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    Ok(views::workers(conn)?
        .into_iter()
        .map(|info| {
            let id = info.worker_id;
            let age = (now_ms - info.last_seen_ms).max(0);
            WorkerRow {
                heartbeat_age_ms: age,
                stale: age > stale_ms,
                leases: leases.remove(&id).unwrap_or_default(),
                rejected_results: rejected.get(&id).copied().unwrap_or(0) as u64,
                tally: tallies.get(&id).copied().unwrap_or_default(),
                info,
            }
        })
        .collect())
}
