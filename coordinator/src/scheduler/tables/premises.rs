//! The `premises` and `proof_records` tables: the values a campaign's proof takes as given,
//! with what backs each (a proving campaign, an imported proof record) or contradicts it,
//! and the imported proof records themselves. The only writer of both tables; calls no
//! other table module. The proof chain itself is [`crate::scheduler::flows::proof`].

use grind_shared::premise::Premise;
use rusqlite::{params, Connection};
use serde_json::Value;

use crate::error::Error;
use crate::scheduler::Ctx;

/// Appends `premise` to the campaign's premises (next position), backed by a proving
/// campaign or a proof record (both `None` while open).
pub fn insert(
    ctx: &Ctx,
    campaign_id: i64,
    premise: &Premise,
    backed_by: Option<i64>,
    backed_by_record: Option<i64>,
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

/// How a premise stands after a proof about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backing {
    /// Backed by a proving campaign.
    Campaign(i64),
    /// Contradicted by a proving campaign.
    Contradicted(i64),
    /// Backed by an imported proof record.
    Record(i64),
}

/// Records what backs (or contradicts) the premise at `position` of `campaign_id`.
pub fn set_backing(
    ctx: &Ctx,
    campaign_id: i64,
    position: i64,
    backing: Backing,
) -> Result<(), Error> {
    let (sql, by) = match backing {
        Backing::Campaign(id) => (
            "UPDATE premises SET backed_by = ?3 WHERE campaign_id = ?1 AND position = ?2",
            id,
        ),
        Backing::Contradicted(id) => (
            "UPDATE premises SET contradicted_by = ?3 WHERE campaign_id = ?1 AND position = ?2",
            id,
        ),
        Backing::Record(id) => (
            "UPDATE premises SET backed_by_record = ?3 WHERE campaign_id = ?1 AND position = ?2",
            id,
        ),
    };
    ctx.conn
        .prepare_cached(sql)?
        .execute(params![campaign_id, position, by])?;
    Ok(())
}

/// The premises nothing backs yet about `problem`: (campaign, position, premise).
pub fn open_about(conn: &Connection, problem: &str) -> Result<Vec<(i64, i64, Premise)>, Error> {
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

/// Stores an imported proof record; returns its id.
pub fn insert_record(
    ctx: &Ctx,
    problem: &str,
    params: &Value,
    value: i64,
    record: &Value,
    source: &str,
) -> Result<i64, Error> {
    ctx.conn
        .prepare_cached(
            "INSERT INTO proof_records (problem, params_json, value, record_json, source,
                 imported_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?
        .execute(params![
            problem,
            params.to_string(),
            value,
            record.to_string(),
            source,
            ctx.now
        ])?;
    Ok(ctx.conn.last_insert_rowid())
}

/// The proof records about `problem`, oldest first: (id, parameters, value).
pub fn records_about(conn: &Connection, problem: &str) -> Result<Vec<(i64, Value, i64)>, Error> {
    let rows: Vec<(i64, String, i64)> = conn
        .prepare_cached(
            "SELECT id, params_json, value FROM proof_records WHERE problem = ?1 ORDER BY id",
        )?
        .query_map(params![problem], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<Result<_, _>>()?;
    rows.into_iter()
        .map(|(id, params_json, value)| {
            let params = serde_json::from_str(&params_json).map_err(|e| {
                Error::Internal(format!("proof record {id}: stored parameters: {e}"))
            })?;
            Ok((id, params, value))
        })
        .collect()
}
