//! Proof chains: the results a campaign's proof takes as given ([`Premise`]: values its
//! parameters state, such as Topswops `--known` f(m)) and the finished, proven campaign of
//! this database (or an imported proof record) that backs each. Premises and proof
//! records are stored by [`crate::scheduler::tables::premises`].
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
use rusqlite::Connection;
use serde_json::{json, Value};

use crate::error::Error;
use crate::scheduler::tables::campaigns::{self, Proved};
use crate::scheduler::tables::events::{self, campaign_event};
use crate::scheduler::tables::premises::{self, Backing};
use crate::scheduler::Ctx;

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
pub fn record(ctx: &Ctx, campaign_id: i64, stated: &[Premise]) -> Result<(), Error> {
    for premise in stated {
        match standing(ctx.conn, premise)? {
            Standing::Contradicted(by, proved) => {
                return Err(Error::InvalidArgument(format!(
                    "the parameters state {} = {}, but campaign {by} proved {} = {proved}",
                    premise.label, premise.value, premise.label
                )))
            }
            found => insert(ctx, campaign_id, premise, found)?,
        }
    }
    Ok(())
}

/// Adds one premise to an existing campaign (a ceiling taken from its predecessor), backed
/// at once when a proving campaign or record proves its value. Returns false, recording
/// nothing, when a proving campaign contradicts it.
pub fn add(ctx: &Ctx, campaign_id: i64, premise: &Premise) -> Result<bool, Error> {
    match standing(ctx.conn, premise)? {
        Standing::Contradicted(..) => Ok(false),
        found => insert(ctx, campaign_id, premise, found).map(|()| true),
    }
}

/// Stores a premise with what backs it now.
fn insert(ctx: &Ctx, campaign_id: i64, premise: &Premise, found: Standing) -> Result<(), Error> {
    let (by, by_record) = match found {
        Standing::Backed(by) => (Some(by), None),
        Standing::BackedByRecord(record) => (None, Some(record)),
        Standing::Contradicted(..) | Standing::Open => (None, None),
    };
    premises::insert(ctx, campaign_id, premise, by, by_record)
}

/// After `campaign_id` finished: backs (or marks contradicted) every open premise it
/// proves, and follows the chain to the campaigns that thereby became proving themselves.
pub fn back_dependents(ctx: &Ctx, campaign_id: i64) -> Result<(), Error> {
    let Some(proved) = campaigns::proves(ctx.conn, campaign_id)? else {
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
        for (dependent, position, premise) in premises::open_about(ctx.conn, &proved.problem)? {
            if matches!(backer, Backer::Campaign(id) if id == dependent)
                || !premise.is_about(&proved.problem, &proved.params)
            {
                continue;
            }
            let backs = premise.value == proved.value;
            let (backing, detail) = match (backer, backs) {
                (Backer::Campaign(id), true) => (Backing::Campaign(id), json!({"campaign": id})),
                (Backer::Campaign(id), false) => {
                    (Backing::Contradicted(id), json!({"campaign": id}))
                }
                (Backer::Record(id), true) => (Backing::Record(id), json!({"proof_record": id})),
                // A record never marks a premise contradicted: it is not this database's proof.
                (Backer::Record(_), false) => continue,
            };
            premises::set_backing(ctx, dependent, position, backing)?;
            campaign_event(
                ctx,
                dependent,
                if backs {
                    "premise_backed"
                } else {
                    "premise_contradicted"
                },
                json!({"premise": premise.label, "stated": premise.value,
                       "by": detail, "proved": proved.value}),
            )?;
            if backs {
                if let Some(next) = campaigns::proves(ctx.conn, dependent)? {
                    newly_proving.push((Backer::Campaign(dependent), next));
                }
            }
        }
    }
    ctx.page_changed();
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
    let id = premises::insert_record(ctx, problem, &canonical, value, record, source)?;
    events::append(
        ctx,
        "proof_record_imported",
        Default::default(),
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

/// How the proving campaigns of the database stand on `premise` (the oldest decides), else
/// the imported proof records.
fn standing(conn: &Connection, premise: &Premise) -> Result<Standing, Error> {
    let mut contradicted = None;
    for id in campaigns::proving_candidates(conn, &premise.problem)? {
        let Some(proved) = campaigns::proves(conn, id)? else {
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
    for (id, params, value) in premises::records_about(conn, &premise.problem)? {
        if value == premise.value && premise.is_about(&premise.problem, &params) {
            return Ok(Standing::BackedByRecord(id));
        }
    }
    Ok(Standing::Open)
}
