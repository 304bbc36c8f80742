//! One chaos run: start the cluster, run the workload while the fault plan executes, heal
//! everything, let the campaigns finish, stop the processes, and check every invariant.

use grind_proto::v1 as pb;
use grind_proto::v1::admin_client::AdminClient;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

use crate::cluster::{Cluster, ClusterSettings};
use crate::faults::{self, FaultKind};
use crate::floors::{self, Scale};
use crate::invariants::{self, AdminView, RunFacts};
use crate::logs;
use crate::observe::{self, Observer};
use crate::procs::CoordinatorSettings;
use crate::report::{RunReport, StoreFigures};
use crate::rng;
use crate::workload::{self, Ledger, WorkloadSettings};
use crate::ChaosError;
use grind_kit::binaries::Binaries;

/// Everything a run needs.
#[derive(Clone, Debug)]
pub struct RunSettings {
    /// Seed of the fault plan and the workload.
    pub seed: u64,
    /// How long faults are injected (and new campaigns created).
    pub window: Duration,
    /// How long the campaigns get to finish after the window.
    pub drain: Duration,
    /// Worker processes.
    pub workers: usize,
    /// Solver threads per worker.
    pub threads: usize,
    /// Mean time between faults.
    pub mean_gap: Duration,
    /// Fault kinds to inject.
    pub enabled: Vec<FaultKind>,
    /// Coordinator flags.
    pub coordinator: CoordinatorSettings,
    /// Campaign sizes.
    pub workload: WorkloadSettings,
    /// Directory for the database, logs and the report.
    pub dir: PathBuf,
    /// The binaries under test.
    pub binaries: Binaries,
}

/// Runs once and returns the report (violations included); `Err` only when the harness
/// itself could not run.
pub async fn run(settings: RunSettings) -> Result<RunReport, ChaosError> {
    let started = Instant::now();
    let cluster = Arc::new(
        Cluster::start(ClusterSettings {
            binaries: settings.binaries.clone(),
            dir: settings.dir.clone(),
            workers: settings.workers,
            threads: settings.threads,
            coordinator: settings.coordinator.clone(),
        })
        .await?,
    );
    let root = rng::seeded(settings.seed);

    // Watch the store and the processes while the run goes on.
    let stop = Arc::new(AtomicBool::new(false));
    let observer = Arc::new(Mutex::new(Observer::new(cluster.db())));
    let watcher = {
        let (stop, observer) = (stop.clone(), observer.clone());
        std::thread::Builder::new()
            .name("chaos-observer".into())
            .spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    if let Ok(mut observer) = observer.lock() {
                        observer.look();
                    }
                    std::thread::sleep(Duration::from_millis(500));
                }
            })
            .map_err(|e| ChaosError::Setup(format!("cannot start the observer: {e}")))?
    };
    let supervisor = {
        let (stop, cluster) = (stop.clone(), cluster.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                cluster.supervise().await;
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        })
    };

    let plan = faults::plan(
        &mut rng::fork(&root, 1),
        settings.window,
        settings.workers,
        settings.mean_gap,
        &settings.enabled,
    );
    let planned = plan.len();
    let window_start = Instant::now();
    let ledger = Arc::new(Ledger::default());
    let workload = tokio::spawn(workload::run(
        cluster.clone(),
        ledger.clone(),
        rng::fork(&root, 2),
        settings.workload,
        window_start + settings.window,
        window_start + settings.window + settings.drain,
    ));
    let records = faults::execute(cluster.clone(), plan).await;
    cluster.heal_all().await?;
    let drained = workload.await.unwrap_or(false);

    // The campaigns as the Admin API shows them, then stop everything and read the store.
    let campaigns = ledger.snapshot();
    let admin = admin_views(&cluster, &campaigns).await;
    stop.store(true, Ordering::SeqCst);
    let _ = supervisor.await;
    let _ = watcher.join();
    cluster.shutdown().await;
    let mut observer = Arc::try_unwrap(observer)
        .ok()
        .and_then(|m| m.into_inner().ok())
        .unwrap_or_else(|| Observer::new(cluster.db()));
    observer.look();

    let mut problems = cluster.problems();
    problems.extend(logs::panics(&cluster.log_dir()));
    let heard = logs::heard(&cluster.log_dir());
    problems.extend(
        heard
            .malformed
            .iter()
            .map(|line| format!("not a worker event: {line}")),
    );
    let accepted = heard.accepted;
    let mut conn = observe::open_read_only(cluster.db())?;
    let facts = RunFacts {
        campaigns: &campaigns,
        admin: &admin,
        accepted_leases: &accepted,
        coordinator_starts: cluster.counts().coordinator_starts.load(Ordering::SeqCst),
        observer: &observer,
        process_problems: &problems,
    };
    let mut verdict = invariants::check_run(&mut conn, &facts);
    verdict.check("campaigns_finish", drained, || {
        format!(
            "not every campaign finished within {:?} after the fault window",
            settings.drain
        )
    });
    // Last: every check must have verified as many facts as the run makes likely.
    let scale = Scale::read(&conn, campaigns.len() as u64)?;
    floors::require(&mut verdict, &floors::floors(&scale));
    let store = StoreFigures::read(&conn)?;

    let mut by_problem = BTreeMap::new();
    for tracked in &campaigns {
        *by_problem
            .entry(tracked.spec.problem.to_string())
            .or_insert(0) += 1;
    }
    let report = RunReport {
        seed: settings.seed,
        dir: settings.dir.display().to_string(),
        window_seconds: settings.window.as_secs_f64(),
        elapsed_seconds: started.elapsed().as_secs_f64(),
        drained,
        faults_planned: planned,
        faults: faults::count_by_kind(&records),
        fault_errors: records
            .iter()
            .filter_map(|r| {
                r.error
                    .as_ref()
                    .map(|e| format!("{} at {} ms: {e}", r.fault.kind.name(), r.fault.at_ms))
            })
            .collect(),
        coordinator_starts: cluster.counts().coordinator_starts.load(Ordering::SeqCst),
        worker_starts: cluster.counts().worker_starts.load(Ordering::SeqCst),
        proxy_resets: cluster.proxy_resets(),
        duplicated_connections: cluster.duplicated().0,
        duplicated_bytes: cluster.duplicated().1,
        campaigns: by_problem,
        acknowledged_results: accepted.len(),
        store,
        observer_snapshots: observer.snapshots,
        total_checks: verdict.total_checks(),
        ok: verdict.ok(),
        checks: verdict.checks,
        violations: verdict.violations,
    };
    write_artifacts(&settings.dir, &report, &records, &campaigns);
    Ok(report)
}

fn write_artifacts(
    dir: &std::path::Path,
    report: &RunReport,
    records: &[faults::FaultRecord],
    campaigns: &[workload::Tracked],
) {
    let faults: String = records
        .iter()
        .filter_map(|r| serde_json::to_string(r).ok())
        .map(|line| line + "\n")
        .collect();
    let _ = std::fs::write(dir.join("faults.jsonl"), faults);
    if let Ok(text) = serde_json::to_string_pretty(campaigns) {
        let _ = std::fs::write(dir.join("campaigns.json"), text);
    }
    if let Ok(text) = serde_json::to_string_pretty(report) {
        let _ = std::fs::write(dir.join("report.json"), text);
    }
}

/// Reads every tracked campaign through the Admin API (retrying while the coordinator
/// restarts).
async fn admin_views(
    cluster: &Cluster,
    campaigns: &[workload::Tracked],
) -> BTreeMap<i64, AdminView> {
    let mut views = BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    while Instant::now() < deadline && views.len() < campaigns.len() {
        let Some(url) = cluster.wait_admin_url(Duration::from_secs(10)).await else {
            continue;
        };
        let Ok(mut admin) = AdminClient::connect(url).await else {
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        };
        for tracked in campaigns {
            let id = tracked.campaign_id;
            if views.contains_key(&id) {
                continue;
            }
            let status = admin
                .status(pb::StatusRequest {
                    campaign_id: id,
                    with_results: true,
                })
                .await;
            match status {
                Ok(reply) => {
                    let reply = reply.into_inner();
                    if let Some(status) = reply.campaigns.into_iter().next() {
                        views.insert(
                            id,
                            AdminView {
                                status,
                                results: reply.results,
                            },
                        );
                    }
                }
                Err(_) => break,
            }
        }
    }
    views
}
