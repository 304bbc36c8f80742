//! Read-only views of the store: campaign status, workers, per-unit provenance, leaderboard
//! and export records. Nothing here writes.

use grind_proto::v1 as pb;
use rusqlite::{params, Connection, OptionalExtension, Row};
use serde_json::json;

use crate::error::Error;

mod outcome;
mod premises;

pub use outcome::{outcome, outcome_words, Proof};
pub use premises::{premises, premises_json, premises_words};

/// SQL for the solver version of improvement event `e` of campaign `c`: the version its
/// worker reported; for events from before versions were reported, the version the campaign
/// ran then (the `from` of the next `solver_upgraded` event, else the campaign's own).
pub const EVENT_SOLVER_VERSION: &str = "coalesce(json_extract(e.detail, '$.solver_version'),
    (SELECT json_extract(up.detail, '$.from') FROM events up
     WHERE up.campaign_id = e.campaign_id AND up.kind = 'solver_upgraded' AND up.id > e.id
     ORDER BY up.id LIMIT 1),
    c.solver_version)";

const CAMPAIGN_COLUMNS: &str = "id, name, problem, params_json, objective, state, exhaustive,
    best_score, best_solution, total, samples, created_ms, finished_ms, cpu_seconds, nodes,
    verify_rate, best_event, split_done, solver_version, family, bound, coverage_checked";

fn campaign_from_row(conn: &Connection, r: &Row) -> Result<pb::CampaignStatus, Error> {
    let id: i64 = r.get(0)?;
    let objective: String = r.get(4)?;
    let state: String = r.get(5)?;
    let exhaustive: bool = r.get(6)?;
    let best_score: Option<i64> = r.get(7)?;
    let total: String = r.get(9)?;
    let samples: i64 = r.get(10)?;
    let best_event: Option<i64> = r.get(16)?;
    let split_done: bool = r.get(17)?;
    let value = match objective.as_str() {
        "count" => total,
        "sample" => samples.to_string(),
        _ => best_score.map(|s| s.to_string()).unwrap_or_default(),
    };
    let mut units = unit_counts(conn, id)?;
    units.split_complete = split_done;
    let premises = premises(conn, id)?;
    let coverage_checked: bool = r.get(21)?;
    let held_claims = held_claims(conn, id)?;
    // A claim nobody could check (its verifier failed) may beat the value: no proof.
    let proof = if state != "done" || !exhaustive || units.failed > 0 || !held_claims.is_empty() {
        Proof::None
    } else if !coverage_checked {
        Proof::Claimed
    } else if premises
        .iter()
        .any(|p| p.backed_by == 0 && p.backed_by_record == 0)
    {
        Proof::Conditional
    } else {
        Proof::Complete
    };
    let proven = proof == Proof::Complete;
    let outcome = outcome(&objective, proof, !value.is_empty()).to_string();
    let bound = match proof {
        Proof::Complete | Proof::Conditional => best_score,
        Proof::None if state == "running" || state == "paused" => {
            open_bound(conn, id, &objective, &units, r.get(20)?)?
        }
        Proof::None | Proof::Claimed => None,
    };
    let workers: i64 = conn
        .prepare_cached(
            "SELECT count(DISTINCT worker_id) FROM leases WHERE campaign_id = ?1 AND state = 'active'",
        )?
        .query_row(params![id], |row| row.get(0))?;
    Ok(pb::CampaignStatus {
        campaign_id: id,
        name: r.get(1)?,
        problem: r.get(2)?,
        params_json: r.get(3)?,
        objective,
        state,
        value,
        proven,
        outcome,
        solution_json: r.get::<_, Option<String>>(8)?.unwrap_or_default(),
        units: Some(units),
        workers: workers as u32,
        created_ms: r.get(11)?,
        finished_ms: r.get::<_, Option<i64>>(12)?.unwrap_or(0),
        cpu_seconds: r.get(13)?,
        nodes: r.get::<_, i64>(14)? as u64,
        verify_rate: r.get(15)?,
        best_provenance: match best_event {
            Some(event_id) => provenance_of_event(conn, event_id)?,
            None => None,
        },
        samples: samples as u64,
        solver_version: r.get(18)?,
        family: r.get::<_, Option<String>>(19)?.unwrap_or_default(),
        premises,
        bound,
        held_claims,
    })
}

/// Most held claims a campaign's status lists (newest first).
const HELD_CLAIMS_LISTED: i64 = 20;

/// The claims of a campaign held because its verifier failed on them, newest first.
fn held_claims(conn: &Connection, campaign_id: i64) -> Result<Vec<pb::HeldClaim>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, coalesce(worker_id, 0), coalesce(unit_id, 0), source, claimed_score, reason,
                at_ms, solution_json
         FROM held_claims WHERE campaign_id = ?1 ORDER BY id DESC LIMIT ?2",
    )?;
    let rows = stmt.query_map(params![campaign_id, HELD_CLAIMS_LISTED], |r| {
        Ok(pb::HeldClaim {
            id: r.get(0)?,
            worker_id: r.get(1)?,
            unit_id: r.get(2)?,
            source: r.get(3)?,
            claimed_score: r.get(4)?,
            reason: r.get(5)?,
            at_ms: r.get(6)?,
            solution_json: r.get(7)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The coordinator's bound on an open optimisation campaign's optimum: the weakest of its
/// open units' own bounds (`units.bound`, proved by the problem from each payload when the
/// unit was created) and the campaign's pruning bound (what finished units were searched
/// against). `None` when any open unit has no such bound, units failed, or the splitter may
/// still add units.
fn open_bound(
    conn: &Connection,
    campaign_id: i64,
    objective: &str,
    units: &pb::UnitCounts,
    pruning: Option<i64>,
) -> Result<Option<i64>, Error> {
    let minimise = match objective {
        "min" => true,
        "max" => false,
        _ => return Ok(None),
    };
    if !units.split_complete || units.failed > 0 {
        return Ok(None);
    }
    let (unbounded, lowest, highest): (i64, Option<i64>, Option<i64>) = conn
        .prepare_cached(
            "SELECT count(*) - count(bound), min(bound), max(bound) FROM units
             WHERE campaign_id = ?1 AND state IN ('pending', 'leased')",
        )?
        .query_row(params![campaign_id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?;
    if unbounded > 0 {
        return Ok(None);
    }
    let open = if minimise { lowest } else { highest };
    Ok(match (open, pruning) {
        (Some(a), Some(b)) => Some(if minimise { a.min(b) } else { a.max(b) }),
        (a, b) => a.or(b),
    })
}

fn unit_counts(conn: &Connection, campaign_id: i64) -> Result<pb::UnitCounts, Error> {
    let mut counts = pb::UnitCounts::default();
    let mut stmt = conn.prepare_cached(
        "SELECT state, replica_needed, count(*), sum(disputed), min(replica_wanted_ms)
         FROM units WHERE campaign_id = ?1 GROUP BY state, replica_needed",
    )?;
    let rows = stmt.query_map(params![campaign_id], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, bool>(1)?,
            r.get::<_, i64>(2)? as u64,
            r.get::<_, i64>(3)? as u64,
            r.get::<_, Option<i64>>(4)?,
        ))
    })?;
    for row in rows {
        let (state, replica, n, disputed, waiting_since) = row?;
        counts.disputed += disputed;
        match state.as_str() {
            "pending" if replica => {
                counts.verifying += n;
                counts.verifying_since_ms = waiting_since.unwrap_or(0);
            }
            "pending" => counts.pending += n,
            "leased" => counts.leased += n,
            "done" => counts.done += n,
            _ => counts.failed += n,
        }
    }
    Ok(counts)
}

/// Provenance of the event that recorded an improvement.
fn provenance_of_event(conn: &Connection, event_id: i64) -> Result<Option<pb::Provenance>, Error> {
    let sql = format!(
        "SELECT e.worker_id, coalesce(w.name, ''), coalesce(w.host, ''), coalesce(w.version, ''),
                coalesce(w.git_commit, ''), {EVENT_SOLVER_VERSION}, coalesce(e.lease_id, 0),
                coalesce(e.unit_id, 0), e.at_ms
         FROM events e JOIN campaigns c ON c.id = e.campaign_id
         LEFT JOIN workers w ON w.id = e.worker_id WHERE e.id = ?1"
    );
    Ok(conn
        .prepare_cached(&sql)?
        .query_row(params![event_id], |r| {
            Ok(pb::Provenance {
                worker_id: r.get::<_, Option<i64>>(0)?.unwrap_or(0),
                worker_name: r.get(1)?,
                host: r.get(2)?,
                worker_version: r.get(3)?,
                git_commit: r.get(4)?,
                solver_version: r.get(5)?,
                lease_id: r.get(6)?,
                unit_id: r.get(7)?,
                at_ms: r.get(8)?,
            })
        })
        .optional()?)
}

/// One campaign's status.
pub fn campaign(conn: &Connection, campaign_id: i64) -> Result<pb::CampaignStatus, Error> {
    let sql = format!("SELECT {CAMPAIGN_COLUMNS} FROM campaigns WHERE id = ?1");
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut rows = stmt.query(params![campaign_id])?;
    match rows.next()? {
        Some(row) => campaign_from_row(conn, row),
        None => Err(Error::NotFound(format!("no campaign {campaign_id}"))),
    }
}

/// Every campaign, newest last.
pub fn campaigns(conn: &Connection) -> Result<Vec<pb::CampaignStatus>, Error> {
    let sql = format!("SELECT {CAMPAIGN_COLUMNS} FROM campaigns ORDER BY id");
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut rows = stmt.query([])?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        out.push(campaign_from_row(conn, row)?);
    }
    Ok(out)
}

/// Every registered worker with its activity. One pass over results and active leases (a
/// per-worker subquery scanned every result once per worker: 0.3 s for 200 workers and 10,000
/// results).
pub fn workers(conn: &Connection) -> Result<Vec<pb::WorkerInfo>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT w.id, w.name, w.host, w.cores, w.version, w.git_commit, w.registered_ms, w.last_seen_ms,
            coalesce(l.active, 0), coalesce(r.accepted, 0), coalesce(r.cpu, 0), w.banned
         FROM workers w
         LEFT JOIN (SELECT worker_id, count(*) AS active FROM leases WHERE state = 'active'
                    GROUP BY worker_id) l ON l.worker_id = w.id
         LEFT JOIN (SELECT worker_id, sum(status = 'accepted') AS accepted, sum(cpu_seconds) AS cpu
                    FROM results GROUP BY worker_id) r ON r.worker_id = w.id
         ORDER BY w.id",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok(pb::WorkerInfo {
            worker_id: r.get(0)?,
            name: r.get(1)?,
            host: r.get(2)?,
            cores: r.get(3)?,
            version: r.get(4)?,
            git_commit: r.get(5)?,
            registered_ms: r.get(6)?,
            last_seen_ms: r.get(7)?,
            active_leases: r.get::<_, i64>(8)? as u32,
            units_done: r.get::<_, i64>(9)? as u64,
            cpu_seconds: r.get(10)?,
            banned: r.get(11)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Every result of a campaign's units, with who produced it.
pub fn results(conn: &Connection, campaign_id: i64) -> Result<Vec<pb::UnitResultRecord>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT r.unit_id, u.label, r.status, r.value, r.worker_id, w.name, w.host, w.version,
                w.git_commit, r.solver_version, r.lease_id, r.created_ms, r.cpu_seconds,
                r.wall_seconds, r.nodes, r.replica, l.granted_ms, r.self_checked,
                coalesce(r.provenance_json, '')
         FROM results r JOIN units u ON u.id = r.unit_id JOIN workers w ON w.id = r.worker_id
         JOIN leases l ON l.id = r.lease_id
         WHERE r.campaign_id = ?1 ORDER BY r.id",
    )?;
    let rows = stmt.query_map(params![campaign_id], |r| {
        Ok(pb::UnitResultRecord {
            unit_id: r.get(0)?,
            label: r.get(1)?,
            state: r.get(2)?,
            value: r.get(3)?,
            provenance: Some(pb::Provenance {
                worker_id: r.get(4)?,
                worker_name: r.get(5)?,
                host: r.get(6)?,
                worker_version: r.get(7)?,
                git_commit: r.get(8)?,
                solver_version: r.get(9)?,
                lease_id: r.get(10)?,
                unit_id: r.get(0)?,
                at_ms: r.get(11)?,
            }),
            cpu_seconds: r.get(12)?,
            wall_seconds: r.get(13)?,
            nodes: r.get::<_, i64>(14)? as u64,
            replica: r.get(15)?,
            started_ms: r.get(16)?,
            self_checked: r.get(17)?,
            provenance_json: r.get(18)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The best result of every campaign that has one.
pub fn leaderboard(conn: &Connection) -> Result<Vec<pb::LeaderboardEntry>, Error> {
    Ok(campaigns(conn)?
        .into_iter()
        .filter(|c| !c.value.is_empty())
        .map(|c| pb::LeaderboardEntry {
            campaign_id: c.campaign_id,
            problem: c.problem,
            params_json: c.params_json,
            value: c.value,
            proven: c.proven,
            provenance: c.best_provenance,
        })
        .collect())
}

/// The samples of a sample campaign, in order.
pub fn samples(conn: &Connection, campaign_id: i64) -> Result<Vec<String>, Error> {
    let mut stmt =
        conn.prepare_cached("SELECT data FROM samples WHERE campaign_id = ?1 ORDER BY id")?;
    let rows = stmt.query_map(params![campaign_id], |r| r.get(0))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// A JSON provenance record for an exported result.
pub fn provenance_record(
    conn: &Connection,
    status: &pb::CampaignStatus,
) -> Result<serde_json::Value, Error> {
    let units = results(conn, status.campaign_id)?;
    let contributors: std::collections::BTreeMap<i64, (String, String, String, String, f64)> =
        units.iter().fold(Default::default(), |mut acc, r| {
            if let Some(p) = &r.provenance {
                let entry = acc.entry(p.worker_id).or_insert((
                    p.worker_name.clone(),
                    p.host.clone(),
                    p.worker_version.clone(),
                    p.git_commit.clone(),
                    0.0,
                ));
                entry.4 += r.cpu_seconds;
            }
            acc
        });
    // Results per solver version (label: the version; older ones stay after an upgrade).
    let by_solver: std::collections::BTreeMap<u32, (u64, f64)> =
        units.iter().fold(Default::default(), |mut acc, r| {
            let version = r.provenance.as_ref().map_or(0, |p| p.solver_version);
            let entry = acc.entry(version).or_insert((0, 0.0));
            entry.0 += 1;
            entry.1 += r.cpu_seconds;
            acc
        });
    Ok(json!({
        "campaign": status.campaign_id,
        "name": status.name,
        "problem": status.problem,
        "params": serde_json::from_str::<serde_json::Value>(&status.params_json).unwrap_or_default(),
        "objective": status.objective,
        "state": status.state,
        "value": status.value,
        "proven": status.proven,
        "outcome": status.outcome,
        "claimed_by_solver": status.outcome.starts_with("claimed_"),
        "solver_provenance": best_run_provenance(&units, status),
        "held_claims": status.held_claims.len(),
        "rests_on": premises_json(&status.premises),
        "solution": serde_json::from_str::<serde_json::Value>(&status.solution_json).ok(),
        "solver_version": status.solver_version,
        "best_found_by": status.best_provenance.as_ref().map(|p| json!({
            "worker_id": p.worker_id, "worker": p.worker_name, "host": p.host,
            "version": p.worker_version, "git_commit": p.git_commit,
            "solver_version": p.solver_version,
            "older_solver": p.solver_version < status.solver_version,
            "lease": p.lease_id, "unit": p.unit_id, "at_ms": p.at_ms,
        })),
        "results_by_solver_version": by_solver.iter().map(|(version, (results, cpu))| json!({
            "solver_version": version, "results": results, "cpu_seconds": cpu,
            "older_solver": *version < status.solver_version,
        })).collect::<Vec<_>>(),
        "cpu_seconds": status.cpu_seconds,
        "created_ms": status.created_ms,
        "finished_ms": status.finished_ms,
        "contributors": contributors.iter().map(|(id, (name, host, version, commit, cpu))| json!({
            "worker_id": id, "name": name, "host": host, "version": version,
            "git_commit": commit, "cpu_seconds": cpu,
        })).collect::<Vec<_>>(),
        "exported_by": {"version": grind_shared::VERSION, "git_commit": grind_shared::GIT_COMMIT},
    }))
}

/// The solver's provenance record of the run that found the best solution (the result of
/// the lease it was found under; when that run reported none, the latest result of the same
/// unit that did), JSON; `null` when none is known.
fn best_run_provenance(
    units: &[pb::UnitResultRecord],
    status: &pb::CampaignStatus,
) -> serde_json::Value {
    let Some(best) = &status.best_provenance else {
        return serde_json::Value::Null;
    };
    let of_lease = units.iter().find(|r| {
        r.provenance
            .as_ref()
            .is_some_and(|p| p.lease_id == best.lease_id)
            && !r.provenance_json.is_empty()
    });
    let of_unit = || {
        units
            .iter()
            .rev()
            .find(|r| r.unit_id == best.unit_id && !r.provenance_json.is_empty())
    };
    of_lease
        .or_else(of_unit)
        .and_then(|r| serde_json::from_str(&r.provenance_json).ok())
        .unwrap_or(serde_json::Value::Null)
}
