//! Prometheus metrics, served at `/metrics` in the text exposition format.
//!
//! Most counters are not incremented in the scheduler: they are derived from the append-only
//! event log, which already records every lease grant and expiry, result, improvement,
//! rejected improvement, dispute and failed unit. [`Metrics::catch_up_on`] reads the events added
//! since its last call (the first call reads the whole log once), so the counters cover the
//! database's whole history and the hot path pays nothing. Two things leave no event and are
//! counted where they happen, in process-wide collectors: lease renewals (heartbeats) and the
//! store's transaction latency (the writer thread). Gauges (connected workers, units by state,
//! every campaign's value) are read from the store at scrape time.

use prometheus::{
    Encoder, GaugeVec, Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGauge, IntGaugeVec,
    Opts, Registry, TextEncoder,
};
use rusqlite::{params, Connection};
use std::collections::HashMap;
use std::sync::LazyLock;

use crate::error::Error;

static STORE_TRANSACTION: LazyLock<Histogram> = LazyLock::new(|| {
    Histogram::with_opts(
        HistogramOpts::new(
            "grind_store_transaction_seconds",
            "Time to run and commit one store transaction (a group of writes, one fsync)",
        )
        .buckets(prometheus::exponential_buckets(0.0001, 2.5, 14).expect("valid buckets")),
    )
    .expect("valid histogram")
});

static STORE_WRITES: LazyLock<IntCounter> = LazyLock::new(|| {
    IntCounter::new(
        "grind_store_writes_total",
        "Writes run by the store, each in its own savepoint of a group transaction",
    )
    .expect("valid counter")
});

static LEASES_RENEWED: LazyLock<IntCounter> = LazyLock::new(|| {
    IntCounter::new(
        "grind_leases_renewed_total",
        "Leases renewed by heartbeats (since this process started)",
    )
    .expect("valid counter")
});

/// Records one store transaction: how long it took and how many writes it committed.
pub fn observe_store_transaction(seconds: f64, writes: usize) {
    STORE_TRANSACTION.observe(seconds);
    STORE_WRITES.inc_by(writes as u64);
}

/// Counts leases renewed by a heartbeat.
pub fn leases_renewed(count: usize) {
    LEASES_RENEWED.inc_by(count as u64);
}

/// Event kinds counted, and the counter (name, help) each one feeds.
const EVENT_COUNTERS: &[(&str, &str, &str)] = &[
    (
        "lease_granted",
        "grind_leases_granted_total",
        "Leases granted",
    ),
    (
        "lease_expired",
        "grind_leases_expired_total",
        "Leases expired without a heartbeat",
    ),
    (
        "lease_released",
        "grind_leases_released_total",
        "Leases handed back unfinished",
    ),
    (
        "result",
        "grind_results_total",
        "Unit results received (first runs and replicas)",
    ),
    (
        "unit_failed",
        "grind_units_failed_total",
        "Units marked failed after too many attempts",
    ),
    (
        "improvement",
        "grind_improvements_accepted_total",
        "Verified improvements accepted as a campaign's best",
    ),
    (
        "improvement_rejected",
        "grind_improvements_rejected_total",
        "Claimed improvements refused by the verifier",
    ),
    (
        "claim_held",
        "grind_claims_held_total",
        "Claims held because the verifier itself failed on them (no strike)",
    ),
    (
        "disputed",
        "grind_replication_disagreements_total",
        "Replicated count results that disagreed",
    ),
    (
        "replica_agreed",
        "grind_replication_agreements_total",
        "Replicated results (counts, search units) that agreed",
    ),
    (
        "replica_differed",
        "grind_search_replicas_differed_total",
        "Replicated search units whose runs found different bests (both kept)",
    ),
    (
        "donation",
        "grind_donations_total",
        "Donations of untried subtrees",
    ),
];

/// Per-worker totals read from the event log.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WorkerTally {
    /// Improvements this worker found that became a campaign's best.
    pub improvements: u64,
    /// Improvements this worker claimed that the verifier refused.
    pub rejected_improvements: u64,
}

#[derive(Default)]
struct Tail {
    last_event: i64,
    units_done: u64,
    workers: HashMap<i64, WorkerTally>,
}

/// One coordinator's metrics registry and event-log reader.
pub struct Metrics {
    registry: Registry,
    events: HashMap<&'static str, IntCounter>,
    units_done: IntCounter,
    units_gave_up: IntCounter,
    connected_workers: IntGauge,
    registered_workers: IntGauge,
    campaign_units: IntGaugeVec,
    campaign_value: GaugeVec,
    events_total: IntCounterVec,
    tail: std::sync::Mutex<Tail>,
}

impl Metrics {
    /// A registry with every grind metric registered.
    pub fn new() -> Metrics {
        let registry = Registry::new();
        let mut events = HashMap::new();
        for (kind, name, help) in EVENT_COUNTERS {
            let counter = IntCounter::new(*name, *help).expect("valid counter");
            registry
                .register(Box::new(counter.clone()))
                .expect("unique metric");
            events.insert(*kind, counter);
        }
        let units_done = IntCounter::new("grind_units_done_total", "Units finished and accepted")
            .expect("valid counter");
        let units_gave_up = IntCounter::new(
            "grind_units_disputed_failed_total",
            "Units failed because replicated results never agreed",
        )
        .expect("valid counter");
        let connected_workers = IntGauge::new(
            "grind_workers_connected",
            "Workers heard from within three heartbeat intervals",
        )
        .expect("valid gauge");
        let registered_workers =
            IntGauge::new("grind_workers_registered", "Workers ever registered").expect("valid");
        let campaign_units = IntGaugeVec::new(
            Opts::new("grind_campaign_units", "Units of a campaign by state"),
            &["campaign", "problem", "state"],
        )
        .expect("valid gauge");
        let campaign_value = GaugeVec::new(
            Opts::new(
                "grind_campaign_best_value",
                "A campaign's best value (optimisation), running total (count) or samples",
            ),
            &["campaign", "problem", "objective"],
        )
        .expect("valid gauge");
        let events_total = IntCounterVec::new(
            Opts::new("grind_events_total", "Provenance events appended, by kind"),
            &["kind"],
        )
        .expect("valid counter");
        for collector in [
            Box::new(units_done.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(units_gave_up.clone()),
            Box::new(connected_workers.clone()),
            Box::new(registered_workers.clone()),
            Box::new(campaign_units.clone()),
            Box::new(campaign_value.clone()),
            Box::new(events_total.clone()),
            Box::new(STORE_TRANSACTION.clone()),
            Box::new(STORE_WRITES.clone()),
            Box::new(LEASES_RENEWED.clone()),
        ] {
            registry.register(collector).expect("unique metric");
        }
        Metrics {
            registry,
            events,
            units_done,
            units_gave_up,
            connected_workers,
            registered_workers,
            campaign_units,
            campaign_value,
            events_total,
            tail: Default::default(),
        }
    }

    /// Reads the events appended since the last call and updates the counters; returns the
    /// per-worker tallies. Runs on the store's reader (`conn`).
    pub fn catch_up_on(&self, conn: &Connection) -> Result<HashMap<i64, WorkerTally>, Error> {
        let mut tail = self
            .tail
            .lock()
            .map_err(|_| Error::Internal("metrics poisoned".into()))?;
        let mut stmt = conn.prepare_cached(
            "SELECT id, kind, worker_id,
                    CASE WHEN kind = 'disputed' THEN json_extract(detail, '$.gave_up') END
             FROM events WHERE id > ?1 ORDER BY id LIMIT 10000",
        )?;
        loop {
            let mut rows = stmt.query(params![tail.last_event])?;
            let mut read = 0;
            while let Some(row) = rows.next()? {
                read += 1;
                let id: i64 = row.get(0)?;
                let kind: String = row.get(1)?;
                let worker: Option<i64> = row.get(2)?;
                let gave_up: Option<bool> = row.get(3)?;
                tail.last_event = id;
                self.events_total.with_label_values(&[&kind]).inc();
                if let Some(counter) = self.events.get(kind.as_str()) {
                    counter.inc();
                }
                if gave_up == Some(true) {
                    self.units_gave_up.inc();
                }
                if let Some(worker) = worker {
                    match kind.as_str() {
                        "improvement" => tail.workers.entry(worker).or_default().improvements += 1,
                        "improvement_rejected" => {
                            tail.workers
                                .entry(worker)
                                .or_default()
                                .rejected_improvements += 1
                        }
                        _ => {}
                    }
                }
            }
            if read < 10000 {
                break;
            }
        }
        Ok(tail.workers.clone())
    }

    /// Catches up on events, refreshes the gauges from the store and encodes every metric
    /// in the Prometheus text format. Runs on the store's reader (`conn`).
    pub fn gather(&self, conn: &Connection, now_ms: i64, stale_ms: i64) -> Result<String, Error> {
        self.catch_up_on(conn)?;
        let (connected, registered): (i64, i64) = conn
            .prepare_cached(
                "SELECT coalesce(sum(last_seen_ms >= ?1), 0), count(*) FROM workers WHERE banned = 0",
            )?
            .query_row(params![now_ms - stale_ms], |r| Ok((r.get(0)?, r.get(1)?)))?;
        self.connected_workers.set(connected);
        self.registered_workers.set(registered);
        self.campaign_units.reset();
        self.campaign_value.reset();
        let mut done_total = 0u64;
        for c in crate::views::campaigns(conn)? {
            let id = c.campaign_id.to_string();
            let units = c.units.unwrap_or_default();
            done_total += units.done;
            for (state, n) in [
                ("pending", units.pending),
                ("leased", units.leased),
                ("done", units.done),
                ("failed", units.failed),
                ("verifying", units.verifying),
                ("disputed", units.disputed),
            ] {
                self.campaign_units
                    .with_label_values(&[&id, &c.problem, state])
                    .set(n as i64);
            }
            if let Ok(value) = c.value.parse::<f64>() {
                self.campaign_value
                    .with_label_values(&[&id, &c.problem, &c.objective])
                    .set(value);
            }
        }
        {
            let mut tail = self
                .tail
                .lock()
                .map_err(|_| Error::Internal("metrics poisoned".into()))?;
            if done_total > tail.units_done {
                self.units_done.inc_by(done_total - tail.units_done);
                tail.units_done = done_total;
            }
        }
        let mut out = Vec::new();
        TextEncoder::new()
            .encode(&self.registry.gather(), &mut out)
            .map_err(|e| Error::Internal(format!("cannot encode metrics: {e}")))?;
        String::from_utf8(out).map_err(|e| Error::Internal(format!("metrics not UTF-8: {e}")))
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_events_once_and_per_worker() {
        let mut conn = Connection::open_in_memory().unwrap();
        crate::schema::migrate(&mut conn).unwrap();
        for (kind, worker) in [
            ("lease_granted", 1),
            ("improvement", 1),
            ("improvement", 2),
            ("improvement_rejected", 2),
        ] {
            conn.execute(
                "INSERT INTO events (at_ms, kind, worker_id, detail) VALUES (1, ?1, ?2, '{}')",
                params![kind, worker],
            )
            .unwrap();
        }
        let metrics = Metrics::new();
        let tally = metrics.catch_up_on(&conn).unwrap();
        assert_eq!(tally[&1].improvements, 1);
        assert_eq!(tally[&2].rejected_improvements, 1);
        let again = metrics.catch_up_on(&conn).unwrap();
        assert_eq!(tally, again, "events are counted once");
        let text = metrics.gather(&conn, 0, 1000).unwrap();
        assert!(text.contains("grind_leases_granted_total 1"), "{text}");
        assert!(
            text.contains("grind_improvements_accepted_total 2"),
            "{text}"
        );
        assert!(
            text.contains("grind_store_transaction_seconds_bucket"),
            "{text}"
        );
    }
}
