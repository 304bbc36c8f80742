//! The fault plan and its execution. The plan is drawn from the seed before the run starts
//! (fault times, kinds, targets and durations), so a seed always means the same schedule;
//! what the processes are doing when a fault lands still depends on timing.
//!
//! Faults on one target never overlap: the coordinator (kill/restart, unwritable database)
//! is one target, each worker (process faults and its network) is another. Every fault is
//! undone within the fault window.

use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

use crate::cluster::Cluster;
use crate::proxy::Mode;
use crate::rng::{Random, Rng};

/// What a fault does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// SIGKILL a worker; start a new process after `hold`.
    KillWorker,
    /// SIGTERM a worker (it checkpoints and releases); start a new process after `hold`.
    StopWorker,
    /// SIGKILL the coordinator; restart it on the same database after `hold`.
    KillCoordinator,
    /// Reset a worker's connections and refuse new ones for `hold`.
    CutNetwork,
    /// Hold a worker's traffic both ways for `hold`, then deliver it.
    StallNetwork,
    /// Delay every chunk of a worker's traffic by `delay` for `hold`.
    DelayNetwork,
    /// Drop the coordinator's replies to a worker (and reset) for `hold`.
    LoseReplies,
    /// Send every request of a worker to the coordinator twice for `hold` (its connections
    /// are reset first so that new ones are duplicated from their first byte).
    DuplicateRequests,
    /// Make every file write of the coordinator fail for `hold`.
    DbUnwritable,
}

impl FaultKind {
    /// Every kind, in a fixed order.
    pub const ALL: [FaultKind; 9] = [
        FaultKind::KillWorker,
        FaultKind::StopWorker,
        FaultKind::KillCoordinator,
        FaultKind::CutNetwork,
        FaultKind::StallNetwork,
        FaultKind::DelayNetwork,
        FaultKind::LoseReplies,
        FaultKind::DbUnwritable,
        FaultKind::DuplicateRequests,
    ];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::KillWorker => "kill-worker",
            FaultKind::StopWorker => "stop-worker",
            FaultKind::KillCoordinator => "kill-coordinator",
            FaultKind::CutNetwork => "cut-network",
            FaultKind::StallNetwork => "stall-network",
            FaultKind::DelayNetwork => "delay-network",
            FaultKind::LoseReplies => "lose-replies",
            FaultKind::DbUnwritable => "db-unwritable",
            FaultKind::DuplicateRequests => "duplicate-requests",
        }
    }

    /// Parses [`FaultKind::name`].
    pub fn parse(text: &str) -> Option<FaultKind> {
        FaultKind::ALL.into_iter().find(|k| k.name() == text)
    }

    fn targets_coordinator(self) -> bool {
        matches!(self, FaultKind::KillCoordinator | FaultKind::DbUnwritable)
    }

    /// Relative frequency in the plan.
    fn weight(self) -> f64 {
        match self {
            FaultKind::KillWorker => 2.0,
            FaultKind::StopWorker => 1.0,
            FaultKind::KillCoordinator => 1.5,
            FaultKind::CutNetwork => 2.0,
            FaultKind::StallNetwork => 1.5,
            FaultKind::DelayNetwork => 1.5,
            FaultKind::LoseReplies => 1.5,
            FaultKind::DbUnwritable => 1.5,
            FaultKind::DuplicateRequests => 1.5,
        }
    }

    /// How long the fault lasts (ms range).
    fn hold_ms(self) -> (u64, u64) {
        match self {
            FaultKind::KillWorker => (100, 3_000),
            FaultKind::StopWorker => (100, 2_000),
            FaultKind::KillCoordinator => (100, 3_000),
            FaultKind::CutNetwork => (500, 5_000),
            FaultKind::StallNetwork => (500, 5_000),
            FaultKind::DelayNetwork => (2_000, 8_000),
            FaultKind::LoseReplies => (500, 3_000),
            FaultKind::DbUnwritable => (500, 4_000),
            FaultKind::DuplicateRequests => (1_000, 5_000),
        }
    }
}

/// One planned fault.
#[derive(Clone, Debug, Serialize)]
pub struct Fault {
    /// When it starts, from the start of the fault window.
    pub at_ms: u64,
    /// What it does.
    pub kind: FaultKind,
    /// The worker it hits (worker faults only).
    pub worker: Option<usize>,
    /// How long it lasts.
    pub hold_ms: u64,
    /// The added latency (delay faults) or the reset delay (lost replies), in ms.
    pub delay_ms: u64,
}

/// Draws the fault plan for a window of `window`, `workers` workers and a mean gap of
/// `mean_gap` between faults, using only the `enabled` kinds.
pub fn plan(
    rng: &mut Rng,
    window: Duration,
    workers: usize,
    mean_gap: Duration,
    enabled: &[FaultKind],
) -> Vec<Fault> {
    let window_ms = window.as_millis() as u64;
    let weights: Vec<f64> = FaultKind::ALL
        .iter()
        .map(|k| {
            let usable = enabled.contains(k) && (k.targets_coordinator() || workers > 0);
            if usable {
                k.weight()
            } else {
                0.0
            }
        })
        .collect();
    // Targets are busy until these times (ms): [coordinator, worker 0, worker 1, ...].
    let mut busy_until = vec![0u64; workers + 1];
    let mut faults = Vec::new();
    let mut t = 0f64;
    loop {
        t += rng.exponential(mean_gap.as_millis() as f64).max(50.0);
        let at = t as u64;
        if at >= window_ms {
            break;
        }
        let Some(index) = rng.weighted(&weights) else {
            break;
        };
        let kind = FaultKind::ALL[index];
        let (lo, hi) = kind.hold_ms();
        let hold = rng.range_inclusive(lo, hi);
        let worker = (!kind.targets_coordinator())
            .then(|| rng.range_inclusive(0, workers as u64 - 1) as usize);
        let delay = match kind {
            FaultKind::DelayNetwork => rng.range_inclusive(20, 400),
            FaultKind::LoseReplies => rng.range_inclusive(100, 400),
            _ => 0,
        };
        let slot = worker.map_or(0, |w| w + 1);
        // Process restarts take a while: leave a margin before the target's next fault.
        let margin = 1_000;
        if busy_until[slot] > at || at + hold + margin > window_ms {
            continue;
        }
        busy_until[slot] = at + hold + margin;
        faults.push(Fault {
            at_ms: at,
            kind,
            worker,
            hold_ms: hold,
            delay_ms: delay,
        });
    }
    faults
}

/// What happened to one executed fault.
#[derive(Clone, Debug, Serialize)]
pub struct FaultRecord {
    /// The fault.
    #[serde(flatten)]
    pub fault: Fault,
    /// When it was applied, ms from the start of the window.
    pub applied_ms: u64,
    /// When it was undone, ms from the start of the window.
    pub healed_ms: u64,
    /// Errors while applying or undoing it.
    pub error: Option<String>,
}

/// Runs `plan` against `cluster`, starting now; returns when every fault has been undone.
pub async fn execute(cluster: Arc<Cluster>, plan: Vec<Fault>) -> Vec<FaultRecord> {
    let start = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for fault in plan {
        let cluster = cluster.clone();
        tasks.spawn(async move {
            tokio::time::sleep_until(start + Duration::from_millis(fault.at_ms)).await;
            let applied_ms = start.elapsed().as_millis() as u64;
            let error = apply(&cluster, &fault).await.err();
            let healed_ms = start.elapsed().as_millis() as u64;
            FaultRecord {
                fault,
                applied_ms,
                healed_ms,
                error,
            }
        });
    }
    let mut records = Vec::new();
    while let Some(done) = tasks.join_next().await {
        if let Ok(record) = done {
            records.push(record);
        }
    }
    records.sort_by_key(|r| r.fault.at_ms);
    records
}

/// Applies one fault, holds it, and undoes it.
async fn apply(cluster: &Cluster, fault: &Fault) -> Result<(), String> {
    let hold = Duration::from_millis(fault.hold_ms);
    let worker = fault.worker.unwrap_or(0);
    match fault.kind {
        FaultKind::KillWorker => {
            cluster.kill_worker(worker).await;
            tokio::time::sleep(hold).await;
            cluster
                .restart_worker(worker)
                .await
                .map_err(|e| e.to_string())
        }
        FaultKind::StopWorker => {
            cluster.stop_worker(worker).await;
            tokio::time::sleep(hold).await;
            cluster
                .restart_worker(worker)
                .await
                .map_err(|e| e.to_string())
        }
        FaultKind::KillCoordinator => {
            cluster.kill_coordinator().await;
            tokio::time::sleep(hold).await;
            cluster
                .restart_coordinator()
                .await
                .map_err(|e| e.to_string())
        }
        FaultKind::DbUnwritable => {
            let applied = cluster.set_db_writable(false).await;
            tokio::time::sleep(hold).await;
            let healed = cluster.set_db_writable(true).await;
            applied.and(healed).map_err(|e| e.to_string())
        }
        FaultKind::DuplicateRequests => {
            // Reset what is open: the worker reconnects, and its new connections are
            // duplicated from their first byte.
            cluster.set_network(worker, Mode::Cut);
            tokio::time::sleep(Duration::from_millis(50)).await;
            cluster.set_network(worker, Mode::Duplicate);
            tokio::time::sleep(hold).await;
            cluster.set_network(worker, Mode::OPEN);
            Ok(())
        }
        FaultKind::CutNetwork
        | FaultKind::StallNetwork
        | FaultKind::DelayNetwork
        | FaultKind::LoseReplies => {
            let mode = match fault.kind {
                FaultKind::CutNetwork => Mode::Cut,
                FaultKind::StallNetwork => Mode::Stall,
                FaultKind::DelayNetwork => Mode::Pass {
                    delay: Duration::from_millis(fault.delay_ms),
                },
                _ => Mode::LoseReplies {
                    after: Duration::from_millis(fault.delay_ms),
                },
            };
            cluster.set_network(worker, mode);
            tokio::time::sleep(hold).await;
            cluster.set_network(worker, Mode::OPEN);
            Ok(())
        }
    }
}

/// Faults per kind, for reports.
pub fn count_by_kind(records: &[FaultRecord]) -> BTreeMap<&'static str, u64> {
    let mut counts = BTreeMap::new();
    for record in records {
        *counts.entry(record.fault.kind.name()).or_insert(0) += 1;
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_are_deterministic_non_overlapping_and_inside_the_window() {
        let window = Duration::from_secs(120);
        let a = plan(
            &mut crate::rng::seeded(3),
            window,
            3,
            Duration::from_millis(1500),
            &FaultKind::ALL,
        );
        let b = plan(
            &mut crate::rng::seeded(3),
            window,
            3,
            Duration::from_millis(1500),
            &FaultKind::ALL,
        );
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            serde_json::to_string(&b).unwrap()
        );
        assert!(a.len() > 20, "{} faults", a.len());
        let mut last_end: BTreeMap<Option<usize>, u64> = BTreeMap::new();
        for fault in &a {
            assert!(fault.at_ms + fault.hold_ms <= 120_000);
            let key = if fault.kind.targets_coordinator() {
                None
            } else {
                fault.worker
            };
            let end = last_end.entry(key).or_insert(0);
            assert!(fault.at_ms >= *end, "overlap at {fault:?}");
            *end = fault.at_ms + fault.hold_ms;
        }
        for kind in FaultKind::ALL {
            assert!(a.iter().any(|f| f.kind == kind), "{kind:?} never planned");
        }
        let only = plan(
            &mut crate::rng::seeded(3),
            window,
            3,
            Duration::from_millis(1500),
            &[FaultKind::CutNetwork],
        );
        assert!(only.iter().all(|f| f.kind == FaultKind::CutNetwork));
    }
}
