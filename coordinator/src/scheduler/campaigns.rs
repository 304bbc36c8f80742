//! Campaigns: creation (one or a family), administrative state changes, finishing, the
//! proven restatement of the best solution, and the campaign's counters (split position,
//! unit sequence, totals, usage, incumbent). The only writer of the `campaigns` table: other
//! modules change a campaign through the small functions at the end of this file.

use grind_shared::count::add_counts;
use grind_shared::registry;
use grind_shared::rng::splitmix64;
use rusqlite::{params, OptionalExtension};
use serde_json::{json, Value};

use super::events::campaign_event;
use super::{leases, premises, successors, units, Ctx, Usage};
use crate::error::Error;

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
    /// The lease duration its grants aim at, ms; `None` = server default, negative = pacing
    /// off (units granted one per slot, as split).
    pub target_lease_ms: Option<i64>,
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
                 solver_version, state, created_ms, verify_rate, max_attempts, seed, bound, family,
                 target_lease_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'running', ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
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
            new.target_lease_ms.unwrap_or(0),
        ])?;
    let id = ctx.conn.last_insert_rowid();
    let premises = problem.premises();
    premises::record(ctx, id, &premises)?;
    campaign_event(
        ctx,
        id,
        "campaign_created",
        json!({"problem": new.problem, "params": canonical, "verify_rate": verify_rate,
               "max_attempts": max_attempts, "solver_version": entry.solver_version,
               "premises": premises}),
    )?;
    successors::link(ctx, id, problem.as_ref())?;
    Ok(id)
}

/// Ends a running campaign once its splitter is exhausted and no unit is left to run; a
/// campaign that finished `done` then backs the premises it proves and hands its result to
/// the campaigns that build on it.
pub fn maybe_finish_campaign(ctx: &Ctx, campaign_id: i64) -> Result<(), Error> {
    if finish_if_complete(ctx, campaign_id)? == Some("done") {
        premises::back_dependents(ctx, campaign_id)?;
        successors::on_finished(ctx, campaign_id)?;
    }
    Ok(())
}

/// Ends a running campaign once its splitter is exhausted and no unit is left to run;
/// returns the state it ended in (`done` or `failed`), if it ended.
pub(crate) fn finish_if_complete(
    ctx: &Ctx,
    campaign_id: i64,
) -> Result<Option<&'static str>, Error> {
    // Cheap test first: almost every completion of a campaign happens while its splitter
    // still has units to produce, and then no unit needs counting.
    let (state, split_done): (String, bool) = ctx
        .conn
        .prepare_cached("SELECT state, split_done FROM campaigns WHERE id = ?1")?
        .query_row(params![campaign_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
    if state != "running" || !split_done {
        return Ok(None);
    }
    let open: bool = ctx
        .conn
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM units WHERE campaign_id = ?1 AND state IN ('pending', 'leased'))",
        )?
        .query_row(params![campaign_id], |r| r.get(0))?;
    if open {
        return Ok(None);
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
    campaign_event(
        ctx,
        campaign_id,
        "campaign_finished",
        json!({"state": new_state, "failed_units": failed}),
    )?;
    Ok(Some(new_state))
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
            units::retry_failed(ctx, campaign_id)?;
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
        for lease in &leases::active_of_campaign(ctx.conn, campaign_id)? {
            leases::end_lease(ctx, lease, "cancelled", false, None)?;
        }
    }
    let finished = (new_state == "cancelled").then_some(ctx.now);
    ctx.conn
        .prepare_cached(
            "UPDATE campaigns SET state = ?2, finished_ms = coalesce(?3, CASE WHEN ?2 = 'running' THEN NULL ELSE finished_ms END) WHERE id = ?1",
        )?
        .execute(params![campaign_id, new_state, finished])?;
    campaign_event(
        ctx,
        campaign_id,
        "campaign_state",
        json!({"from": state, "to": new_state}),
    )?;
    if new_state == "running" {
        maybe_finish_campaign(ctx, campaign_id)?;
    }
    Ok(())
}

/// Stores where the splitter stopped (`None`: exhausted) and counts `added` more units in
/// the campaign's unit sequence.
pub(crate) fn advance_split(
    ctx: &Ctx,
    campaign_id: i64,
    next: Option<&[u8]>,
    added: usize,
) -> Result<(), Error> {
    ctx.conn
        .prepare_cached(
            "UPDATE campaigns SET split_cursor = ?2, split_done = ?3, next_seq = next_seq + ?4
             WHERE id = ?1",
        )?
        .execute(params![campaign_id, next, next.is_none(), added as i64])?;
    Ok(())
}

/// Counts `added` more units (donated or spawned) in the campaign's unit sequence.
pub(crate) fn advance_sequence(ctx: &Ctx, campaign_id: i64, added: usize) -> Result<(), Error> {
    ctx.conn
        .prepare_cached("UPDATE campaigns SET next_seq = next_seq + ?2 WHERE id = ?1")?
        .execute(params![campaign_id, added as i64])?;
    Ok(())
}

/// Notes the campaign's latest lease (campaigns are served least recently served first).
pub(crate) fn note_served(ctx: &Ctx, campaign_id: i64, lease_id: i64) -> Result<(), Error> {
    ctx.conn
        .prepare_cached("UPDATE campaigns SET last_lease_id = ?2 WHERE id = ?1")?
        .execute(params![campaign_id, lease_id])?;
    Ok(())
}

/// Adds a result's (or a released lease's) resource use to the campaign's totals.
pub(crate) fn add_usage(ctx: &Ctx, campaign_id: i64, usage: Usage) -> Result<(), Error> {
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

/// Counts `added` more stored samples.
pub(crate) fn add_samples(ctx: &Ctx, campaign_id: i64, added: i64) -> Result<(), Error> {
    ctx.conn
        .prepare_cached("UPDATE campaigns SET samples = samples + ?2 WHERE id = ?1")?
        .execute(params![campaign_id, added])?;
    Ok(())
}

/// Folds a finished unit's accepted value into its campaign: a count campaign adds it to
/// its total; other objectives keep their values on the units.
pub(crate) fn fold_unit_value(ctx: &Ctx, campaign_id: i64, value: &str) -> Result<(), Error> {
    let (objective, total): (String, String) = ctx
        .conn
        .prepare_cached("SELECT objective, total FROM campaigns WHERE id = ?1")?
        .query_row(params![campaign_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
    if objective == "count" {
        let total = add_counts(&total, value)?;
        ctx.conn
            .prepare_cached("UPDATE campaigns SET total = ?2 WHERE id = ?1")?
            .execute(params![campaign_id, total])?;
    }
    Ok(())
}

/// Makes a solution the campaign's incumbent (recorded by event `event_id`). The pruning
/// bound only ever tightens: an initial bound better than this solution stays.
pub(crate) fn set_incumbent(
    ctx: &Ctx,
    campaign_id: i64,
    score: i64,
    solution_json: &str,
    event_id: i64,
) -> Result<(), Error> {
    ctx.conn
        .prepare_cached(
            "UPDATE campaigns SET best_score = ?2, best_solution = ?3, best_event = ?4,
                 bound = CASE WHEN bound IS NULL THEN ?2
                              WHEN objective = 'max' THEN max(bound, ?2)
                              ELSE min(bound, ?2) END
             WHERE id = ?1",
        )?
        .execute(params![campaign_id, score, solution_json, event_id])?;
    Ok(())
}

/// Raises the solver version a campaign continues with (see [`crate::upgrade`]).
pub(crate) fn set_solver_version(ctx: &Ctx, campaign_id: i64, version: u32) -> Result<(), Error> {
    ctx.conn
        .prepare_cached("UPDATE campaigns SET solver_version = ?2 WHERE id = ?1")?
        .execute(params![campaign_id, version])?;
    Ok(())
}

/// Links a campaign to the campaign whose result it builds on (see [`super::successors`]).
pub(crate) fn set_after(ctx: &Ctx, campaign_id: i64, after: i64) -> Result<(), Error> {
    ctx.conn
        .prepare_cached("UPDATE campaigns SET after_campaign = ?2 WHERE id = ?1")?
        .execute(params![campaign_id, after])?;
    Ok(())
}

/// Notes that a campaign has taken its predecessor's result (it does so once).
pub(crate) fn note_inherited(ctx: &Ctx, campaign_id: i64) -> Result<(), Error> {
    ctx.conn
        .prepare_cached("UPDATE campaigns SET inherited = 1 WHERE id = ?1")?
        .execute(params![campaign_id])?;
    Ok(())
}

/// Sets (or drops) the ceiling on a campaign's optimum that its predecessor's result gives.
pub(crate) fn set_ceiling(ctx: &Ctx, campaign_id: i64, ceiling: Option<i64>) -> Result<(), Error> {
    ctx.conn
        .prepare_cached("UPDATE campaigns SET ceiling = ?2 WHERE id = ?1")?
        .execute(params![campaign_id, ceiling])?;
    Ok(())
}

/// Ends a campaign's splitting: it creates no more units (the campaign closed at its
/// ceiling).
pub(crate) fn close_split(ctx: &Ctx, campaign_id: i64) -> Result<(), Error> {
    ctx.conn
        .prepare_cached("UPDATE campaigns SET split_cursor = NULL, split_done = 1 WHERE id = ?1")?
        .execute(params![campaign_id])?;
    Ok(())
}
