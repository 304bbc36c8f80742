//! A run's figures: what was injected, what the cluster did, what was checked and found.

use rusqlite::Connection;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// What the store holds after a run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct StoreFigures {
    /// Campaigns.
    pub campaigns: i64,
    /// Units done.
    pub units_done: i64,
    /// Leases granted.
    pub leases: i64,
    /// Leases that expired (deadline passed without a heartbeat).
    pub leases_expired: i64,
    /// Leases handed back (worker shutdown).
    pub leases_released: i64,
    /// Leases cancelled (another lease's late result finished the unit first).
    pub leases_cancelled: i64,
    /// Unit results stored.
    pub results: i64,
    /// Results that arrived on a lease after it had expired and were still taken.
    pub late_results_taken: i64,
    /// Results acknowledged as duplicates and not counted (event `result_ignored`).
    pub duplicates_ignored: i64,
    /// Replica runs that agreed.
    pub replicas_agreed: i64,
    /// Replica runs of search units that found a different best (a run prunes with the bound
    /// it was given, so this is recorded, not disputed).
    pub replicas_differed: i64,
    /// Worker registrations.
    pub registrations: i64,
    /// Events in the log.
    pub events: i64,
}

impl StoreFigures {
    /// Reads the figures from a database.
    pub fn read(conn: &Connection) -> rusqlite::Result<StoreFigures> {
        let one = |sql: &str| conn.query_row(sql, [], |r| r.get::<_, i64>(0));
        let events_of = |kind: &str| {
            conn.query_row("SELECT count(*) FROM events WHERE kind = ?1", [kind], |r| {
                r.get::<_, i64>(0)
            })
        };
        Ok(StoreFigures {
            campaigns: one("SELECT count(*) FROM campaigns")?,
            units_done: one("SELECT count(*) FROM units WHERE state = 'done'")?,
            leases: one("SELECT count(*) FROM leases")?,
            leases_expired: events_of("lease_expired")?,
            leases_released: events_of("lease_released")?,
            leases_cancelled: one("SELECT count(*) FROM leases WHERE state = 'cancelled'")?,
            results: one("SELECT count(*) FROM results")?,
            late_results_taken: one(
                "SELECT count(*) FROM results r WHERE EXISTS (SELECT 1 FROM events e
                 WHERE e.kind = 'lease_expired' AND e.lease_id = r.lease_id)",
            )?,
            duplicates_ignored: events_of("result_ignored")?,
            replicas_agreed: events_of("replica_agreed")?,
            replicas_differed: events_of("replica_differed")?,
            registrations: events_of("worker_registered")?,
            events: one("SELECT count(*) FROM events")?,
        })
    }
}

/// Everything one run measured and found.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RunReport {
    /// The seed.
    pub seed: u64,
    /// Where the database and logs are.
    pub dir: String,
    /// Length of the fault window.
    pub window_seconds: f64,
    /// Whole run, start to verdict.
    pub elapsed_seconds: f64,
    /// Whether every campaign finished in time.
    pub drained: bool,
    /// Faults in the plan.
    pub faults_planned: usize,
    /// Faults executed, per kind.
    pub faults: BTreeMap<&'static str, u64>,
    /// Faults that could not be applied or undone.
    pub fault_errors: Vec<String>,
    /// Coordinator processes started.
    pub coordinator_starts: u64,
    /// Worker processes started.
    pub worker_starts: u64,
    /// Connections the proxies reset.
    pub proxy_resets: u64,
    /// Shadow connections that carried duplicated requests.
    pub duplicated_connections: u64,
    /// Request bytes the coordinator received twice.
    pub duplicated_bytes: u64,
    /// Campaigns run, per problem.
    pub campaigns: BTreeMap<String, u64>,
    /// Results the workers heard accepted.
    pub acknowledged_results: usize,
    /// The store afterwards.
    pub store: StoreFigures,
    /// Looks the observer took at the store during the run.
    pub observer_snapshots: u64,
    /// Facts verified, per check.
    pub checks: BTreeMap<String, u64>,
    /// Total facts verified.
    pub total_checks: u64,
    /// Everything found wrong.
    pub violations: Vec<String>,
    /// No violation.
    pub ok: bool,
}

impl RunReport {
    /// A short human summary.
    pub fn human(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "chaos run seed {}: {} ({:.0} s fault window, {:.0} s in all; {})",
            self.seed,
            if self.ok { "PASS" } else { "FAIL" },
            self.window_seconds,
            self.elapsed_seconds,
            self.dir
        );
        let faults: u64 = self.faults.values().sum();
        let _ = writeln!(
            out,
            "  faults: {faults} of {} planned: {}",
            self.faults_planned,
            self.faults
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let _ = writeln!(
            out,
            "  processes: {} coordinator starts, {} worker starts; {} connections reset, \
             {} duplicated ({} request bytes sent twice)",
            self.coordinator_starts,
            self.worker_starts,
            self.proxy_resets,
            self.duplicated_connections,
            self.duplicated_bytes
        );
        let s = &self.store;
        let _ = writeln!(
            out,
            "  campaigns: {} ({}); units done {}, leases {} (expired {}, released {}, \
             cancelled {}), results {} (late but taken {}), duplicates ignored {}, \
             replicas agreed {} (differed {}), events {}",
            s.campaigns,
            self.campaigns
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", "),
            s.units_done,
            s.leases,
            s.leases_expired,
            s.leases_released,
            s.leases_cancelled,
            s.results,
            s.late_results_taken,
            s.duplicates_ignored,
            s.replicas_agreed,
            s.replicas_differed,
            s.events
        );
        let _ = writeln!(
            out,
            "  checks: {} facts verified in {} checks ({} store snapshots during the run); \
             {} acknowledged results traced",
            self.total_checks,
            self.checks.len(),
            self.observer_snapshots,
            self.acknowledged_results
        );
        if !self.drained {
            let _ = writeln!(out, "  NOT DRAINED: some campaigns did not finish in time");
        }
        for error in &self.fault_errors {
            let _ = writeln!(out, "  fault error: {error}");
        }
        for violation in &self.violations {
            let _ = writeln!(out, "  VIOLATION {violation}");
        }
        out
    }
}
