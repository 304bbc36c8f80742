//! Renders statuses for people (tables, sentences) and for tools (JSON).

use grind_proto::v1 as pb;
use serde_json::{json, Value};

fn parse_json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::Null)
}

/// Provenance as JSON.
pub fn provenance(p: &pb::Provenance) -> Value {
    json!({
        "worker_id": p.worker_id,
        "worker": p.worker_name,
        "host": p.host,
        "worker_version": p.worker_version,
        "git_commit": p.git_commit,
        "solver_version": p.solver_version,
        "lease": p.lease_id,
        "unit": p.unit_id,
        "at_ms": p.at_ms,
    })
}

/// One campaign's status as JSON.
pub fn campaign(c: &pb::CampaignStatus) -> Value {
    let units = c.units.unwrap_or_default();
    json!({
        "campaign": c.campaign_id,
        "name": c.name,
        "problem": c.problem,
        "params": parse_json(&c.params_json),
        "objective": c.objective,
        "state": c.state,
        "value": (!c.value.is_empty()).then(|| c.value.clone()),
        "proven": c.proven,
        "outcome": c.outcome,
        "solution": (!c.solution_json.is_empty()).then(|| parse_json(&c.solution_json)),
        "units": {
            "pending": units.pending,
            "leased": units.leased,
            "done": units.done,
            "failed": units.failed,
            "verifying": units.verifying,
            "disputed": units.disputed,
            "split_complete": units.split_complete,
        },
        "workers": c.workers,
        "samples": c.samples,
        "cpu_seconds": c.cpu_seconds,
        "nodes": c.nodes,
        "verify_rate": c.verify_rate,
        "solver_version": c.solver_version,
        "created_ms": c.created_ms,
        "finished_ms": (c.finished_ms > 0).then_some(c.finished_ms),
        "best_provenance": c.best_provenance.as_ref().map(provenance),
    })
}

/// A worker as JSON.
pub fn worker(w: &pb::WorkerInfo) -> Value {
    json!({
        "worker_id": w.worker_id,
        "name": w.name,
        "host": w.host,
        "cores": w.cores,
        "version": w.version,
        "git_commit": w.git_commit,
        "registered_ms": w.registered_ms,
        "last_seen_ms": w.last_seen_ms,
        "active_leases": w.active_leases,
        "units_done": w.units_done,
        "cpu_seconds": w.cpu_seconds,
        "banned": w.banned,
    })
}

/// A unit result with its provenance as JSON.
pub fn result(r: &pb::UnitResultRecord) -> Value {
    json!({
        "unit": r.unit_id,
        "label": r.label,
        "status": r.state,
        "value": r.value,
        "replica": r.replica,
        "nodes": r.nodes,
        "cpu_seconds": r.cpu_seconds,
        "wall_seconds": r.wall_seconds,
        "started_ms": r.started_ms,
        "provenance": r.provenance.as_ref().map(provenance),
    })
}

/// The `grind run --json` summary line.
pub fn run_summary(c: &pb::CampaignStatus, wall_seconds: f64) -> Value {
    let units = c.units.unwrap_or_default();
    json!({
        "problem": c.problem,
        "params": parse_json(&c.params_json),
        "objective": c.objective,
        "value": (!c.value.is_empty()).then(|| c.value.clone()),
        "proven": c.proven,
        "outcome": c.outcome,
        "solution": (!c.solution_json.is_empty()).then(|| parse_json(&c.solution_json)),
        "campaign": c.campaign_id,
        "state": c.state,
        "units_done": units.done,
        "units_failed": units.failed,
        "wall_seconds": wall_seconds,
        "cpu_seconds": c.cpu_seconds,
    })
}

/// The `grind run` result for people.
pub fn run_human(c: &pb::CampaignStatus, wall_seconds: f64) -> String {
    let units = c.units.unwrap_or_default();
    let value = if c.value.is_empty() {
        "(none)"
    } else {
        &c.value
    };
    let mut out = format!(
        "{} {}: {} = {} ({})\n",
        c.problem,
        c.params_json,
        c.objective,
        value,
        crate::views::outcome_words(&c.outcome)
    );
    if !c.solution_json.is_empty() {
        out += &format!("solution: {}\n", c.solution_json);
    }
    out += &format!(
        "campaign {} {}: {} unit(s) done, {} failed, {:.3} s wall, {:.3} s CPU\n",
        c.campaign_id, c.state, units.done, units.failed, wall_seconds, c.cpu_seconds
    );
    out
}

/// A one-line summary of a campaign for tables.
pub fn campaign_row(c: &pb::CampaignStatus) -> String {
    let units = c.units.unwrap_or_default();
    format!(
        "{:>5}  {:<10} {:<9} {:>22}{} units {}/{}/{}/{} (pending/leased/done/failed)  {}",
        c.campaign_id,
        c.problem,
        c.state,
        if c.value.is_empty() { "-" } else { &c.value },
        if c.proven { "*" } else { " " },
        units.pending + units.verifying,
        units.leased,
        units.done,
        units.failed,
        c.params_json,
    )
}
