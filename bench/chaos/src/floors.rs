//! The fewest facts each check must verify in a run. A check that verifies nothing passes
//! vacuously: the acknowledgement check once read a log line the worker had stopped writing
//! at its default level, and a 240-second run "passed" with 0 acknowledged results traced.
//! So every check of a chaos run has a floor, computed from what the run did (counted from
//! the store and the workload independently of the checks), and a check under its floor is a
//! violation — zero above all.

use rusqlite::Connection;

use crate::invariants::Verdict;

/// What a run did, as far as the floors need it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Scale {
    /// Campaigns the workload created and tracked (from the harness, not the store).
    pub campaigns_tracked: u64,
    /// Campaigns in the store, with a count objective, with a max objective, and done.
    pub campaigns_count: u64,
    /// See `campaigns_count`.
    pub campaigns_max: u64,
    /// See `campaigns_count`.
    pub campaigns_done: u64,
    /// Units in the store.
    pub units: u64,
    /// Units done in count campaigns.
    pub count_units_done: u64,
    /// Units done in other campaigns.
    pub search_units_done: u64,
    /// Leases granted.
    pub leases: u64,
    /// Leases completed.
    pub leases_completed: u64,
    /// Results stored.
    pub results: u64,
}

impl Scale {
    /// Counts the store's side of the scale; `campaigns_tracked` comes from the workload.
    pub fn read(conn: &Connection, campaigns_tracked: u64) -> rusqlite::Result<Scale> {
        let one = |sql: &str| conn.query_row(sql, [], |r| r.get::<_, i64>(0).map(|n| n as u64));
        let units_done = one("SELECT count(*) FROM units WHERE state = 'done'")?;
        let count_units_done = one(
            "SELECT count(*) FROM units u JOIN campaigns c ON c.id = u.campaign_id
             WHERE u.state = 'done' AND c.objective = 'count'",
        )?;
        Ok(Scale {
            campaigns_tracked,
            campaigns_count: one("SELECT count(*) FROM campaigns WHERE objective = 'count'")?,
            campaigns_max: one("SELECT count(*) FROM campaigns WHERE objective = 'max'")?,
            campaigns_done: one("SELECT count(*) FROM campaigns WHERE state = 'done'")?,
            units: one("SELECT count(*) FROM units")?,
            count_units_done,
            search_units_done: units_done - count_units_done,
            leases: one("SELECT count(*) FROM leases")?,
            leases_completed: one("SELECT count(*) FROM leases WHERE state = 'completed'")?,
            results: one("SELECT count(*) FROM results")?,
        })
    }
}

/// Each check of a chaos run with the fewest facts it must verify at `scale`. Checks that
/// every run exercises have a floor of at least one whatever the scale.
pub fn floors(scale: &Scale) -> Vec<(&'static str, u64)> {
    let units_done = scale.count_units_done + scale.search_units_done;
    let at_least_one = |n: u64| n.max(1);
    vec![
        ("sqlite_integrity", 2),
        ("unit_lease_link", at_least_one(scale.units)),
        ("lease_unit_link", at_least_one(scale.leases)),
        ("one_result_per_lease", at_least_one(scale.results)),
        ("result_matches_lease", at_least_one(scale.results)),
        ("result_lease_state", at_least_one(scale.results)),
        ("no_rejected_results", at_least_one(scale.units)),
        ("no_awaiting_on_done", at_least_one(units_done)),
        ("accepted_equal_unit_value", at_least_one(units_done)),
        ("replicas_on_other_workers", at_least_one(units_done)),
        ("count_runs_per_unit", scale.count_units_done),
        ("search_runs_per_unit", scale.search_units_done),
        ("total_is_sum_of_units", scale.campaigns_count),
        ("best_is_best_improvement", scale.campaigns_max),
        ("best_event_matches", scale.campaigns_max),
        ("improvements_rise", scale.campaigns_max),
        ("event_per_grant", at_least_one(scale.leases)),
        ("event_per_expiry", at_least_one(scale.leases)),
        ("event_per_release", at_least_one(scale.leases)),
        (
            "completed_lease_has_result_event",
            at_least_one(scale.leases_completed),
        ),
        ("event_per_result", scale.results + 1),
        ("done_unit_has_result_event", at_least_one(units_done)),
        ("agreement_events", at_least_one(units_done)),
        ("event_per_finish", scale.campaigns_done),
        ("event_per_worker", 1),
        ("answer_exact", at_least_one(scale.campaigns_tracked)),
        ("every_unit_done", at_least_one(scale.campaigns_tracked)),
        ("admin_agrees", 2 * at_least_one(scale.campaigns_tracked)),
        // Workers hear most results accepted; lost replies and killed workers take some of
        // the acknowledgements (`--seed 31337 --workers 4` traced 448 of 473 in a 60-second
        // window, 1,830 of 1,900 in 240 seconds).
        ("acknowledged_results_kept", at_least_one(scale.results / 2)),
        ("event_per_coordinator_start", 1),
        ("event_log_append_only", 1),
        ("legal_transitions", 1),
        ("process_health", 1),
        ("campaigns_finish", 1),
    ]
}

/// Adds a violation for every check that verified fewer facts than its floor.
pub fn require(verdict: &mut Verdict, floors: &[(&'static str, u64)]) {
    for &(check, floor) in floors {
        let verified = verdict.checks.get(check).copied().unwrap_or(0);
        if verified < floor {
            verdict.violations.push(format!(
                "[{check}] verified {verified} fact(s) where the run makes at least {floor} \
                 likely: the check has gone blind"
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scale() -> Scale {
        Scale {
            campaigns_tracked: 3,
            campaigns_count: 2,
            campaigns_max: 1,
            campaigns_done: 3,
            units: 40,
            count_units_done: 30,
            search_units_done: 10,
            leases: 60,
            leases_completed: 45,
            results: 44,
        }
    }

    /// A verdict that verified exactly the floors.
    fn at_the_floors(floors: &[(&'static str, u64)]) -> Verdict {
        let mut verdict = Verdict::default();
        for &(check, floor) in floors {
            for _ in 0..floor {
                verdict.check(check, true, String::new);
            }
        }
        verdict
    }

    #[test]
    fn checks_at_their_floors_pass() {
        let floors = floors(&scale());
        let mut verdict = at_the_floors(&floors);
        require(&mut verdict, &floors);
        assert!(verdict.ok(), "{:?}", verdict.violations);
    }

    #[test]
    fn an_invariant_with_nothing_to_check_fails() {
        let floors = floors(&scale());
        let mut verdict = at_the_floors(&floors);
        // The acknowledgement check found no acknowledgements at all.
        verdict.checks.remove("acknowledged_results_kept");
        require(&mut verdict, &floors);
        assert!(!verdict.ok());
        assert_eq!(verdict.violations.len(), 1, "{:?}", verdict.violations);
        assert!(verdict.violations[0].starts_with("[acknowledged_results_kept] verified 0"));
        // Even a run that seems to have done nothing must show each basic check working.
        let mut empty = Verdict::default();
        require(&mut empty, &super::floors(&Scale::default()));
        assert!(empty
            .violations
            .iter()
            .any(|v| v.starts_with("[acknowledged_results_kept] verified 0")));
        assert!(empty
            .violations
            .iter()
            .any(|v| v.starts_with("[answer_exact] verified 0")));
    }

    #[test]
    fn too_few_facts_fail_too() {
        let floors = floors(&scale());
        let mut verdict = at_the_floors(&floors);
        // Half the results' acknowledgements are expected; a handful is not enough.
        verdict.checks.insert("acknowledged_results_kept".into(), 5);
        require(&mut verdict, &floors);
        assert_eq!(verdict.violations.len(), 1, "{:?}", verdict.violations);
        assert!(verdict.violations[0].contains("at least 22"));
    }
}
