//! The `campaigns` table: a campaign's row (problem, parameters, state, settings), its
//! counters (split position, unit sequence, totals, usage), its incumbent and bound, and
//! its link to a predecessor. The only writer of the table; calls no other table module.

use grind_proto::v1 as pb;
use grind_shared::count::add_counts;
use rusqlite::{params, Connection, OptionalExtension};
use serde_json::Value;

use crate::error::Error;
use crate::scheduler::{Ctx, Usage};

/// A new campaign's row.
pub struct CampaignInsert<'a> {
    /// Display name.
    pub name: &'a str,
    /// Registered problem name.
    pub problem: &'a str,
    /// Canonical parameters (JSON text).
    pub params_json: &'a str,
    /// `count`, `max`, `min` or `sample`.
    pub objective: &'a str,
    /// Whether its search is exhaustive.
    pub exhaustive: bool,
    /// Whether grind checks that its units cover the search space (false: a finished
    /// exhaustive campaign is its solver's claim, never proven).
    pub coverage_checked: bool,
    /// The solver version it starts with.
    pub solver_version: u32,
    /// Replication rate.
    pub verify_rate: f64,
    /// Failed attempts before a unit fails.
    pub max_attempts: u32,
    /// The seed of its replication draw.
    pub seed: i64,
    /// The problem's initial pruning bound.
    pub bound: Option<i64>,
    /// Its family label.
    pub family: Option<&'a str>,
    /// Target lease time, ms (0: the server's).
    pub target_lease_ms: i64,
}

/// Inserts a running campaign; returns its id.
pub fn insert(ctx: &Ctx, row: &CampaignInsert) -> Result<i64, Error> {
    ctx.conn
        .prepare_cached(
            "INSERT INTO campaigns (name, problem, params_json, objective, exhaustive,
                 solver_version, state, created_ms, verify_rate, max_attempts, seed, bound, family,
                 target_lease_ms, coverage_checked)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'running', ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
        )?
        .execute(params![
            row.name,
            row.problem,
            row.params_json,
            row.objective,
            row.exhaustive,
            row.solver_version,
            ctx.now,
            row.verify_rate,
            row.max_attempts,
            row.seed,
            row.bound,
            row.family,
            row.target_lease_ms,
            row.coverage_checked,
        ])?;
    Ok(ctx.conn.last_insert_rowid())
}

/// A campaign's state, if it exists.
pub fn state(conn: &Connection, campaign_id: i64) -> Result<Option<String>, Error> {
    Ok(conn
        .prepare_cached("SELECT state FROM campaigns WHERE id = ?1")?
        .query_row(params![campaign_id], |r| r.get(0))
        .optional()?)
}

/// A campaign's state, and whether its splitter is exhausted.
pub fn state_and_split_done(ctx: &Ctx, campaign_id: i64) -> Result<(String, bool), Error> {
    Ok(ctx
        .conn
        .prepare_cached("SELECT state, split_done FROM campaigns WHERE id = ?1")?
        .query_row(params![campaign_id], |r| Ok((r.get(0)?, r.get(1)?)))?)
}

/// Whether a campaign's splitter is exhausted.
pub fn split_done(ctx: &Ctx, campaign_id: i64) -> Result<bool, Error> {
    Ok(ctx
        .conn
        .prepare_cached("SELECT split_done FROM campaigns WHERE id = ?1")?
        .query_row(params![campaign_id], |r| r.get(0))?)
}

/// Ends a campaign in `state` (`done` or `failed`), now.
pub fn set_finished(ctx: &Ctx, campaign_id: i64, state: &str) -> Result<(), Error> {
    ctx.conn
        .prepare_cached("UPDATE campaigns SET state = ?2, finished_ms = ?3 WHERE id = ?1")?
        .execute(params![campaign_id, state, ctx.now])?;
    Ok(())
}

/// Moves a campaign to `state` by an administrative action: `finished` stamps its end, a
/// running campaign loses its end stamp.
pub fn set_state(
    ctx: &Ctx,
    campaign_id: i64,
    state: &str,
    finished: Option<i64>,
) -> Result<(), Error> {
    ctx.conn
        .prepare_cached(
            "UPDATE campaigns SET state = ?2, finished_ms = coalesce(?3, CASE WHEN ?2 = 'running' THEN NULL ELSE finished_ms END) WHERE id = ?1",
        )?
        .execute(params![campaign_id, state, finished])?;
    Ok(())
}

/// Whether a campaign's finished search proves its result (exhaustive, with a split grind
/// checked, and no claim held unchecked), and its best solution.
pub fn exhaustive_best(ctx: &Ctx, campaign_id: i64) -> Result<(bool, Option<String>), Error> {
    Ok(ctx
        .conn
        .prepare_cached(
            "SELECT exhaustive AND coverage_checked AND NOT EXISTS
                    (SELECT 1 FROM held_claims WHERE campaign_id = ?1), best_solution
             FROM campaigns WHERE id = ?1",
        )?
        .query_row(params![campaign_id], |r| Ok((r.get(0)?, r.get(1)?)))?)
}

/// Whether grind checks that a campaign's units cover its search space (false: its
/// finished search is the solver's claim).
pub fn coverage_checked(ctx: &Ctx, campaign_id: i64) -> Result<bool, Error> {
    Ok(ctx
        .conn
        .prepare_cached("SELECT coverage_checked FROM campaigns WHERE id = ?1")?
        .query_row(params![campaign_id], |r| r.get(0))?)
}

/// Replaces a campaign's best solution by an equivalent statement of it.
pub fn restate_best(ctx: &Ctx, campaign_id: i64, solution_json: &str) -> Result<(), Error> {
    ctx.conn
        .prepare_cached("UPDATE campaigns SET best_solution = ?2 WHERE id = ?1")?
        .execute(params![campaign_id, solution_json])?;
    Ok(())
}

/// Where a campaign's splitter stands.
pub struct SplitState {
    /// The splitter is exhausted.
    pub done: bool,
    /// Where it stopped.
    pub cursor: Option<Vec<u8>>,
    /// The next unit's sequence number.
    pub next_seq: i64,
    /// The incumbent (JSON text).
    pub best: Option<String>,
}

/// Where a campaign's splitter stands.
pub fn split_state(ctx: &Ctx, campaign_id: i64) -> Result<SplitState, Error> {
    Ok(ctx
        .conn
        .prepare_cached(
            "SELECT split_done, split_cursor, next_seq, best_solution FROM campaigns WHERE id = ?1",
        )?
        .query_row(params![campaign_id], |r| {
            Ok(SplitState {
                done: r.get(0)?,
                cursor: r.get(1)?,
                next_seq: r.get(2)?,
                best: r.get(3)?,
            })
        })?)
}

/// The next unit's sequence number.
pub fn next_seq(ctx: &Ctx, campaign_id: i64) -> Result<i64, Error> {
    Ok(ctx
        .conn
        .prepare_cached("SELECT next_seq FROM campaigns WHERE id = ?1")?
        .query_row(params![campaign_id], |r| r.get(0))?)
}

/// Stores where the splitter stopped (`None`: exhausted) and counts `added` more units in
/// the campaign's unit sequence.
pub fn advance_split(
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
pub fn advance_sequence(ctx: &Ctx, campaign_id: i64, added: usize) -> Result<(), Error> {
    ctx.conn
        .prepare_cached("UPDATE campaigns SET next_seq = next_seq + ?2 WHERE id = ?1")?
        .execute(params![campaign_id, added as i64])?;
    Ok(())
}

/// Ends a campaign's splitting: it creates no more units (the campaign closed at its
/// ceiling).
pub fn close_split(ctx: &Ctx, campaign_id: i64) -> Result<(), Error> {
    ctx.conn
        .prepare_cached("UPDATE campaigns SET split_cursor = NULL, split_done = 1 WHERE id = ?1")?
        .execute(params![campaign_id])?;
    Ok(())
}

/// The running campaigns in the order they are served, each with whether it waits on a
/// running predecessor: ready ones first, fewest active leases first, then least recently
/// served; waiting ones last, earliest first. Counting a campaign's active leases costs a
/// scan of them on every grant (a thousand workers hold a thousand), so a lone running
/// campaign skips the sort (it cannot wait: its predecessor is not running).
pub fn running_in_turn(ctx: &Ctx) -> Result<Vec<(i64, bool)>, Error> {
    let running: Vec<i64> = ctx
        .conn
        .prepare_cached("SELECT id FROM campaigns WHERE state = 'running' LIMIT 2")?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    if running.len() < 2 {
        return Ok(running.into_iter().map(|id| (id, false)).collect());
    }
    Ok(ctx
        .conn
        .prepare_cached(
            "SELECT c.id, EXISTS (SELECT 1 FROM campaigns p WHERE p.id = c.after_campaign
                                    AND p.state IN ('running', 'paused')) AS waiting
             FROM campaigns c WHERE c.state = 'running'
             ORDER BY waiting, CASE WHEN waiting THEN c.id ELSE 0 END,
                      (SELECT count(*) FROM leases l WHERE l.campaign_id = c.id AND l.state = 'active'),
                      c.last_lease_id, c.id",
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?)
}

/// What a grant tells the worker about a campaign.
pub struct GrantInfo {
    /// Problem name.
    pub problem: String,
    /// Parameters (JSON text).
    pub params_json: String,
    /// The pruning bound.
    pub bound: Option<i64>,
    /// The solver version it runs with.
    pub solver_version: u32,
}

/// What a grant tells the worker about a campaign.
pub fn grant_info(ctx: &Ctx, campaign_id: i64) -> Result<GrantInfo, Error> {
    Ok(ctx
        .conn
        .prepare_cached(
            "SELECT problem, params_json, bound, solver_version FROM campaigns WHERE id = ?1",
        )?
        .query_row(params![campaign_id], |r| {
            Ok(GrantInfo {
                problem: r.get(0)?,
                params_json: r.get(1)?,
                bound: r.get(2)?,
                solver_version: r.get(3)?,
            })
        })?)
}

/// Notes the campaign's latest lease (campaigns are served least recently served first).
pub fn note_served(ctx: &Ctx, campaign_id: i64, lease_id: i64) -> Result<(), Error> {
    ctx.conn
        .prepare_cached("UPDATE campaigns SET last_lease_id = ?2 WHERE id = ?1")?
        .execute(params![campaign_id, lease_id])?;
    Ok(())
}

/// A campaign's pruning bound.
pub fn bound(ctx: &Ctx, campaign_id: i64) -> Result<Option<i64>, Error> {
    Ok(ctx
        .conn
        .prepare_cached("SELECT bound FROM campaigns WHERE id = ?1")?
        .query_row(params![campaign_id], |r| r.get(0))?)
}

/// Adds a result's (or a released lease's) resource use to the campaign's totals.
pub fn add_usage(ctx: &Ctx, campaign_id: i64, usage: Usage) -> Result<(), Error> {
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
pub fn add_samples(ctx: &Ctx, campaign_id: i64, added: i64) -> Result<(), Error> {
    ctx.conn
        .prepare_cached("UPDATE campaigns SET samples = samples + ?2 WHERE id = ?1")?
        .execute(params![campaign_id, added])?;
    Ok(())
}

/// Folds a finished unit's accepted value into its campaign: a count campaign adds it to
/// its total; other objectives keep their values on the units.
pub fn fold_unit_value(ctx: &Ctx, campaign_id: i64, value: &str) -> Result<(), Error> {
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

/// What settling a unit needs to know of its campaign.
#[derive(Clone, Debug)]
pub struct SettleInfo {
    /// `count`, `max`, `min` or `sample`.
    pub objective: String,
    /// Whether its search is exhaustive.
    pub exhaustive: bool,
    /// The pruning bound as the coordinator knows it.
    pub bound: Option<i64>,
    /// The seed of the replication draw.
    pub seed: i64,
    /// The replication rate.
    pub verify_rate: f64,
    /// Failed attempts before a unit fails.
    pub max_attempts: i64,
}

/// What settling a unit needs to know of its campaign.
pub fn settle_info(ctx: &Ctx, campaign_id: i64) -> Result<SettleInfo, Error> {
    Ok(ctx
        .conn
        .prepare_cached(
            "SELECT objective, exhaustive, bound, seed, verify_rate, max_attempts
             FROM campaigns WHERE id = ?1",
        )?
        .query_row(params![campaign_id], |r| {
            Ok(SettleInfo {
                objective: r.get(0)?,
                exhaustive: r.get(1)?,
                bound: r.get(2)?,
                seed: r.get(3)?,
                verify_rate: r.get(4)?,
                max_attempts: r.get(5)?,
            })
        })?)
}

/// A campaign's objective and best score.
pub fn objective_and_best(ctx: &Ctx, campaign_id: i64) -> Result<(String, Option<i64>), Error> {
    Ok(ctx
        .conn
        .prepare_cached("SELECT objective, best_score FROM campaigns WHERE id = ?1")?
        .query_row(params![campaign_id], |r| Ok((r.get(0)?, r.get(1)?)))?)
}

/// Makes a solution the campaign's incumbent (recorded by event `event_id`). The pruning
/// bound only ever tightens: an initial bound better than this solution stays.
pub fn set_incumbent(
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

/// The pruning bounds of every running campaign that has one.
pub fn running_bounds(conn: &Connection) -> Result<Vec<pb::CampaignBound>, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT id, bound FROM campaigns WHERE state = 'running' AND bound IS NOT NULL ORDER BY id",
        )?
        .query_map([], |r| {
            Ok(pb::CampaignBound {
                campaign_id: r.get(0)?,
                bound: r.get(1)?,
            })
        })?
        .collect::<Result<_, _>>()?)
}

/// Raises the solver version a campaign continues with (see [`crate::upgrade`]).
pub fn set_solver_version(ctx: &Ctx, campaign_id: i64, version: u32) -> Result<(), Error> {
    ctx.conn
        .prepare_cached("UPDATE campaigns SET solver_version = ?2 WHERE id = ?1")?
        .execute(params![campaign_id, version])?;
    Ok(())
}

/// The campaigns of `problem` (other than `except`) that may be a predecessor: running,
/// paused or done, the done ones first, newest first: (id, parameters, state).
pub fn predecessor_candidates(
    ctx: &Ctx,
    problem: &str,
    except: i64,
) -> Result<Vec<(i64, String, String)>, Error> {
    Ok(ctx
        .conn
        .prepare_cached(
            "SELECT id, params_json, state FROM campaigns
             WHERE problem = ?1 AND id != ?2 AND state IN ('running', 'paused', 'done')
             ORDER BY state = 'done' DESC, id DESC",
        )?
        .query_map(params![problem, except], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?
        .collect::<Result<_, _>>()?)
}

/// Links a campaign to the campaign whose result it builds on.
pub fn set_after(ctx: &Ctx, campaign_id: i64, after: i64) -> Result<(), Error> {
    ctx.conn
        .prepare_cached("UPDATE campaigns SET after_campaign = ?2 WHERE id = ?1")?
        .execute(params![campaign_id, after])?;
    Ok(())
}

/// The unfinished campaigns that build on `campaign_id` and have not taken its result yet.
pub fn waiting_on(ctx: &Ctx, campaign_id: i64) -> Result<Vec<i64>, Error> {
    Ok(ctx
        .conn
        .prepare_cached(
            "SELECT id FROM campaigns WHERE after_campaign = ?1 AND NOT inherited
               AND state IN ('running', 'paused') ORDER BY id",
        )?
        .query_map(params![campaign_id], |r| r.get(0))?
        .collect::<Result<_, _>>()?)
}

/// What a campaign left for its successors: its state, whether its finished search proves
/// its result (exhaustive, its split checked by grind, no claim held unchecked), its best
/// score and solution.
pub type Left = (String, bool, Option<i64>, Option<String>);

/// What a campaign left for its successors, if it exists.
pub fn left_by(ctx: &Ctx, campaign_id: i64) -> Result<Option<Left>, Error> {
    Ok(ctx
        .conn
        .prepare_cached(
            "SELECT state, exhaustive AND coverage_checked AND NOT EXISTS
                    (SELECT 1 FROM held_claims WHERE campaign_id = ?1), best_score, best_solution
             FROM campaigns WHERE id = ?1",
        )?
        .query_row(params![campaign_id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })
        .optional()?)
}

/// Notes that a campaign has taken its predecessor's result (it does so once).
pub fn note_inherited(ctx: &Ctx, campaign_id: i64) -> Result<(), Error> {
    ctx.conn
        .prepare_cached("UPDATE campaigns SET inherited = 1 WHERE id = ?1")?
        .execute(params![campaign_id])?;
    Ok(())
}

/// A campaign's state, objective, ceiling and best score.
pub fn ceiling_row(
    ctx: &Ctx,
    campaign_id: i64,
) -> Result<(String, String, Option<i64>, Option<i64>), Error> {
    Ok(ctx
        .conn
        .prepare_cached(
            "SELECT state, objective, ceiling, best_score FROM campaigns WHERE id = ?1",
        )?
        .query_row(params![campaign_id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })?)
}

/// Sets (or drops) the ceiling on a campaign's optimum that its predecessor's result gives.
pub fn set_ceiling(ctx: &Ctx, campaign_id: i64, ceiling: Option<i64>) -> Result<(), Error> {
    ctx.conn
        .prepare_cached("UPDATE campaigns SET ceiling = ?2 WHERE id = ?1")?
        .execute(params![campaign_id, ceiling])?;
    Ok(())
}

/// A value a campaign proved.
pub struct Proved {
    /// Its problem.
    pub problem: String,
    /// Its canonical parameters.
    pub params: Value,
    /// The proven optimum.
    pub value: i64,
}

/// What `campaign_id` proves: `Some` when it finished an exhaustive search over a split grind
/// checked with a value, no unit failed, no claim is held unchecked (its verifier failed on
/// it) and every premise of its own is backed.
pub fn proves(conn: &Connection, campaign_id: i64) -> Result<Option<Proved>, Error> {
    let row: Option<(String, String, Option<i64>)> = conn
        .prepare_cached(
            "SELECT problem, params_json, best_score FROM campaigns
             WHERE id = ?1 AND state = 'done' AND exhaustive AND coverage_checked
               AND NOT EXISTS (SELECT 1 FROM held_claims WHERE campaign_id = ?1)
               AND NOT EXISTS (SELECT 1 FROM units WHERE campaign_id = ?1 AND state = 'failed')
               AND NOT EXISTS (SELECT 1 FROM premises WHERE campaign_id = ?1
                               AND backed_by IS NULL AND backed_by_record IS NULL)",
        )?
        .query_row(params![campaign_id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .optional()?;
    let Some((problem, params_json, Some(value))) = row else {
        return Ok(None);
    };
    let params = serde_json::from_str(&params_json)
        .map_err(|e| Error::Internal(format!("campaign {campaign_id}: stored parameters: {e}")))?;
    Ok(Some(Proved {
        problem,
        params,
        value,
    }))
}

/// The finished exhaustive campaigns of `problem` with a best value, oldest first: the
/// candidates for proving a premise about it.
pub fn proving_candidates(conn: &Connection, problem: &str) -> Result<Vec<i64>, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT id FROM campaigns WHERE problem = ?1 AND state = 'done' AND exhaustive
               AND coverage_checked AND best_score IS NOT NULL ORDER BY id",
        )?
        .query_map(params![problem], |r| r.get(0))?
        .collect::<Result<_, _>>()?)
}

/// A campaign's best verified score.
pub fn best_score(conn: &Connection, campaign_id: i64) -> Result<Option<i64>, Error> {
    Ok(conn
        .prepare_cached("SELECT best_score FROM campaigns WHERE id = ?1")?
        .query_row(params![campaign_id], |r| r.get(0))?)
}
