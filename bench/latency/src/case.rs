//! One case of the benchmark: a real `grind serve`, one delay line in front of it, and
//! `workers` real `grind-worker` processes, each behind its own chaos proxy (which resets
//! its connections a few times a minute), running one `primes` campaign of stretched units.
//! Afterwards the store is read: the busy fraction from the results' wall times, and the
//! chaos crate's store invariants plus the campaign's answer against a plain sieve.

use grind_chaos::invariants::{self, StoreExpectations, Verdict};
use grind_chaos::observe;
use grind_chaos::procs::{CoordinatorProc, CoordinatorSettings, WorkerProc};
use grind_chaos::proxy::{Mode, Proxy};
use grind_kit::binaries::Binaries;
use grind_kit::reference;
use grind_kit::waiting::poll_until;
use grind_proto::v1 as pb;
use grind_proto::v1::admin_client::AdminClient;
use rusqlite::Connection;
use serde::Serialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::delay_line::DelayLine;
use crate::LatencyError;

/// How long a proxy stays cut when it resets its worker's connections.
const CUT_FOR: Duration = Duration::from_millis(100);

/// What one case runs.
#[derive(Clone, Debug)]
pub struct CaseSettings {
    /// The binaries under test.
    pub binaries: Binaries,
    /// Directory for the database and the logs.
    pub dir: PathBuf,
    /// Round trip added between every worker and the coordinator.
    pub round_trip: Duration,
    /// Worker processes.
    pub workers: usize,
    /// Solver threads per worker.
    pub threads: usize,
    /// Units of the campaign.
    pub units: u64,
    /// Each unit's wall time (`primes --min-unit-ms`).
    pub unit_ms: u64,
    /// Numbers per unit (the sieve's share of a unit).
    pub unit_numbers: u64,
    /// Connection resets per minute, spread over the workers' proxies in turn.
    pub resets_per_minute: f64,
    /// The coordinator's `--heartbeat-ms`.
    pub heartbeat_ms: u64,
    /// The coordinator's `--lease-ttl-ms`.
    pub lease_ttl_ms: u64,
    /// The case gives up (and fails) when the campaign has not finished by then.
    pub time_limit: Duration,
}

/// What one case measured and checked.
#[derive(Clone, Debug, Serialize)]
pub struct CaseReport {
    /// Added round trip, ms.
    pub round_trip_ms: u64,
    /// Worker processes.
    pub workers: usize,
    /// Threads per worker.
    pub threads: usize,
    /// Units in the campaign.
    pub units: u64,
    /// Wall time each unit is stretched to, ms.
    pub unit_ms: u64,
    /// Whether the campaign finished within the time limit.
    pub finished: bool,
    /// pi(N) by the harness's own sieve.
    pub expected: String,
    /// The campaign's final value.
    pub value: String,
    /// Coordinator time from the campaign's creation to its end, s.
    pub campaign_seconds: f64,
    /// Coordinator time from the first lease granted to the campaign's end, s.
    pub working_seconds: f64,
    /// Sum of the results' unit wall times, s.
    pub unit_wall_seconds: f64,
    /// unit wall / (workers x threads x working time): how busy the threads were once work
    /// had reached them.
    pub busy_fraction: f64,
    /// unit wall / (workers x threads x campaign time): also counting the wait for idle
    /// workers' next poll after creation.
    pub busy_fraction_from_creation: f64,
    /// Thread occupancy from each worker's first grant to the campaign's last grant (while
    /// units were still waiting for a worker): what latency hiding controls.
    pub busy_fraction_steady: f64,
    /// Coordinator time from the last grant to the campaign's end, s: the tail, where
    /// some threads idle because no unit is left to give them.
    pub tail_seconds: f64,
    /// Leases granted (more than units when some expired or were handed back).
    pub leases: u64,
    /// Connections the proxies reset.
    pub resets: u64,
    /// Connections the workers opened through their proxies.
    pub connections: u64,
    /// Invariant facts verified.
    pub checks: u64,
    /// Everything found wrong (empty when nothing was lost or double-counted).
    pub violations: Vec<String>,
}

impl CaseReport {
    /// Whether the campaign finished with the right answer and every invariant held.
    pub fn ok(&self) -> bool {
        self.finished && self.violations.is_empty()
    }
}

/// Runs one case to the end (bounded by `settings.time_limit`) and stops every process.
pub async fn run(settings: &CaseSettings) -> Result<CaseReport, LatencyError> {
    std::fs::create_dir_all(settings.dir.join("logs"))
        .map_err(|e| LatencyError::Setup(format!("{}: {e}", settings.dir.display())))?;
    let db = settings.dir.join("grind.db");
    let mut coordinator = CoordinatorProc::start(
        &settings.binaries,
        &db,
        settings.dir.join("logs/coordinator.log"),
        &CoordinatorSettings {
            lease_ttl_ms: settings.lease_ttl_ms,
            heartbeat_ms: settings.heartbeat_ms,
            max_attempts: 3,
        },
        Duration::from_secs(60),
    )
    .await?;
    let line = DelayLine::start(coordinator.addr, settings.round_trip / 2)
        .await
        .map_err(|e| LatencyError::Setup(format!("delay line: {e}")))?;
    let (_target, target_rx) = watch::channel(Some(line.addr()));
    let mut proxies = Vec::new();
    let mut workers = Vec::new();
    for index in 0..settings.workers {
        let proxy = Proxy::start(target_rx.clone())
            .await
            .map_err(|e| LatencyError::Setup(format!("proxy: {e}")))?;
        workers.push(WorkerProc::start(
            &settings.binaries,
            &format!("http://{}", proxy.addr()),
            &format!("latency-w{index}"),
            settings.threads,
            settings.dir.join(format!("logs/worker-{index}.log")),
        )?);
        proxies.push(proxy);
    }
    let outcome = drive(settings, &coordinator, &db, &proxies).await;
    for worker in &mut workers {
        worker.terminate(Duration::from_secs(15)).await;
    }
    coordinator.terminate(Duration::from_secs(15)).await;
    let (campaign_id, finished, value) = outcome?;
    let mut report = measure(settings, &db, campaign_id, finished, value)?;
    report.resets = proxies
        .iter()
        .map(|p| p.stats().resets.load(Ordering::Relaxed))
        .sum();
    report.connections = proxies
        .iter()
        .map(|p| p.stats().connections.load(Ordering::Relaxed))
        .sum();
    Ok(report)
}

/// Waits for every worker to register, creates the campaign, resets connections on schedule
/// and waits for the campaign to end. Returns its id, whether it ended, and its value.
async fn drive(
    settings: &CaseSettings,
    coordinator: &CoordinatorProc,
    db: &Path,
    proxies: &[Proxy],
) -> Result<(i64, bool, String), LatencyError> {
    let deadline = Instant::now() + settings.time_limit;
    wait_for_workers(db, settings.workers, deadline).await?;
    let mut admin = AdminClient::connect(format!("http://{}", coordinator.addr))
        .await
        .map_err(|e| LatencyError::Setup(format!("admin connection: {e}")))?;
    let to = settings.units * settings.unit_numbers;
    let params = serde_json::json!({
        "from": 0,
        "to": to,
        "unit": settings.unit_numbers,
        "min_unit_ms": settings.unit_ms,
    });
    let campaign_id = admin
        .create_campaign(pb::CreateCampaignRequest {
            problem: "primes".into(),
            params_json: params.to_string(),
            name: format!("latency-{}ms", settings.round_trip.as_millis()),
            verify_rate: 0.0,
            max_attempts: 0,
            family: String::new(),
            target_lease_ms: 0,
        })
        .await
        .map_err(|e| LatencyError::Setup(format!("create campaign: {}", e.message())))?
        .into_inner()
        .campaign_id;
    let reset_every = (settings.resets_per_minute > 0.0)
        .then(|| Duration::from_secs_f64(60.0 / settings.resets_per_minute));
    let mut next_reset = reset_every.map(|every| Instant::now() + every / 2);
    let mut resets_done = 0usize;
    loop {
        let status = admin
            .show_campaign(pb::CampaignRef { campaign_id })
            .await
            .map_err(|e| LatencyError::Setup(format!("show campaign: {}", e.message())))?
            .into_inner();
        if status.state != "running" {
            return Ok((campaign_id, status.state == "done", status.value));
        }
        if Instant::now() >= deadline {
            return Ok((campaign_id, false, status.value));
        }
        if let (Some(at), Some(every)) = (next_reset, reset_every) {
            if Instant::now() >= at {
                let proxy = &proxies[resets_done % proxies.len()];
                proxy.set(Mode::Cut);
                tokio::time::sleep(CUT_FOR).await;
                proxy.set(Mode::OPEN);
                resets_done += 1;
                next_reset = Some(at + every);
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Polls the store (read-only) until `workers` workers have registered.
async fn wait_for_workers(
    db: &Path,
    workers: usize,
    deadline: Instant,
) -> Result<(), LatencyError> {
    let registered = std::cell::Cell::new(0i64);
    let count = || {
        let count: i64 = observe::open_read_only(db)
            .and_then(|conn| conn.query_row("SELECT count(*) FROM workers", [], |r| r.get(0)))
            .unwrap_or(0);
        registered.set(count);
        std::future::ready((count >= workers as i64).then_some(()))
    };
    let patience = deadline.saturating_duration_since(Instant::now());
    poll_until("the workers", patience, count)
        .await
        .map_err(|_| {
            LatencyError::Setup(format!(
                "only {} of {workers} workers registered in time",
                registered.get()
            ))
        })
}

/// Reads the figures and checks the invariants in the stopped cluster's database.
fn measure(
    settings: &CaseSettings,
    db: &Path,
    campaign_id: i64,
    finished: bool,
    value: String,
) -> Result<CaseReport, LatencyError> {
    let mut conn = observe::open_read_only(db)?;
    let (created_ms, finished_ms): (i64, Option<i64>) = conn.query_row(
        "SELECT created_ms, finished_ms FROM campaigns WHERE id = ?1",
        [campaign_id],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let (first_grant_ms, last_grant_ms, leases): (Option<i64>, Option<i64>, i64) = conn.query_row(
        "SELECT min(granted_ms), max(granted_ms), count(*) FROM leases
             WHERE campaign_id = ?1",
        [campaign_id],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    let runs: Vec<(i64, i64, f64)> = conn
        .prepare("SELECT worker_id, created_ms, wall_seconds FROM results WHERE campaign_id = ?1")?
        .query_map([campaign_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<Result<_, _>>()?;
    let first_grants: HashMap<i64, i64> = conn
        .prepare(
            "SELECT worker_id, min(granted_ms) FROM leases WHERE campaign_id = ?1
             GROUP BY worker_id",
        )?
        .query_map([campaign_id], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    let unit_wall_seconds: f64 = conn.query_row(
        "SELECT coalesce(sum(wall_seconds), 0) FROM results WHERE campaign_id = ?1",
        [campaign_id],
        |r| r.get(0),
    )?;
    let end_ms = finished_ms.unwrap_or(created_ms);
    let campaign_seconds = (end_ms - created_ms) as f64 / 1000.0;
    let working_seconds = (end_ms - first_grant_ms.unwrap_or(end_ms)) as f64 / 1000.0;
    let slots = (settings.workers * settings.threads) as f64;
    let fraction = |seconds: f64| {
        if seconds > 0.0 {
            unit_wall_seconds / (slots * seconds)
        } else {
            0.0
        }
    };
    let steady = last_grant_ms.map_or(0.0, |last| {
        steady_fraction(settings, &runs, &first_grants, last)
    });
    let expected = reference::primes_between(0, settings.units * settings.unit_numbers).to_string();
    let mut verdict = Verdict::default();
    invariants::check_store(&mut conn, StoreExpectations { honest: true }, &mut verdict);
    check_counted_once(&conn, campaign_id, settings.units, &mut verdict)?;
    verdict.check("answer", !finished || value == expected, || {
        format!("the campaign ended with {value}, a plain sieve says {expected}")
    });
    Ok(CaseReport {
        round_trip_ms: settings.round_trip.as_millis() as u64,
        workers: settings.workers,
        threads: settings.threads,
        units: settings.units,
        unit_ms: settings.unit_ms,
        finished,
        expected,
        value,
        campaign_seconds,
        working_seconds,
        unit_wall_seconds,
        busy_fraction: fraction(working_seconds),
        busy_fraction_from_creation: fraction(campaign_seconds),
        busy_fraction_steady: steady,
        tail_seconds: last_grant_ms.map_or(0.0, |last| (end_ms - last) as f64 / 1000.0),
        leases: leases as u64,
        resets: 0,
        connections: 0,
        checks: verdict.total_checks(),
        violations: verdict.violations,
    })
}

/// Thread occupancy of each worker from its own first grant to the campaign's last grant,
/// over all workers: how busy threads were while units were still waiting for a worker
/// (the start-up wait for an idle worker's next poll and the tail are left out). A unit's
/// run is placed at [receipt - one way - wall, receipt - one way] on the coordinator's clock.
fn steady_fraction(
    settings: &CaseSettings,
    runs: &[(i64, i64, f64)],
    first_grants: &HashMap<i64, i64>,
    last_grant_ms: i64,
) -> f64 {
    let one_way_ms = settings.round_trip.as_secs_f64() * 500.0;
    let last = last_grant_ms as f64;
    let occupied_ms: f64 = runs
        .iter()
        .map(|&(worker, received_ms, wall)| {
            let first = first_grants.get(&worker).copied().unwrap_or(last_grant_ms) as f64;
            let end = received_ms as f64 - one_way_ms;
            let start = end - wall * 1000.0;
            (end.min(last) - start.max(first)).max(0.0)
        })
        .sum();
    let window_ms: f64 = first_grants
        .values()
        .map(|&first| (last - first as f64).max(0.0))
        .sum();
    if window_ms > 0.0 {
        occupied_ms / (settings.threads as f64 * window_ms)
    } else {
        0.0
    }
}

/// Every unit of the campaign is done with exactly one accepted result, and the units
/// cover the range: nothing lost, nothing counted twice.
fn check_counted_once(
    conn: &Connection,
    campaign_id: i64,
    units: u64,
    verdict: &mut Verdict,
) -> Result<(), LatencyError> {
    let mut statement = conn.prepare(
        "SELECT u.id, u.state,
                (SELECT count(*) FROM results r WHERE r.unit_id = u.id AND r.status = 'accepted')
         FROM units u WHERE u.campaign_id = ?1",
    )?;
    let rows: Vec<(i64, String, i64)> = statement
        .query_map([campaign_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<Result<_, _>>()?;
    verdict.check("every_unit_present", rows.len() as u64 == units, || {
        format!(
            "the campaign has {} units, {units} were asked for",
            rows.len()
        )
    });
    for (unit, state, accepted) in rows {
        verdict.check("unit_done_once", state == "done" && accepted == 1, || {
            format!("unit {unit} is {state} with {accepted} accepted result(s)")
        });
    }
    Ok(())
}
