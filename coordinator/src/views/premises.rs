//! The results a campaign's proof takes as given (its premises), read from the store and
//! rendered as JSON and words.

use grind_proto::v1 as pb;
use rusqlite::{params, Connection};
use serde_json::json;

use crate::error::Error;

/// The results a campaign's proof takes as given, in order, with what backs each.
pub fn premises(conn: &Connection, campaign_id: i64) -> Result<Vec<pb::Premise>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT label, problem, params_json, value, coalesce(backed_by, 0),
                coalesce(contradicted_by, 0), coalesce(backed_by_record, 0)
         FROM premises WHERE campaign_id = ?1 ORDER BY position",
    )?;
    let rows = stmt.query_map(params![campaign_id], |r| {
        Ok(pb::Premise {
            label: r.get(0)?,
            problem: r.get(1)?,
            params_json: r.get(2)?,
            value: r.get(3)?,
            backed_by: r.get(4)?,
            contradicted_by: r.get(5)?,
            backed_by_record: r.get(6)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The premises as JSON: label, value, and the campaign that backs or contradicts each.
pub fn premises_json(premises: &[pb::Premise]) -> serde_json::Value {
    premises
        .iter()
        .map(|p| {
            json!({
                "label": p.label,
                "problem": p.problem,
                "params": serde_json::from_str::<serde_json::Value>(&p.params_json)
                    .unwrap_or_default(),
                "value": p.value,
                "backed_by": (p.backed_by > 0).then_some(p.backed_by),
                "contradicted_by": (p.contradicted_by > 0).then_some(p.contradicted_by),
                "backed_by_record": (p.backed_by_record > 0).then_some(p.backed_by_record),
            })
        })
        .collect()
}

/// The premises in words, e.g. `f(2) = 1 (campaign 3), f(3) = 2 (not backed)`; empty when
/// the proof takes nothing as given.
pub fn premises_words(premises: &[pb::Premise]) -> String {
    premises
        .iter()
        .map(|p| {
            let backing = match (p.backed_by, p.backed_by_record, p.contradicted_by) {
                (0, 0, 0) => "not backed".to_string(),
                (0, 0, by) => format!("contradicted by campaign {by}"),
                (0, record, _) => format!("proof record {record}"),
                (by, _, _) => format!("campaign {by}"),
            };
            format!("{} = {} ({backing})", p.label, p.value)
        })
        .collect::<Vec<_>>()
        .join(", ")
}
