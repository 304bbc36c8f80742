//! Granting: leases of pending units to a worker, shared fairly among the running
//! campaigns, with units produced lazily from each campaign's splitter and paced by
//! [`crate::scheduler::rules::pacing`].

use grind_proto::v1 as pb;
use grind_shared::problem::{Problem, UnitSpec};
use serde_json::{json, Value};

use super::finish;
use crate::error::Error;
use crate::scheduler::rules::pacing::{self, Measure, SAMPLES_AVERAGED};
use crate::scheduler::tables::units::NewUnit;
use crate::scheduler::tables::{campaigns, events, leases, results, units, workers};
use crate::scheduler::{Ctx, Subject};

/// What a lease request got: its leases, and the running campaigns whose units the worker
/// may not run (their problem's `requirements()` refuse its host facts), with why.
#[derive(Debug, Default)]
pub struct Granted {
    /// The leases granted.
    pub leases: Vec<pb::LeaseGrant>,
    /// Campaigns skipped for this worker, and why.
    pub skipped: Vec<pb::CampaignSkipped>,
}

/// Grants up to `capacity` leases to a worker (checked to stand), sharing them fairly
/// among running campaigns (fewest active leases first, then least recently served, so that
/// many campaigns on few workers take turns) and producing units lazily from each
/// campaign's splitter. A campaign whose predecessor is still running or paused gets only
/// the slots left over, the earliest such campaign first. A campaign whose problem's
/// requirements the worker's host facts do not meet is skipped (and named in
/// [`Granted::skipped`]); the facts are read only when some running campaign has
/// requirements.
pub fn grant_leases(
    ctx: &Ctx,
    worker_id: i64,
    capacity: u32,
    max_units: u32,
) -> Result<Granted, Error> {
    workers::touch_worker(ctx, worker_id)?;
    grant_more(ctx, worker_id, capacity, max_units)
}

/// [`grant_leases`] for a worker already checked in this write.
pub fn grant_more(
    ctx: &Ctx,
    worker_id: i64,
    capacity: u32,
    max_units: u32,
) -> Result<Granted, Error> {
    let held = leases::held_count(ctx, worker_id)?;
    // Runs only for workers that take them (`max_units` above `capacity`).
    let max_units = if max_units == 0 { capacity } else { max_units };
    let takes_runs = max_units > capacity;
    let mut room = ((i64::from(ctx.config.max_leases_per_worker) - held).max(0) as usize)
        .min(max_units as usize);
    let mut remaining = (capacity.min(ctx.config.max_capacity) as usize).min(room);
    let mut campaigns = campaigns::running_in_turn(ctx)?;
    let skipped = if remaining == 0 {
        Vec::new()
    } else {
        refused_campaigns(ctx, worker_id, &campaigns)?
    };
    campaigns.retain(|c| !skipped.iter().any(|s| s.campaign_id == c.0));
    let ready = campaigns.iter().filter(|c| !c.1).count();
    let mut grants = Vec::new();
    for (index, (campaign_id, waiting)) in campaigns.iter().enumerate() {
        if remaining == 0 {
            break;
        }
        let share = if *waiting {
            remaining
        } else {
            remaining.div_ceil(ready - index)
        };
        // Tiny units travel in runs: several units per slot, each its own lease.
        let run = if takes_runs {
            pacing::run_length(measure(ctx, *campaign_id)?)
        } else {
            1
        };
        let got = grant_from_campaign(ctx, *campaign_id, worker_id, (share * run).min(room))?;
        room -= got.len();
        remaining = remaining.saturating_sub(got.len().div_ceil(run)).min(room);
        grants.extend(got);
    }
    Ok(Granted {
        leases: grants,
        skipped,
    })
}

/// The running campaigns whose problem's requirements refuse `worker_id`'s host facts, with
/// why. Requirements come from the problem cache; the worker's facts are read once, and only
/// when some campaign has requirements at all.
fn refused_campaigns(
    ctx: &Ctx,
    worker_id: i64,
    running: &[(i64, bool)],
) -> Result<Vec<pb::CampaignSkipped>, Error> {
    let mut facts = None;
    let mut refused = Vec::new();
    for &(campaign_id, _) in running {
        let Some(needs) = ctx.problems.requirements(ctx.conn, campaign_id)? else {
            continue;
        };
        if facts.is_none() {
            facts = Some(workers::host_facts(ctx.conn, worker_id)?);
        }
        if let Err(reason) = needs.admits(facts.as_ref().expect("just read")) {
            refused.push(pb::CampaignSkipped {
                campaign_id,
                reason,
            });
        }
    }
    Ok(refused)
}

/// The pacing measure of a campaign, from its latest results.
fn measure(ctx: &Ctx, campaign_id: i64) -> Result<Option<Measure>, Error> {
    let (own_target, per_unit, per_part, samples) =
        results::recent_wall_times(ctx, campaign_id, SAMPLES_AVERAGED)?;
    Ok(Measure::new(
        own_target,
        ctx.config.target_lease_ms,
        per_unit,
        per_part,
        samples,
    ))
}

/// Grants up to `limit` of a campaign's pending units to a worker, splitting more off when
/// too few are pending; near the campaign's end, no more than the worker's share of what is
/// left (`pacing::even_finish`).
fn grant_from_campaign(
    ctx: &Ctx,
    campaign_id: i64,
    worker_id: i64,
    limit: usize,
) -> Result<Vec<pb::LeaseGrant>, Error> {
    let mut pending = units::pending_units(ctx, campaign_id, worker_id, limit)?;
    while pending.len() < limit {
        if split_more(ctx, campaign_id, worker_id, limit - pending.len())? == 0 {
            break;
        }
        pending = units::pending_units(ctx, campaign_id, worker_id, limit)?;
    }
    if pending.is_empty() {
        return Ok(Vec::new());
    }
    let granting: i64 = pending.iter().map(|u| u.parts.max(1)).sum();
    if let Some(share) = even_finish(ctx, campaign_id, worker_id, granting)? {
        let keep = share.units_within(pending.iter().map(|u| u.parts));
        pending.truncate(keep);
    }
    let campaign = campaigns::grant_info(ctx, campaign_id)?;
    let deadline = ctx.now + ctx.config.lease_ttl_ms;
    let mut grants = Vec::with_capacity(pending.len());
    for mut unit in pending {
        let dropped = unit.cursor.is_some()
            && !workers::trusts_checkpoint(ctx, worker_id, unit.cursor_worker)?;
        if dropped {
            // Not this worker's to resume: the unit starts again from its beginning.
            unit.cursor = None;
            units::drop_checkpoint(ctx, unit.id)?;
        }
        let lease_id =
            leases::insert(ctx, unit.id, campaign_id, worker_id, deadline, unit.replica)?;
        units::mark_leased(ctx, unit.id, lease_id)?;
        campaigns::note_served(ctx, campaign_id, lease_id)?;
        events::append(
            ctx,
            "lease_granted",
            Subject {
                campaign: Some(campaign_id),
                unit: Some(unit.id),
                lease: Some(lease_id),
                worker: Some(worker_id),
            },
            json!({"replica": unit.replica, "attempt": unit.attempts + 1,
                   "resumes": unit.cursor.is_some(), "checkpoint_dropped": dropped}),
        )?;
        grants.push(pb::LeaseGrant {
            lease_id,
            campaign_id,
            problem: campaign.problem.clone(),
            params_json: campaign.params_json.clone(),
            unit_id: unit.id,
            unit_label: unit.label,
            unit_payload: unit.payload,
            cursor: unit.cursor.unwrap_or_default(),
            deadline_ms: deadline,
            bound: campaign.bound,
            attempt: unit.attempts + 1,
            replica: unit.replica,
            solver_version: campaign.solver_version,
        });
    }
    Ok(grants)
}

/// The worker's share of a campaign's last pending work, once its splitter is exhausted
/// (see [`pacing::even_finish`]).
fn even_finish(
    ctx: &Ctx,
    campaign_id: i64,
    worker_id: i64,
    granting: i64,
) -> Result<Option<pacing::EndShare>, Error> {
    if !campaigns::split_done(ctx, campaign_id)? {
        return Ok(None);
    }
    let (own, all) = workers::lanes(ctx, campaign_id, worker_id)?;
    let Some(scan) = pacing::even_finish_scan(own, all, granting) else {
        return Ok(None);
    };
    let pending = units::pending_parts(ctx, campaign_id, scan)?;
    Ok(pacing::even_finish(own, all, pending, granting))
}

/// Asks the campaign's splitter for more units for `worker_id`; returns how many were added.
fn split_more(ctx: &Ctx, campaign_id: i64, worker_id: i64, wanted: usize) -> Result<usize, Error> {
    let split = campaigns::split_state(ctx, campaign_id)?;
    if split.done {
        return Ok(0);
    }
    let problem = ctx.problems.get(ctx.conn, campaign_id)?;
    if let Some(at) = split.cursor.as_deref() {
        if problem.waits_at(at) && units::open_units(ctx, campaign_id)? > 0 {
            // A stage boundary: the next stage needs every result of this one.
            return Ok(0);
        }
    }
    let incumbent = match split.best.as_deref() {
        Some(text) => Some(serde_json::from_str::<Value>(text).map_err(|e| {
            Error::Internal(format!(
                "campaign {campaign_id}: stored best is not JSON: {e}"
            ))
        })?),
        None => None,
    };
    // Tiny units are created coarser where the problem can join them exactly.
    let join = pacing::join_factor(measure(ctx, campaign_id)?);
    let batch = problem.split_from(
        split.cursor.as_deref(),
        wanted.max(ctx.config.split_batch) * join,
        incumbent.as_ref(),
    )?;
    let last = batch.next.is_none();
    // The last batch ends on small units, one size level per lane working on it.
    let per_level = if last && join > 1 {
        workers::lanes(ctx, campaign_id, worker_id)?.1 as usize
    } else {
        1
    };
    let sizes = pacing::join_sizes(batch.units.len(), join, last, per_level);
    let new_units = join_units(problem.as_ref(), batch.units, &sizes);
    let added = units::insert_units(ctx, campaign_id, split.next_seq, &new_units)?;
    campaigns::advance_split(ctx, campaign_id, batch.next.as_deref(), added)?;
    if last {
        finish::maybe_finish(ctx, campaign_id)?;
    }
    Ok(added)
}

/// A unit about to be inserted, covering `parts` splitter units, with its problem's bound.
pub fn new_unit(problem: &dyn Problem, spec: UnitSpec, parts: i64) -> NewUnit {
    let bound = problem.bound_of_unit(&spec.payload);
    NewUnit { spec, parts, bound }
}

/// Joins consecutive splitter units, `sizes` at a time (summing to their number), into one
/// unit covering exactly their union, where the problem can (each joined unit counts its
/// parts); units it cannot join stay as they are.
fn join_units(problem: &dyn Problem, specs: Vec<UnitSpec>, sizes: &[usize]) -> Vec<NewUnit> {
    if sizes.iter().all(|&size| size <= 1) {
        return specs
            .into_iter()
            .map(|spec| new_unit(problem, spec, 1))
            .collect();
    }
    let mut joined = Vec::with_capacity(sizes.len());
    let mut at = 0;
    for &size in sizes {
        let chunk = &specs[at.min(specs.len())..(at + size).min(specs.len())];
        at += size;
        match problem.join_units(chunk) {
            Some(unit) if chunk.len() > 1 => {
                joined.push(new_unit(problem, unit, chunk.len() as i64))
            }
            _ => joined.extend(chunk.iter().cloned().map(|spec| new_unit(problem, spec, 1))),
        }
    }
    joined
}
