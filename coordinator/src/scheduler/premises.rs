//! Proof chains: the results a campaign's proof takes as given ([`Premise`]: values its
//! parameters state, such as Topswops `--known` f(m)) and the finished, proven campaign of
//! this database that backs each. The only writer of the `premises` table.
//!
//! A campaign *proves* a value when it finished (`done`), its search is exhaustive, it has a
//! best value and every one of its own premises is backed. A premise is backed by such a
//! campaign whose parameters it is about and whose value equals the stated one; one that
//! proved a different value contradicts it. Premises are recorded and backed when their
//! campaign is created, and backed later when a proving campaign finishes (following the
//! chain: a campaign whose last premise gets backed may in turn back others).

use grind_shared::premise::Premise;
use rusqlite::{params, Connection, OptionalExtension};
use serde_json::{json, Value};

use super::events::event;
use super::Ctx;
use crate::error::Error;

/// What the database says about a premise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Standing {
    /// A proving campaign proved exactly the stated value.
    Backed(i64),
    /// A proving campaign proved another value.
    Contradicted(i64, i64),
    /// No campaign proves anything about it (yet).
    Open,
}

/// Records a new campaign's premises and backs each with a proving campaign if one exists.
/// A premise that a proving campaign contradicts is refused (the campaign is not created).
pub(crate) fn record(ctx: &Ctx, campaign_id: i64, premises: &[Premise]) -> Result<(), Error> {
    for (position, premise) in premises.iter().enumerate() {
        let backed_by = match standing(ctx.conn, premise)? {
            Standing::Backed(by) => Some(by),
            Standing::Contradicted(by, proved) => {
                return Err(Error::InvalidArgument(format!(
                    "the parameters state {} = {}, but campaign {by} proved {} = {proved}",
                    premise.label, premise.value, premise.label
                )))
            }
            Standing::Open => None,
        };
        ctx.conn
            .prepare_cached(
                "INSERT INTO premises (campaign_id, position, label, problem, params_json, value,
                     backed_by)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?
            .execute(params![
                campaign_id,
                position as i64,
                premise.label,
                premise.problem,
                premise.params.to_string(),
                premise.value,
                backed_by
            ])?;
    }
    Ok(())
}

/// After `campaign_id` finished: backs (or marks contradicted) every open premise it
/// proves, and follows the chain to the campaigns that thereby became proving themselves.
pub(crate) fn back_dependents(ctx: &Ctx, campaign_id: i64) -> Result<(), Error> {
    let mut newly_proving = vec![campaign_id];
    while let Some(prover) = newly_proving.pop() {
        let Some(proved) = proves(ctx.conn, prover)? else {
            continue;
        };
        for (dependent, position, premise) in open_premises(ctx.conn, &proved.problem)? {
            if dependent == prover || !premise.is_about(&proved.problem, &proved.params) {
                continue;
            }
            let backs = premise.value == proved.value;
            let sql = if backs {
                "UPDATE premises SET backed_by = ?3 WHERE campaign_id = ?1 AND position = ?2"
            } else {
                "UPDATE premises SET contradicted_by = ?3 WHERE campaign_id = ?1 AND position = ?2"
            };
            ctx.conn
                .prepare_cached(sql)?
                .execute(params![dependent, position, prover])?;
            event(
                ctx.conn,
                ctx.now,
                if backs {
                    "premise_backed"
                } else {
                    "premise_contradicted"
                },
                Some(dependent),
                None,
                None,
                None,
                json!({"premise": premise.label, "stated": premise.value,
                       "campaign": prover, "proved": proved.value}),
            )?;
            if backs && proves(ctx.conn, dependent)?.is_some() {
                newly_proving.push(dependent);
            }
        }
    }
    Ok(())
}

/// A value a campaign proved.
struct Proved {
    problem: String,
    params: Value,
    value: i64,
}

/// What `campaign_id` proves: `Some` when it finished an exhaustive search with a value and
/// every premise of its own is backed.
fn proves(conn: &Connection, campaign_id: i64) -> Result<Option<Proved>, Error> {
    let row: Option<(String, String, Option<i64>)> = conn
        .prepare_cached(
            "SELECT problem, params_json, best_score FROM campaigns
             WHERE id = ?1 AND state = 'done' AND exhaustive
               AND NOT EXISTS (SELECT 1 FROM units WHERE campaign_id = ?1 AND state = 'failed')
               AND NOT EXISTS (SELECT 1 FROM premises WHERE campaign_id = ?1 AND backed_by IS NULL)",
        )?
        .query_row(params![campaign_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
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

/// How the proving campaigns of the database stand on `premise` (the oldest decides).
fn standing(conn: &Connection, premise: &Premise) -> Result<Standing, Error> {
    let candidates: Vec<i64> = conn
        .prepare_cached(
            "SELECT id FROM campaigns WHERE problem = ?1 AND state = 'done' AND exhaustive
               AND best_score IS NOT NULL ORDER BY id",
        )?
        .query_map(params![premise.problem], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    let mut contradicted = None;
    for id in candidates {
        let Some(proved) = proves(conn, id)? else {
            continue;
        };
        if !premise.is_about(&proved.problem, &proved.params) {
            continue;
        }
        if proved.value == premise.value {
            return Ok(Standing::Backed(id));
        }
        contradicted.get_or_insert(Standing::Contradicted(id, proved.value));
    }
    Ok(contradicted.unwrap_or(Standing::Open))
}

/// The premises nothing backs yet about `problem`: (campaign, position, premise).
fn open_premises(conn: &Connection, problem: &str) -> Result<Vec<(i64, i64, Premise)>, Error> {
    let rows: Vec<(i64, i64, String, String, i64)> = conn
        .prepare_cached(
            "SELECT campaign_id, position, label, params_json, value FROM premises
             WHERE problem = ?1 AND backed_by IS NULL ORDER BY campaign_id, position",
        )?
        .query_map(params![problem], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })?
        .collect::<Result<_, _>>()?;
    rows.into_iter()
        .map(|(campaign, position, label, params_json, value)| {
            let params = serde_json::from_str(&params_json).map_err(|e| {
                Error::Internal(format!("campaign {campaign}: stored premise: {e}"))
            })?;
            Ok((
                campaign,
                position,
                Premise {
                    label,
                    problem: problem.to_string(),
                    params,
                    value,
                },
            ))
        })
        .collect()
}
