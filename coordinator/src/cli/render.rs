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
        "rests_on": crate::views::premises_json(&c.premises),
        "bound": c.bound,
        "solution": (!c.solution_json.is_empty()).then(|| parse_json(&c.solution_json)),
        "units": {
            "pending": units.pending,
            "leased": units.leased,
            "done": units.done,
            "failed": units.failed,
            "verifying": units.verifying,
            "verifying_since_ms": (units.verifying_since_ms > 0).then_some(units.verifying_since_ms),
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
        "held_claims": c.held_claims.iter().map(held_claim).collect::<Vec<_>>(),
    })
}

/// A claim held because the campaign's verifier failed on it, as JSON.
pub fn held_claim(h: &pb::HeldClaim) -> Value {
    json!({
        "id": h.id,
        "worker_id": h.worker_id,
        "unit": h.unit_id,
        "source": h.source,
        "claimed_score": h.claimed_score,
        "reason": h.reason,
        "at_ms": h.at_ms,
        "solution": parse_json(&h.solution_json),
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
        "self_checked": r.self_checked,
        "nodes": r.nodes,
        "cpu_seconds": r.cpu_seconds,
        "wall_seconds": r.wall_seconds,
        "started_ms": r.started_ms,
        "provenance": r.provenance.as_ref().map(provenance),
        "solver_provenance": (!r.provenance_json.is_empty()).then(|| parse_json(&r.provenance_json)),
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
        "rests_on": crate::views::premises_json(&c.premises),
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
        params_short(&c.problem, &c.params_json),
        c.objective,
        value,
        crate::views::outcome_words(&c.outcome)
    );
    if !c.solution_json.is_empty() {
        out += &format!("solution: {}\n", c.solution_json);
    }
    if !c.premises.is_empty() {
        out += &format!("rests on: {}\n", crate::views::premises_words(&c.premises));
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
    let row = format!(
        "{:>5}  {:<10} {:<9} {:>22}{} units {}  {}",
        c.campaign_id,
        c.problem,
        c.state,
        if c.value.is_empty() { "-" } else { &c.value },
        if c.proven { "*" } else { " " },
        unit_counts(&units),
        params_text(&c.problem, &c.params_json),
    );
    // What is true of any running search, anytime or not: how long it has run.
    let row = if c.state == "running" && c.created_ms > 0 {
        let ran = (now_ms() - c.created_ms).max(0) as f64 / 1000.0;
        format!("{row}  (running {})", crate::web::html::fmt_duration(ran))
    } else {
        row
    };
    // A finished campaign over the user's own split: the solver's claim, not a proof.
    let row = if c.outcome.starts_with("claimed_") {
        format!("{row}  (finished: the solver's claim)")
    } else {
        row
    };
    let row = match c.held_claims.first() {
        Some(newest) => format!(
            "{row}  [{} held: the checker failed on a claim by worker {}: {}]",
            c.held_claims.len(),
            newest.worker_id,
            newest.reason
        ),
        None => row,
    };
    match verifying_note(&units, now_ms()) {
        Some(note) => format!("{row}  [{note}]"),
        None => row,
    }
}

/// What verifying units wait for, for people: `None` when none waits.
pub fn verifying_note(units: &pb::UnitCounts, now_ms: i64) -> Option<String> {
    if units.verifying == 0 {
        return None;
    }
    let waited = if units.verifying_since_ms > 0 {
        format!(
            " for {} s",
            ((now_ms - units.verifying_since_ms) / 1000).max(0)
        )
    } else {
        String::new()
    };
    Some(format!(
        "{} unit(s) verifying: waiting{waited} for a replica run on another worker \
         (a lone worker re-checks its own units after the coordinator's self-check delay)",
        units.verifying
    ))
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Unit counts in words, with the verifying and disputed ones only when there are any.
fn unit_counts(units: &pb::UnitCounts) -> String {
    let mut out = format!(
        "{} pending, {} leased, {} done, {} failed",
        units.pending, units.leased, units.done, units.failed
    );
    if units.verifying > 0 {
        out += &format!(", {} verifying", units.verifying);
    }
    if units.disputed > 0 {
        out += &format!(", {} disputed", units.disputed);
    }
    out
}

/// The coordinator's bound on an optimisation campaign's optimum, for people: `optimum
/// >= 42` (min) or `optimum <= 42` (max); `None` when it has none.
pub fn bound_words(c: &pb::CampaignStatus) -> Option<String> {
    let bound = c.bound?;
    let relation = match c.objective.as_str() {
        "min" => ">=",
        "max" => "<=",
        _ => return None,
    };
    Some(format!(
        "optimum {relation} {bound} (the coordinator's bound)"
    ))
}

/// One campaign for people (`grind campaign show`): one `field: value` line each.
pub fn campaign_text(c: &pb::CampaignStatus) -> String {
    let units = c.units.unwrap_or_default();
    let mut out = format!(
        "campaign {}: {} {}\n",
        c.campaign_id,
        c.problem,
        params_text(&c.problem, &c.params_json)
    );
    // Campaigns are named after their problem and parameters unless given a name.
    if !c.name.is_empty() && c.name != format!("{} {}", c.problem, c.params_json) {
        out += &format!("name:     {}\n", c.name);
    }
    out += &format!("state:    {}\n", c.state);
    let value = if c.value.is_empty() { "-" } else { &c.value };
    out += &format!(
        "best:     {} = {} ({})\n",
        c.objective,
        value,
        crate::views::outcome_words(&c.outcome)
    );
    if !c.solution_json.is_empty() {
        out += &format!("solution: {}\n", c.solution_json);
    }
    if !c.premises.is_empty() {
        out += &format!("rests on: {}\n", crate::views::premises_words(&c.premises));
    }
    if let Some(words) = bound_words(c) {
        out += &format!("bound:    {words}\n");
    }
    out += &format!("units:    {}\n", unit_counts(&units));
    out += &format!(
        "workers:  {}   CPU: {:.1} s   verify rate: {}\n",
        c.workers, c.cpu_seconds, c.verify_rate
    );
    if let Some(p) = &c.best_provenance {
        out += &format!(
            "found by: worker {} ({}) on {}, lease {}\n",
            p.worker_id, p.worker_name, p.host, p.lease_id
        );
    }
    for h in &c.held_claims {
        out += &format!(
            "held:     claim {} ({} by worker {}, claimed {}): the verifier failed: {}\n",
            h.id, h.source, h.worker_id, h.claimed_score, h.reason
        );
    }
    out
}

/// Most list items spelled out in [`params_short`] and [`json_words`]; longer lists end with
/// `…` and their length.
const LIST_ITEMS_SHOWN: usize = 10;

/// A campaign's parameters in the command line's own words, for example `n=97 heuristic k=8`:
/// only the parameters whose values differ from their flags' defaults (unset options, false
/// switches and default values are left out), each under its flag's long name, a switch by
/// its name alone. Empty when every parameter has its default. Parameters that are not JSON
/// objects are returned as they are.
pub fn params_short(problem: &str, params_json: &str) -> String {
    let Ok(Value::Object(params)) = serde_json::from_str::<Value>(params_json) else {
        return params_json.to_string();
    };
    let flags = flag_defaults(problem);
    // The flags' order (as `--help` lists them), then any parameter without a flag.
    let keys = flags
        .iter()
        .map(|f| f.id.as_str())
        .filter(|id| params.contains_key(*id))
        .chain(
            params
                .keys()
                .map(String::as_str)
                .filter(|k| !flags.iter().any(|f| f.id == *k)),
        );
    let mut words = Vec::new();
    for key in keys {
        let value = &params[key];
        let flag = flags.iter().find(|f| f.id == key);
        let default = flag.and_then(|f| f.default.as_deref());
        let is_default = match value {
            Value::Null | Value::Bool(false) => true,
            Value::String(s) => default == Some(s.as_str()),
            Value::Number(n) => default == Some(n.to_string().as_str()),
            _ => false,
        };
        if is_default {
            continue;
        }
        let name = flag.map_or_else(|| key.replace('_', "-"), |f| f.long.clone());
        match value {
            Value::Bool(true) => words.push(name),
            _ => words.push(format!("{name}={}", value_words(value))),
        }
    }
    words.join(" ")
}

/// [`params_short`], or `defaults` when every parameter has its default: the parameters as
/// the web pages show them, for the text of `grind status`, `campaign list|show` and the
/// leaderboard.
pub fn params_text(problem: &str, params_json: &str) -> String {
    let short = params_short(problem, params_json);
    if short.is_empty() {
        "defaults".to_string()
    } else {
        short
    }
}

/// A JSON value as short text: an object as `key=value` words (nested objects in
/// parentheses), a list as comma-separated items, a string as it is.
pub fn json_words(value: &Value) -> String {
    match value {
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| format!("{k}={}", value_words(v)))
            .collect::<Vec<_>>()
            .join(" "),
        _ => value_words(value),
    }
}

fn value_words(value: &Value) -> String {
    match value {
        Value::Null => "none".into(),
        // JSON carried as text (a solution in an event's detail, say) is spelled out too.
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(inner @ (Value::Object(_) | Value::Array(_))) => value_words(&inner),
            _ => s.clone(),
        },
        Value::Array(items) => {
            let shown: Vec<String> = items
                .iter()
                .take(LIST_ITEMS_SHOWN)
                .map(value_words)
                .collect();
            if items.len() > LIST_ITEMS_SHOWN {
                format!("{},… ({} items)", shown.join(","), items.len())
            } else {
                shown.join(",")
            }
        }
        Value::Object(_) => format!("({})", json_words(value)),
        _ => value.to_string(),
    }
}

/// One problem flag: its parameter's name, its long flag and its default value (`None` for
/// options without one and for switches, whose default, false, is left out anyway).
struct FlagDefault {
    id: String,
    long: String,
    default: Option<String>,
}

fn flag_defaults(problem: &str) -> Vec<FlagDefault> {
    let Ok(entry) = grind_shared::registry::lookup(problem) else {
        return Vec::new();
    };
    let cmd = entry.augment_args(clap::Command::new(entry.name));
    cmd.get_arguments()
        .map(|arg| FlagDefault {
            id: arg.get_id().to_string(),
            long: arg
                .get_long()
                .map_or_else(|| arg.get_id().to_string(), str::to_string),
            default: match arg.get_default_values() {
                [one] => Some(one.to_string_lossy().into_owned()),
                _ => None,
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_in_the_command_lines_words() {
        // What `grind campaign add topswops --n 97 --heuristic` stores (canonical JSON).
        let stored = r#"{"budget":215533,"contest":null,"direction":null,"exact_up_to":null,
            "heuristic":true,"k":8,"known":null,"n":97,"polish_stall":3,"pool":8,"rounds":null,
            "split_depth":null,"strategy":"block","target":null,"units":16,"window":5}"#;
        assert_eq!(
            params_short("topswops", stored),
            "n=97 heuristic strategy=block k=8 pool=8 units=16 window=5 polish-stall=3 budget=215533"
        );
        assert_eq!(
            params_short(
                "topswops",
                r#"{"n":12,"split_depth":3,"known":[1,1,2,4,7,10,16,22,30,38,51]}"#
            ),
            "n=12 known=1,1,2,4,7,10,16,22,30,38,… (11 items) split-depth=3"
        );
        assert_eq!(params_short("primes", r#"{"from":0,"to":100}"#), "to=100");
        assert_eq!(params_short("nosuch", r#"{"a_b":1,"c":null}"#), "a-b=1");
        assert_eq!(params_short("primes", "not json"), "not json");
    }

    #[test]
    fn json_objects_as_words() {
        let detail = json!({"replica": true, "attempt": 2, "why": {"code": "x"}, "list": [],
            "solution": "{\"deck\":[3,1,2],\"flips\":2}", "text": "{not json"});
        assert_eq!(
            json_words(&detail),
            "attempt=2 list= replica=true solution=(deck=3,1,2 flips=2) text={not json why=(code=x)"
        );
    }
}
