//! Campaign life: creation (one campaign, or one per member of a family), with its premises
//! recorded and its predecessor linked, and administrative state changes (pause, resume,
//! cancel). Finishing is [`super::finish`].

use grind_shared::registry;
use grind_shared::rng::splitmix64;
use serde_json::{json, Value};

use super::{finish, lease_end, proof, successors};
use crate::error::Error;
use crate::scheduler::rules::campaign::{check_family, check_settings, transition};
use crate::scheduler::tables::campaigns::{self, CampaignInsert};
use crate::scheduler::tables::events::campaign_event;
use crate::scheduler::tables::units;
use crate::scheduler::Ctx;

pub use crate::scheduler::rules::campaign::Action;

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

/// Creates the campaign `new` describes, or one campaign per member when its parameters name
/// a family of instances (see `ProblemDef::family`), all in one transaction.
pub fn create_campaigns(ctx: &Ctx, new: &NewCampaign) -> Result<Vec<i64>, Error> {
    let entry = registry::lookup(new.problem)?;
    let params: Value = serde_json::from_str(new.params_json)
        .map_err(|e| Error::InvalidArgument(format!("parameters are not JSON: {e}")))?;
    let Some(members) = entry.family(&params)? else {
        return Ok(vec![create_campaign(ctx, new)?]);
    };
    check_family(new.family, members.len())?;
    let label = match new.family {
        Some(label) => label.to_string(),
        None => format!("{} {}", new.problem, params),
    };
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

/// Creates one running campaign after validating its problem and parameters: its premises
/// are recorded (refused when a proving campaign contradicts one) and it is linked to the
/// campaign it builds on, adopting that one's result if it has finished.
pub fn create_campaign(ctx: &Ctx, new: &NewCampaign) -> Result<i64, Error> {
    let entry = registry::lookup(new.problem)?;
    let params: Value = serde_json::from_str(new.params_json)
        .map_err(|e| Error::InvalidArgument(format!("parameters are not JSON: {e}")))?;
    let (canonical, problem) = entry.build(&params)?;
    let verify_rate = new.verify_rate.unwrap_or(ctx.config.verify_rate);
    let max_attempts = new.max_attempts.unwrap_or(ctx.config.max_attempts);
    check_settings(verify_rate, max_attempts)?;
    let canonical_text = canonical.to_string();
    let name = if new.name.is_empty() {
        format!("{} {}", new.problem, canonical_text)
    } else {
        new.name.to_string()
    };
    let id = campaigns::insert(
        ctx,
        &CampaignInsert {
            name: &name,
            problem: new.problem,
            params_json: &canonical_text,
            objective: problem.objective().as_str(),
            exhaustive: problem.exhaustive(),
            coverage_checked: problem.coverage_checked(),
            solver_version: entry.solver_version,
            verify_rate,
            max_attempts,
            seed: splitmix64(ctx.now as u64 ^ 0x6772_696e_6400) as i64,
            bound: problem.initial_bound(),
            family: new.family,
            target_lease_ms: new.target_lease_ms.unwrap_or(0),
        },
    )?;
    let premises = problem.premises();
    proof::record(ctx, id, &premises)?;
    campaign_event(
        ctx,
        id,
        "campaign_created",
        json!({"problem": new.problem, "params": canonical, "verify_rate": verify_rate,
               "max_attempts": max_attempts, "solver_version": entry.solver_version,
               "premises": premises}),
    )?;
    if successors::link(ctx, id, problem.as_ref())? {
        finish::close_if_reached(ctx, id)?;
    }
    ctx.page_changed();
    ctx.work_appeared();
    ctx.bounds_changed();
    Ok(id)
}

/// Applies an administrative action to a campaign.
pub fn change_state(ctx: &Ctx, campaign_id: i64, action: Action) -> Result<(), Error> {
    let state = campaigns::state(ctx.conn, campaign_id)?
        .ok_or_else(|| Error::NotFound(format!("no campaign {campaign_id}")))?;
    let change = transition(campaign_id, &state, action)?;
    if change.retry_failed {
        units::retry_failed(ctx, campaign_id)?;
    }
    if change.cancel_leases {
        lease_end::cancel_campaign_leases(ctx, campaign_id)?;
    }
    let finished = (change.to == "cancelled").then_some(ctx.now);
    campaigns::set_state(ctx, campaign_id, change.to, finished)?;
    campaign_event(
        ctx,
        campaign_id,
        "campaign_state",
        json!({"from": state, "to": change.to}),
    )?;
    if change.to == "running" {
        finish::maybe_finish(ctx, campaign_id)?;
    }
    ctx.page_changed();
    ctx.work_appeared();
    ctx.bounds_changed();
    Ok(())
}
