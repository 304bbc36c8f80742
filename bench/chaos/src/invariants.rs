//! The invariants checked at the end of a run, reading the database directly (read-only)
//! and comparing with the Admin API and the workers' event streams. Each check counts how
//! many individual facts it verified (a chaos run then requires a floor of facts per check:
//! [`crate::floors`]); every failure is a violation with a precise message.
//!
//! Store and event-log checks ([`check_store`]) hold for any grind database, honest or
//! not, and are also used by the hostile-worker suite; [`check_run`] adds what a chaos run
//! knows: the expected answers, the workers' acknowledged results and the process starts.

use grind_proto::v1 as pb;
use rusqlite::Connection;
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;

use crate::observe::Observer;
use crate::workload::{Expected, Tracked};

/// Outcome of the checks.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Verdict {
    /// Facts verified, per check.
    pub checks: BTreeMap<String, u64>,
    /// Everything found wrong.
    pub violations: Vec<String>,
}

impl Verdict {
    /// Records one verified fact of `check`, or a violation when `ok` is false.
    pub fn check(&mut self, check: &str, ok: bool, violation: impl FnOnce() -> String) {
        *self.checks.entry(check.to_string()).or_insert(0) += 1;
        if !ok {
            let text = violation();
            // Keep reports readable: at most 50 messages per check.
            let shown = self
                .violations
                .iter()
                .filter(|v| v.starts_with(&format!("[{check}]")))
                .count();
            if shown < 50 {
                self.violations.push(format!("[{check}] {text}"));
            }
        }
    }

    /// Total facts verified.
    pub fn total_checks(&self) -> u64 {
        self.checks.values().sum()
    }

    /// Whether nothing was found wrong.
    pub fn ok(&self) -> bool {
        self.violations.is_empty()
    }
}

struct Campaign {
    id: i64,
    objective: String,
    state: String,
    total: String,
    best_score: Option<i64>,
    best_event: Option<i64>,
}

struct Unit {
    id: i64,
    campaign_id: i64,
    state: String,
    value: Option<String>,
    lease_id: Option<i64>,
}

struct Lease {
    id: i64,
    unit_id: i64,
    campaign_id: i64,
    worker_id: i64,
    state: String,
    replica: bool,
}

struct ResultRow {
    id: i64,
    unit_id: i64,
    campaign_id: i64,
    lease_id: i64,
    worker_id: i64,
    value: String,
    status: String,
    replica: bool,
}

struct Event {
    id: i64,
    kind: String,
    campaign_id: Option<i64>,
    unit_id: Option<i64>,
    lease_id: Option<i64>,
    worker_id: Option<i64>,
    detail: Value,
}

/// Everything the checks read, loaded in one read transaction.
struct Store {
    campaigns: Vec<Campaign>,
    units: Vec<Unit>,
    leases: Vec<Lease>,
    results: Vec<ResultRow>,
    events: Vec<Event>,
    workers: i64,
}

fn load(conn: &mut Connection) -> rusqlite::Result<Store> {
    let tx = conn.transaction()?;
    let campaigns = tx
        .prepare("SELECT id, objective, state, total, best_score, best_event FROM campaigns")?
        .query_map([], |r| {
            Ok(Campaign {
                id: r.get(0)?,
                objective: r.get(1)?,
                state: r.get(2)?,
                total: r.get(3)?,
                best_score: r.get(4)?,
                best_event: r.get(5)?,
            })
        })?
        .collect::<Result<_, _>>()?;
    let units = tx
        .prepare("SELECT id, campaign_id, state, value, lease_id FROM units")?
        .query_map([], |r| {
            Ok(Unit {
                id: r.get(0)?,
                campaign_id: r.get(1)?,
                state: r.get(2)?,
                value: r.get(3)?,
                lease_id: r.get(4)?,
            })
        })?
        .collect::<Result<_, _>>()?;
    let leases = tx
        .prepare("SELECT id, unit_id, campaign_id, worker_id, state, replica FROM leases")?
        .query_map([], |r| {
            Ok(Lease {
                id: r.get(0)?,
                unit_id: r.get(1)?,
                campaign_id: r.get(2)?,
                worker_id: r.get(3)?,
                state: r.get(4)?,
                replica: r.get(5)?,
            })
        })?
        .collect::<Result<_, _>>()?;
    let results = tx
        .prepare(
            "SELECT id, unit_id, campaign_id, lease_id, worker_id, value, status, replica
             FROM results",
        )?
        .query_map([], |r| {
            Ok(ResultRow {
                id: r.get(0)?,
                unit_id: r.get(1)?,
                campaign_id: r.get(2)?,
                lease_id: r.get(3)?,
                worker_id: r.get(4)?,
                value: r.get(5)?,
                status: r.get(6)?,
                replica: r.get(7)?,
            })
        })?
        .collect::<Result<_, _>>()?;
    let events = tx
        .prepare(
            "SELECT id, kind, campaign_id, unit_id, lease_id, worker_id, detail FROM events
             ORDER BY id",
        )?
        .query_map([], |r| {
            let detail: String = r.get(6)?;
            Ok(Event {
                id: r.get(0)?,
                kind: r.get(1)?,
                campaign_id: r.get(2)?,
                unit_id: r.get(3)?,
                lease_id: r.get(4)?,
                worker_id: r.get(5)?,
                detail: serde_json::from_str(&detail).unwrap_or(Value::Null),
            })
        })?
        .collect::<Result<_, _>>()?;
    let workers = tx.query_row("SELECT count(*) FROM workers", [], |r| r.get(0))?;
    drop(tx);
    Ok(Store {
        campaigns,
        units,
        leases,
        results,
        events,
        workers,
    })
}

fn count_of<K: Ord + Copy>(items: impl Iterator<Item = K>) -> BTreeMap<K, u64> {
    let mut counts = BTreeMap::new();
    for key in items {
        *counts.entry(key).or_insert(0) += 1;
    }
    counts
}

/// What to expect of the store beyond its own consistency.
#[derive(Clone, Copy, Debug)]
pub struct StoreExpectations {
    /// Every worker was honest: no result may be rejected and no unit disputed.
    pub honest: bool,
}

/// Checks that the database is consistent with itself: SQLite integrity, the unit / lease /
/// result relations, counts done exactly once, and the event log agreeing with the tables.
pub fn check_store(conn: &mut Connection, expect: StoreExpectations, verdict: &mut Verdict) {
    integrity(conn, verdict);
    let store = match load(conn) {
        Ok(store) => store,
        Err(e) => {
            verdict.check("store_readable", false, || {
                format!("cannot read the store: {e}")
            });
            return;
        }
    };
    relations(&store, verdict);
    counted_once(&store, expect, verdict);
    optimisation(&store, verdict);
    events_agree(&store, verdict);
}

fn integrity(conn: &Connection, verdict: &mut Verdict) {
    let integrity: Vec<String> = conn
        .prepare("PRAGMA integrity_check")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .unwrap_or_else(|e| vec![e.to_string()]);
    verdict.check("sqlite_integrity", integrity == ["ok"], || {
        format!("integrity_check: {integrity:?}")
    });
    let broken: Vec<String> = conn
        .prepare("PRAGMA foreign_key_check")
        .and_then(|mut s| {
            s.query_map([], |r| {
                Ok(format!(
                    "{} row {:?} -> {}",
                    r.get::<_, String>(0)?,
                    r.get::<_, Option<i64>>(1)?,
                    r.get::<_, String>(2)?
                ))
            })?
            .collect()
        })
        .unwrap_or_else(|e| vec![e.to_string()]);
    verdict.check("sqlite_integrity", broken.is_empty(), || {
        format!("foreign keys broken: {broken:?}")
    });
}

fn relations(store: &Store, verdict: &mut Verdict) {
    let leases: HashMap<i64, &Lease> = store.leases.iter().map(|l| (l.id, l)).collect();
    let units: HashMap<i64, &Unit> = store.units.iter().map(|u| (u.id, u)).collect();
    for unit in &store.units {
        let holder = unit.lease_id.and_then(|id| leases.get(&id));
        let ok = match unit.state.as_str() {
            "leased" => holder.is_some_and(|l| l.state == "active" && l.unit_id == unit.id),
            _ => unit.lease_id.is_none(),
        };
        verdict.check("unit_lease_link", ok, || {
            format!(
                "unit {} is {} with lease {:?} ({:?})",
                unit.id,
                unit.state,
                unit.lease_id,
                holder.map(|l| l.state.as_str())
            )
        });
    }
    for lease in &store.leases {
        let unit = units.get(&lease.unit_id);
        verdict.check(
            "lease_unit_link",
            unit.is_some_and(|u| u.campaign_id == lease.campaign_id),
            || {
                format!(
                    "lease {} names unit {} of another campaign",
                    lease.id, lease.unit_id
                )
            },
        );
        if lease.state == "active" {
            verdict.check(
                "lease_unit_link",
                unit.is_some_and(|u| u.lease_id == Some(lease.id) && u.state == "leased"),
                || {
                    format!(
                        "active lease {} does not hold its unit {}",
                        lease.id, lease.unit_id
                    )
                },
            );
        }
    }
    let per_lease = count_of(store.results.iter().map(|r| r.lease_id));
    for result in &store.results {
        verdict.check(
            "one_result_per_lease",
            per_lease[&result.lease_id] == 1,
            || {
                format!(
                    "lease {} has {} results",
                    result.lease_id, per_lease[&result.lease_id]
                )
            },
        );
        let lease = leases.get(&result.lease_id);
        let ok = lease.is_some_and(|l| {
            l.worker_id == result.worker_id
                && l.unit_id == result.unit_id
                && l.campaign_id == result.campaign_id
                && l.replica == result.replica
        });
        verdict.check("result_matches_lease", ok, || {
            format!(
                "result {} (worker {}, unit {}) does not match its lease {}",
                result.id, result.worker_id, result.unit_id, result.lease_id
            )
        });
        verdict.check(
            "result_lease_state",
            lease.is_some_and(|l| l.state == "completed"),
            || {
                format!(
                    "result {} came from lease {} which is {:?}",
                    result.id,
                    result.lease_id,
                    lease.map(|l| l.state.as_str())
                )
            },
        );
    }
}

fn counted_once(store: &Store, expect: StoreExpectations, verdict: &mut Verdict) {
    let mut by_unit: HashMap<i64, Vec<&ResultRow>> = HashMap::new();
    for result in &store.results {
        by_unit.entry(result.unit_id).or_default().push(result);
    }
    let replica_wanted: BTreeSet<i64> = store
        .events
        .iter()
        .filter(|e| e.kind == "replica_wanted")
        .filter_map(|e| e.unit_id)
        .collect();
    let counts: BTreeSet<i64> = store
        .campaigns
        .iter()
        .filter(|c| c.objective == "count")
        .map(|c| c.id)
        .collect();
    let mut sums: HashMap<i64, u128> = HashMap::new();
    for unit in &store.units {
        let results = by_unit.get(&unit.id).map(Vec::as_slice).unwrap_or(&[]);
        let accepted: Vec<&&ResultRow> =
            results.iter().filter(|r| r.status == "accepted").collect();
        if expect.honest {
            verdict.check(
                "no_rejected_results",
                results.iter().all(|r| r.status != "rejected"),
                || {
                    format!(
                        "unit {} has rejected results from an honest cluster",
                        unit.id
                    )
                },
            );
        }
        if unit.state != "done" {
            verdict.check("accepted_only_when_done", accepted.is_empty(), || {
                format!(
                    "unit {} is {} but has accepted results",
                    unit.id, unit.state
                )
            });
            continue;
        }
        verdict.check(
            "no_awaiting_on_done",
            results.iter().all(|r| r.status != "awaiting"),
            || format!("done unit {} still has results awaiting", unit.id),
        );
        let value = unit.value.clone().unwrap_or_default();
        // Two runs of a search unit may find different bests (each prunes with the bound it
        // was given); the unit keeps the better one. Count runs must agree.
        let is_count = counts.contains(&unit.campaign_id);
        verdict.check(
            "accepted_equal_unit_value",
            !accepted.is_empty()
                && if is_count {
                    accepted.iter().all(|r| r.value == value)
                } else {
                    accepted.iter().any(|r| r.value == value)
                },
            || {
                format!(
                    "done unit {} ({value}) has accepted results {:?}",
                    unit.id,
                    accepted
                        .iter()
                        .map(|r| r.value.as_str())
                        .collect::<Vec<_>>()
                )
            },
        );
        let wanted = 1 + usize::from(replica_wanted.contains(&unit.id));
        if is_count {
            verdict.check("count_runs_per_unit", accepted.len() == wanted, || {
                format!(
                    "count unit {} has {} accepted results, expected {wanted}",
                    unit.id,
                    accepted.len()
                )
            });
            let workers: BTreeSet<i64> = accepted.iter().map(|r| r.worker_id).collect();
            verdict.check(
                "replicas_on_other_workers",
                workers.len() == accepted.len(),
                || format!("unit {}'s accepted runs share a worker", unit.id),
            );
            match value.parse::<u128>() {
                Ok(v) => *sums.entry(unit.campaign_id).or_insert(0) += v,
                Err(_) => verdict.check("count_values_numeric", false, || {
                    format!("unit {} has count {value:?}", unit.id)
                }),
            }
        } else {
            verdict.check("search_runs_per_unit", accepted.len() == wanted, || {
                format!(
                    "search unit {} has {} accepted results, expected {wanted}",
                    unit.id,
                    accepted.len()
                )
            });
            let workers: BTreeSet<i64> = accepted.iter().map(|r| r.worker_id).collect();
            verdict.check(
                "replicas_on_other_workers",
                workers.len() == accepted.len(),
                || format!("unit {}'s accepted runs share a worker", unit.id),
            );
        }
    }
    for campaign in store.campaigns.iter().filter(|c| counts.contains(&c.id)) {
        let sum = sums.get(&campaign.id).copied().unwrap_or(0);
        verdict.check(
            "total_is_sum_of_units",
            campaign.total == sum.to_string(),
            || {
                format!(
                    "campaign {} total {} but its done units add up to {sum}",
                    campaign.id, campaign.total
                )
            },
        );
    }
}

fn optimisation(store: &Store, verdict: &mut Verdict) {
    let events: HashMap<i64, &Event> = store.events.iter().map(|e| (e.id, e)).collect();
    for campaign in store.campaigns.iter().filter(|c| c.objective == "max") {
        let improvements: Vec<i64> = store
            .events
            .iter()
            .filter(|e| e.kind == "improvement" && e.campaign_id == Some(campaign.id))
            .filter_map(|e| e.detail.get("score").and_then(Value::as_i64))
            .collect();
        verdict.check(
            "best_is_best_improvement",
            campaign.best_score == improvements.iter().copied().max(),
            || {
                format!(
                    "campaign {} best {:?} but its improvements are {improvements:?}",
                    campaign.id, campaign.best_score
                )
            },
        );
        let pointed = campaign.best_event.and_then(|id| events.get(&id));
        let ok = match (campaign.best_score, pointed) {
            (None, None) => true,
            (Some(score), Some(e)) => {
                e.kind == "improvement"
                    && e.campaign_id == Some(campaign.id)
                    && e.detail.get("score").and_then(Value::as_i64) == Some(score)
            }
            _ => false,
        };
        verdict.check("best_event_matches", ok, || {
            format!(
                "campaign {}'s best event {:?} does not record its best {:?}",
                campaign.id, campaign.best_event, campaign.best_score
            )
        });
        // Improvements only ever improve.
        let rising = improvements.windows(2).all(|w| w[1] > w[0]);
        verdict.check("improvements_rise", rising, || {
            format!("campaign {} improvements {improvements:?}", campaign.id)
        });
    }
}

fn events_agree(store: &Store, verdict: &mut Verdict) {
    fn of_kind<'s>(store: &'s Store, kind: &'s str) -> impl Iterator<Item = &'s Event> + 's {
        store.events.iter().filter(move |e| e.kind == kind)
    }
    let granted = count_of(of_kind(store, "lease_granted").filter_map(|e| e.lease_id));
    let expired = count_of(of_kind(store, "lease_expired").filter_map(|e| e.lease_id));
    let released = count_of(of_kind(store, "lease_released").filter_map(|e| e.lease_id));
    let result_events: HashMap<i64, Vec<&Event>> =
        of_kind(store, "result").fold(HashMap::new(), |mut map, e| {
            map.entry(e.lease_id.unwrap_or(-1)).or_default().push(e);
            map
        });
    let ignored: BTreeSet<i64> = of_kind(store, "result_ignored")
        .filter_map(|e| e.lease_id)
        .collect();
    let granted_events: HashMap<i64, &Event> = of_kind(store, "lease_granted")
        .filter_map(|e| e.lease_id.map(|l| (l, e)))
        .collect();
    for lease in &store.leases {
        let event = granted_events.get(&lease.id);
        let ok = granted.get(&lease.id) == Some(&1)
            && event.is_some_and(|e| {
                e.unit_id == Some(lease.unit_id)
                    && e.campaign_id == Some(lease.campaign_id)
                    && e.worker_id == Some(lease.worker_id)
            });
        verdict.check("event_per_grant", ok, || {
            format!(
                "lease {} has {:?} matching grant events",
                lease.id,
                granted.get(&lease.id)
            )
        });
        let expiries = expired.get(&lease.id).copied().unwrap_or(0);
        let ok = if lease.state == "expired" {
            expiries == 1
        } else {
            expiries == 0 || matches!(lease.state.as_str(), "completed" | "failed")
        };
        verdict.check("event_per_expiry", ok, || {
            format!(
                "lease {} is {} with {expiries} expiry events",
                lease.id, lease.state
            )
        });
        let releases = released.get(&lease.id).copied().unwrap_or(0);
        let ok = if lease.state == "released" {
            releases == 1
        } else {
            releases == 0 || matches!(lease.state.as_str(), "completed" | "failed")
        };
        verdict.check("event_per_release", ok, || {
            format!(
                "lease {} is {} with {releases} release events",
                lease.id, lease.state
            )
        });
        if lease.state == "completed" {
            verdict.check(
                "completed_lease_has_result_event",
                result_events.contains_key(&lease.id) || ignored.contains(&lease.id),
                || {
                    format!(
                        "completed lease {} has no result or result_ignored event",
                        lease.id
                    )
                },
            );
        }
    }
    verdict.check(
        "event_per_result",
        result_events.values().map(Vec::len).sum::<usize>() == store.results.len(),
        || {
            format!(
                "{} result events for {} result rows",
                result_events.values().map(Vec::len).sum::<usize>(),
                store.results.len()
            )
        },
    );
    for result in &store.results {
        let events = result_events
            .get(&result.lease_id)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let ok = events.len() == 1
            && events[0].unit_id == Some(result.unit_id)
            && events[0].worker_id == Some(result.worker_id)
            && events[0].detail.get("value").and_then(Value::as_str) == Some(&result.value);
        verdict.check("event_per_result", ok, || {
            format!("result {} has no single matching result event", result.id)
        });
    }
    let settled: BTreeSet<i64> = store
        .events
        .iter()
        .filter(|e| {
            e.kind == "replica_agreed"
                || e.kind == "replica_differed"
                || e.kind == "dispute_resolved"
        })
        .filter_map(|e| e.unit_id)
        .collect();
    let mut accepted_per_unit: HashMap<i64, usize> = HashMap::new();
    for r in store.results.iter().filter(|r| r.status == "accepted") {
        *accepted_per_unit.entry(r.unit_id).or_insert(0) += 1;
    }
    let with_result_event: BTreeSet<i64> =
        of_kind(store, "result").filter_map(|e| e.unit_id).collect();
    for unit in store.units.iter().filter(|u| u.state == "done") {
        verdict.check(
            "done_unit_has_result_event",
            with_result_event.contains(&unit.id),
            || format!("done unit {} has no result event", unit.id),
        );
        let two = accepted_per_unit.get(&unit.id) == Some(&2);
        verdict.check(
            "agreement_events",
            two == settled.contains(&unit.id),
            || {
                format!(
                    "unit {}: {} accepted results but agreement event {}",
                    unit.id,
                    accepted_per_unit.get(&unit.id).unwrap_or(&0),
                    settled.contains(&unit.id)
                )
            },
        );
    }
    let finished = count_of(
        of_kind(store, "campaign_finished")
            .filter(|e| e.detail.get("state").and_then(Value::as_str) == Some("done"))
            .filter_map(|e| e.campaign_id),
    );
    for campaign in store.campaigns.iter().filter(|c| c.state == "done") {
        verdict.check(
            "event_per_finish",
            finished.get(&campaign.id) == Some(&1),
            || {
                format!(
                    "done campaign {} has {:?} campaign_finished events",
                    campaign.id,
                    finished.get(&campaign.id)
                )
            },
        );
    }
    let registered = of_kind(store, "worker_registered").count() as i64;
    verdict.check("event_per_worker", registered == store.workers, || {
        format!(
            "{registered} worker_registered events for {} workers",
            store.workers
        )
    });
}

/// One campaign as the Admin API shows it.
#[derive(Clone, Debug)]
pub struct AdminView {
    /// `ShowCampaign`.
    pub status: pb::CampaignStatus,
    /// `Status` with results.
    pub results: Vec<pb::UnitResultRecord>,
}

/// What a chaos run knows besides the database.
pub struct RunFacts<'a> {
    /// The workload's campaigns with their expected answers.
    pub campaigns: &'a [Tracked],
    /// The Admin API's view of each of them (by campaign id).
    pub admin: &'a BTreeMap<i64, AdminView>,
    /// Leases whose results the workers heard accepted (from their event streams), with the
    /// stream that says so.
    pub accepted_leases: &'a BTreeMap<i64, PathBuf>,
    /// Coordinator processes the harness started.
    pub coordinator_starts: u64,
    /// The observer that watched the run.
    pub observer: &'a Observer,
    /// Problems with the processes (unexpected exits) and panics in the logs.
    pub process_problems: &'a [String],
}

/// Every end-of-run check of a chaos run.
pub fn check_run(conn: &mut Connection, facts: &RunFacts) -> Verdict {
    let mut verdict = Verdict::default();
    check_store(conn, StoreExpectations { honest: true }, &mut verdict);
    answers(conn, facts, &mut verdict);
    acknowledged(conn, facts, &mut verdict);
    let starts: i64 = conn
        .query_row(
            "SELECT count(*) FROM events WHERE kind = 'coordinator_started'",
            [],
            |r| r.get(0),
        )
        .unwrap_or(-1);
    verdict.check(
        "event_per_coordinator_start",
        starts == facts.coordinator_starts as i64,
        || {
            format!(
                "{starts} coordinator_started events for {} starts",
                facts.coordinator_starts
            )
        },
    );
    let (verified, rewritten) = facts.observer.verify_append_only(conn);
    *verdict
        .checks
        .entry("event_log_append_only".into())
        .or_insert(0) += verified;
    for text in rewritten {
        verdict.check("event_log_append_only", false, || text);
    }
    *verdict
        .checks
        .entry("legal_transitions".into())
        .or_insert(0) += facts.observer.transitions_checked;
    for text in &facts.observer.violations {
        verdict.check("legal_transitions", false, || text.clone());
    }
    verdict.check("process_health", facts.process_problems.is_empty(), || {
        facts.process_problems.join("\n")
    });
    verdict
}

fn answers(conn: &Connection, facts: &RunFacts, verdict: &mut Verdict) {
    for tracked in facts.campaigns {
        let id = tracked.campaign_id;
        let stored: Option<(String, String, Option<i64>, i64)> = conn
            .query_row(
                "SELECT state, total, best_score,
                    (SELECT count(*) FROM units WHERE campaign_id = ?1 AND state != 'done')
                 FROM campaigns WHERE id = ?1",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .ok();
        let Some((state, total, best, open)) = stored else {
            verdict.check("answer_exact", false, || {
                format!("campaign {id} is missing")
            });
            continue;
        };
        let value = match tracked.spec.expected {
            Expected::Count(_) => total,
            Expected::Max(_) => best.map(|b| b.to_string()).unwrap_or_default(),
        };
        let expected = tracked.spec.expected.as_value();
        verdict.check("answer_exact", state == "done" && value == expected, || {
            format!(
                "campaign {id} ({} {}) is {state} with {value}, expected {expected}",
                tracked.spec.problem, tracked.spec.params
            )
        });
        verdict.check("every_unit_done", open == 0, || {
            format!("campaign {id} has {open} units not done")
        });
        let Some(view) = facts.admin.get(&id) else {
            verdict.check("admin_agrees", false, || {
                format!("the Admin API did not show campaign {id}")
            });
            continue;
        };
        verdict.check(
            "admin_agrees",
            view.status.state == "done" && view.status.value == expected && view.status.proven,
            || {
                format!(
                    "Admin API shows campaign {id} {} {} proven={}, expected done {expected} proven",
                    view.status.state, view.status.value, view.status.proven
                )
            },
        );
        let accepted: BTreeMap<i64, BTreeSet<String>> = view
            .results
            .iter()
            .filter(|r| r.state == "accepted")
            .fold(BTreeMap::new(), |mut map, r| {
                map.entry(r.unit_id).or_default().insert(r.value.clone());
                map
            });
        let stored: BTreeMap<i64, BTreeSet<String>> = conn
            .prepare(
                "SELECT unit_id, value FROM results WHERE campaign_id = ?1 AND status = 'accepted'",
            )
            .and_then(|mut s| {
                s.query_map([id], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))?
                    .collect::<Result<Vec<_>, _>>()
            })
            .map(|rows| {
                rows.into_iter().fold(
                    BTreeMap::<i64, BTreeSet<String>>::new(),
                    |mut map, (unit, value)| {
                        map.entry(unit).or_default().insert(value);
                        map
                    },
                )
            })
            .unwrap_or_default();
        verdict.check("admin_agrees", accepted == stored, || {
            format!("the Admin API's accepted results of campaign {id} differ from the store")
        });
    }
}

fn acknowledged(conn: &Connection, facts: &RunFacts, verdict: &mut Verdict) {
    let stored: HashMap<i64, (i64, String)> = conn
        .prepare(
            "SELECT r.lease_id, r.worker_id = l.worker_id, r.status FROM results r
             JOIN leases l ON l.id = r.lease_id",
        )
        .and_then(|mut s| {
            s.query_map([], |r| Ok((r.get(0)?, (r.get(1)?, r.get(2)?))))?
                .collect::<Result<HashMap<_, _>, _>>()
        })
        .unwrap_or_default();
    for (lease, log) in facts.accepted_leases {
        let found = stored.get(lease);
        verdict.check(
            "acknowledged_results_kept",
            found.is_some_and(|(same_worker, status)| {
                *same_worker == 1 && (status == "accepted" || status == "awaiting")
            }),
            || {
                format!(
                    "lease {lease}: {} says its result was accepted, the store has {found:?}",
                    log.display()
                )
            },
        );
    }
}
