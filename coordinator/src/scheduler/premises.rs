//! Proof chains: the results a campaign's proof takes as given ([`Premise`]: values its
//! parameters state, such as Topswops `--known` f(m)) and the finished, proven campaign of
//! this database (or an imported proof record) that backs each. The only writer of the
//! `premises` and `proof_records` tables.
//!
//! A campaign *proves* a value when it finished (`done`), its search is exhaustive, it has a
//! best value and every one of its own premises is backed. A premise is backed by such a
//! campaign whose parameters it is about and whose value equals the stated one; one that
//! proved a different value contradicts it. Premises are recorded and backed when their
//! campaign is created, and backed later when a proving campaign finishes (following the
//! chain: a campaign whose last premise gets backed may in turn back others).
//!
//! A proof record is another grind database's export provenance record of a proven optimum
//! (`grind proof import`): kept whole (who computed it, with which versions), its solution
//! re-scored here; it backs premises like a proving campaign, on that record's word for the
//! optimality.

use grind_shared::premise::Premise;
use grind_shared::registry;
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
    /// An imported proof record states exactly the value.
    BackedByRecord(i64),
    /// A proving campaign proved another value.
    Contradicted(i64, i64),
    /// No campaign proves anything about it (yet).
    Open,
}

/// Records a new campaign's premises and backs each with a proving campaign if one exists.
/// A premise that a proving campaign contradicts is refused (the campaign is not created).
pub(crate) fn record(ctx: &Ctx, campaign_id: i64, premises: &[Premise]) -> Result<(), Error> {
    for premise in premises {
        match backing(ctx.conn, premise)? {
            Ok(backing) => insert(ctx, campaign_id, premise, backing)?,
            Err((by, proved)) => {
                return Err(Error::InvalidArgument(format!(
                    "the parameters state {} = {}, but campaign {by} proved {} = {proved}",
                    premise.label, premise.value, premise.label
                )))
            }
        }
    }
    Ok(())
}

/// Adds one premise to an existing campaign (a ceiling taken from its predecessor), backed
/// at once when a proving campaign or record proves its value. Returns false, recording
/// nothing, when a proving campaign contradicts it.
pub(crate) fn add(ctx: &Ctx, campaign_id: i64, premise: &Premise) -> Result<bool, Error> {
    match backing(ctx.conn, premise)? {
        Ok(b) => insert(ctx, campaign_id, premise, b).map(|()| true),
        Err(_) => Ok(false),
    }
}

/// A premise's backing as stored (proving campaign, proof record; both `None` while open),
/// or the campaign that contradicts it and the value that campaign proved.
type Backing = Result<(Option<i64>, Option<i64>), (i64, i64)>;

/// What backs `premise` now ([`Backing`]).
fn backing(conn: &Connection, premise: &Premise) -> Result<Backing, Error> {
    Ok(match standing(conn, premise)? {
        Standing::Backed(by) => Ok((Some(by), None)),
        Standing::BackedByRecord(record) => Ok((None, Some(record))),
        Standing::Contradicted(by, proved) => Err((by, proved)),
        Standing::Open => Ok((None, None)),
    })
}

/// Appends `premise` to the campaign's premises (next position) with its backing.
fn insert(
    ctx: &Ctx,
    campaign_id: i64,
    premise: &Premise,
    (backed_by, backed_by_record): (Option<i64>, Option<i64>),
) -> Result<(), Error> {
    ctx.conn
        .prepare_cached(
            "INSERT INTO premises (campaign_id, position, label, problem, params_json, value,
                 backed_by, backed_by_record)
             SELECT ?1, coalesce(max(position) + 1, 0), ?2, ?3, ?4, ?5, ?6, ?7
             FROM premises WHERE campaign_id = ?1",
        )?
        .execute(params![
            campaign_id,
            premise.label,
            premise.problem,
            premise.params.to_string(),
            premise.value,
            backed_by,
            backed_by_record
        ])?;
    Ok(())
}

/// After `campaign_id` finished: backs (or marks contradicted) every open premise it
/// proves, and follows the chain to the campaigns that thereby became proving themselves.
pub(crate) fn back_dependents(ctx: &Ctx, campaign_id: i64) -> Result<(), Error> {
    let Some(proved) = proves(ctx.conn, campaign_id)? else {
        return Ok(());
    };
    back_chain(ctx, Backer::Campaign(campaign_id), proved)
}

/// Who backs a premise.
#[derive(Clone, Copy, Debug)]
enum Backer {
    Campaign(i64),
    Record(i64),
}

/// Backs the open premises `proved` is about (contradicting those with another value), then
/// does the same for every campaign that thereby became proving.
fn back_chain(ctx: &Ctx, first: Backer, proved: Proved) -> Result<(), Error> {
    let mut newly_proving = vec![(first, proved)];
    while let Some((backer, proved)) = newly_proving.pop() {
        for (dependent, position, premise) in open_premises(ctx.conn, &proved.problem)? {
            if matches!(backer, Backer::Campaign(id) if id == dependent)
                || !premise.is_about(&proved.problem, &proved.params)
            {
                continue;
            }
            let backs = premise.value == proved.value;
            let (sql, by, detail) = match (backer, backs) {
                (Backer::Campaign(id), true) => (
                    "UPDATE premises SET backed_by = ?3 WHERE campaign_id = ?1 AND position = ?2",
                    id,
                    json!({"campaign": id}),
                ),
                (Backer::Campaign(id), false) => (
                    "UPDATE premises SET contradicted_by = ?3 WHERE campaign_id = ?1 AND position = ?2",
                    id,
                    json!({"campaign": id}),
                ),
                (Backer::Record(id), true) => (
                    "UPDATE premises SET backed_by_record = ?3 WHERE campaign_id = ?1 AND position = ?2",
                    id,
                    json!({"proof_record": id}),
                ),
                // A record never marks a premise contradicted: it is not this database's proof.
                (Backer::Record(_), false) => continue,
            };
            ctx.conn
                .prepare_cached(sql)?
                .execute(params![dependent, position, by])?;
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
                       "by": detail, "proved": proved.value}),
            )?;
            if backs {
                if let Some(next) = proves(ctx.conn, dependent)? {
                    newly_proving.push((Backer::Campaign(dependent), next));
                }
            }
        }
    }
    Ok(())
}

/// Imports another grind database's export provenance record of a proven optimum (kept
/// whole, with `source` naming where it came from) and backs the open premises it states.
/// Refused unless it says `proven_optimum`, rests on nothing unbacked, names a registered
/// problem with valid parameters, and its solution re-scores to its value here.
pub fn import_record(ctx: &Ctx, record: &Value, source: &str) -> Result<i64, Error> {
    let refuse = |why: &str| Error::InvalidArgument(format!("proof record refused: {why}"));
    if record["outcome"] != "proven_optimum" || record["proven"] != true {
        return Err(refuse(
            "it does not state a proven optimum (outcome proven_optimum)",
        ));
    }
    let unbacked = record["rests_on"].as_array().is_some_and(|premises| {
        premises
            .iter()
            .any(|p| p["backed_by"].is_null() && p["backed_by_record"].is_null())
    });
    if unbacked {
        return Err(refuse("it rests on a premise its database did not back"));
    }
    let problem = record["problem"]
        .as_str()
        .ok_or_else(|| refuse("no problem named"))?;
    let entry = registry::lookup(problem)?;
    let (canonical, instance) = entry.build(&record["params"])?;
    let value: i64 = record["value"]
        .as_str()
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| refuse("no integer value"))?;
    let solution = record
        .get("solution")
        .filter(|s| !s.is_null())
        .ok_or_else(|| refuse("no solution to re-score"))?;
    let score = instance.score(solution)?;
    if score != value {
        return Err(refuse(&format!(
            "its solution scores {score} here, not its stated {value}"
        )));
    }
    ctx.conn
        .prepare_cached(
            "INSERT INTO proof_records (problem, params_json, value, record_json, source,
                 imported_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?
        .execute(params![
            problem,
            canonical.to_string(),
            value,
            record.to_string(),
            source,
            ctx.now
        ])?;
    let id = ctx.conn.last_insert_rowid();
    event(
        ctx.conn,
        ctx.now,
        "proof_record_imported",
        None,
        None,
        None,
        None,
        json!({"record": id, "problem": problem, "params": canonical, "value": value,
               "source": source}),
    )?;
    let proved = Proved {
        problem: problem.to_string(),
        params: canonical,
        value,
    };
    back_chain(ctx, Backer::Record(id), proved)?;
    Ok(id)
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
    if let Some(found) = contradicted {
        return Ok(found);
    }
    let records: Vec<(i64, String, i64)> = conn
        .prepare_cached(
            "SELECT id, params_json, value FROM proof_records WHERE problem = ?1 ORDER BY id",
        )?
        .query_map(params![premise.problem], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?
        .collect::<Result<_, _>>()?;
    for (id, params_json, value) in records {
        let params: Value = serde_json::from_str(&params_json)
            .map_err(|e| Error::Internal(format!("proof record {id}: stored parameters: {e}")))?;
        if value == premise.value && premise.is_about(&premise.problem, &params) {
            return Ok(Standing::BackedByRecord(id));
        }
    }
    Ok(Standing::Open)
}

/// The premises nothing backs yet about `problem`: (campaign, position, premise).
fn open_premises(conn: &Connection, problem: &str) -> Result<Vec<(i64, i64, Premise)>, Error> {
    let rows: Vec<(i64, i64, String, String, i64)> = conn
        .prepare_cached(
            "SELECT campaign_id, position, label, params_json, value FROM premises
             WHERE problem = ?1 AND backed_by IS NULL AND backed_by_record IS NULL
             ORDER BY campaign_id, position",
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
