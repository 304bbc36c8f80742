//! The cluster under test: one coordinator process, several worker processes, each worker
//! behind its own fault proxy, and the operations the fault scheduler performs on them.
//! Every process start and every exit is counted; an exit the harness did not cause is
//! recorded as a violation (and the process is restarted so the run can go on).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex as StdMutex;
use std::time::Duration;
use tokio::sync::{watch, Mutex};

use crate::logs;
use crate::procs::{CoordinatorProc, CoordinatorSettings, WorkerProc};
use crate::proxy::{Mode, Proxy};
use crate::ChaosError;
use grind_kit::binaries::Binaries;
use grind_kit::launch::tail_of;
use grind_kit::limits::set_file_size_limit;

/// How long a process start may take before the run gives up.
pub const START_PATIENCE: Duration = Duration::from_secs(90);

/// How the cluster is laid out.
#[derive(Clone, Debug)]
pub struct ClusterSettings {
    /// The binaries under test.
    pub binaries: Binaries,
    /// Directory for the database and the logs.
    pub dir: PathBuf,
    /// Worker processes.
    pub workers: usize,
    /// Solver threads per worker.
    pub threads: usize,
    /// Coordinator flags.
    pub coordinator: CoordinatorSettings,
}

/// Counts of what happened to the processes.
#[derive(Debug, Default)]
pub struct ProcessCounts {
    /// Coordinator processes started (the first one included).
    pub coordinator_starts: AtomicU64,
    /// Worker processes started (the first ones included).
    pub worker_starts: AtomicU64,
    /// Exits nobody asked for.
    pub unexpected_exits: AtomicU64,
}

struct WorkerSlot {
    name: String,
    proxy: Proxy,
    proc: Mutex<Option<WorkerProc>>,
    incarnation: AtomicU32,
}

/// The running cluster.
pub struct Cluster {
    settings: ClusterSettings,
    db: PathBuf,
    coordinator: Mutex<Option<CoordinatorProc>>,
    coordinator_incarnation: AtomicU32,
    target: watch::Sender<Option<SocketAddr>>,
    workers: Vec<WorkerSlot>,
    counts: ProcessCounts,
    problems: StdMutex<Vec<String>>,
    /// Soft file-size limit to restore when the database becomes writable again.
    saved_limit: StdMutex<Option<Option<u64>>>,
}

impl Cluster {
    /// Starts the coordinator, one proxy per worker and the workers.
    pub async fn start(settings: ClusterSettings) -> Result<Cluster, ChaosError> {
        std::fs::create_dir_all(settings.dir.join("logs")).map_err(|e| {
            ChaosError::Setup(format!("cannot create {}: {e}", settings.dir.display()))
        })?;
        let (target, target_rx) = watch::channel(None);
        let mut workers = Vec::new();
        for index in 0..settings.workers {
            let proxy = Proxy::start(target_rx.clone())
                .await
                .map_err(|e| ChaosError::Setup(format!("cannot start a proxy: {e}")))?;
            workers.push(WorkerSlot {
                name: format!("chaos-w{index}"),
                proxy,
                proc: Mutex::new(None),
                incarnation: AtomicU32::new(0),
            });
        }
        let cluster = Cluster {
            db: settings.dir.join("grind.db"),
            settings,
            coordinator: Mutex::new(None),
            coordinator_incarnation: AtomicU32::new(0),
            target,
            workers,
            counts: ProcessCounts::default(),
            problems: StdMutex::new(Vec::new()),
            saved_limit: StdMutex::new(None),
        };
        cluster.start_coordinator().await?;
        for index in 0..cluster.workers.len() {
            cluster.start_worker(index).await?;
        }
        Ok(cluster)
    }

    /// The database file.
    pub fn db(&self) -> &Path {
        &self.db
    }

    /// The run directory.
    pub fn dir(&self) -> &Path {
        &self.settings.dir
    }

    /// Number of worker slots.
    pub fn worker_count(&self) -> usize {
        self.workers.len()
    }

    /// The coordinator's URL for admin calls, when it is up.
    pub fn admin_url(&self) -> Option<String> {
        self.target.borrow().map(|addr| format!("http://{addr}"))
    }

    /// Waits until the coordinator is up (or `patience` passes) and returns its URL.
    pub async fn wait_admin_url(&self, patience: Duration) -> Option<String> {
        let mut rx = self.target.subscribe();
        let addr = tokio::time::timeout(patience, async {
            rx.wait_for(|addr| addr.is_some())
                .await
                .ok()
                .and_then(|a| *a)
        })
        .await;
        addr.ok().flatten().map(|a| format!("http://{a}"))
    }

    /// Process counters.
    pub fn counts(&self) -> &ProcessCounts {
        &self.counts
    }

    /// Problems seen with the processes (unexpected exits), for the report.
    pub fn problems(&self) -> Vec<String> {
        self.problems.lock().map(|p| p.clone()).unwrap_or_default()
    }

    fn problem(&self, text: String) {
        if let Ok(mut problems) = self.problems.lock() {
            problems.push(text);
        }
    }

    /// Log files of every process started so far.
    pub fn log_dir(&self) -> PathBuf {
        self.settings.dir.join("logs")
    }

    async fn start_coordinator(&self) -> Result<(), ChaosError> {
        let mut slot = self.coordinator.lock().await;
        self.start_coordinator_locked(&mut slot).await
    }

    async fn start_coordinator_locked(
        &self,
        slot: &mut Option<CoordinatorProc>,
    ) -> Result<(), ChaosError> {
        let incarnation = self.coordinator_incarnation.fetch_add(1, Ordering::SeqCst);
        let log = self
            .log_dir()
            .join(format!("coordinator.{incarnation}.log"));
        let proc = CoordinatorProc::start(
            &self.settings.binaries,
            &self.db,
            log,
            &self.settings.coordinator,
            START_PATIENCE,
        )
        .await?;
        self.counts
            .coordinator_starts
            .fetch_add(1, Ordering::SeqCst);
        self.target.send_replace(Some(proc.addr));
        *slot = Some(proc);
        Ok(())
    }

    /// SIGKILLs the coordinator (workers' connections through the proxies then fail).
    pub async fn kill_coordinator(&self) {
        let mut slot = self.coordinator.lock().await;
        self.target.send_replace(None);
        if let Some(mut proc) = slot.take() {
            proc.kill().await;
        }
    }

    /// Starts the coordinator again on the same database (on a new port; the proxies follow).
    pub async fn restart_coordinator(&self) -> Result<(), ChaosError> {
        let mut slot = self.coordinator.lock().await;
        if slot.is_some() {
            return Ok(());
        }
        self.start_coordinator_locked(&mut slot).await
    }

    /// Makes the database unwritable for the running coordinator (`true`) or writable again.
    pub async fn set_db_writable(&self, writable: bool) -> Result<(), ChaosError> {
        let slot = self.coordinator.lock().await;
        let Some(proc) = slot.as_ref() else {
            return Ok(());
        };
        let mut saved = self
            .saved_limit
            .lock()
            .map_err(|_| ChaosError::Fault("limit state poisoned".into()))?;
        if writable {
            if let Some(previous) = saved.take() {
                set_file_size_limit(proc.pid, previous).map_err(fault)?;
            }
        } else if saved.is_none() {
            *saved = Some(set_file_size_limit(proc.pid, Some(0)).map_err(fault)?);
        }
        Ok(())
    }

    async fn start_worker(&self, index: usize) -> Result<(), ChaosError> {
        let slot = &self.workers[index];
        let mut proc = slot.proc.lock().await;
        if proc.is_some() {
            return Ok(());
        }
        let incarnation = slot.incarnation.fetch_add(1, Ordering::SeqCst);
        let log = self
            .log_dir()
            .join(format!("worker-{index}.{incarnation}.log"));
        let events = self.log_dir().join(format!(
            "worker-{index}.{incarnation}{}",
            logs::EVENTS_SUFFIX
        ));
        let url = format!("http://{}", slot.proxy.addr());
        *proc = Some(WorkerProc::start_traced(
            &self.settings.binaries,
            &url,
            &slot.name,
            self.settings.threads,
            log,
            Some(&events),
        )?);
        self.counts.worker_starts.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    /// SIGKILLs worker `index`.
    pub async fn kill_worker(&self, index: usize) {
        if let Some(mut proc) = self.workers[index].proc.lock().await.take() {
            proc.kill().await;
        }
    }

    /// SIGTERMs worker `index` (it checkpoints and releases its leases) and waits for it.
    pub async fn stop_worker(&self, index: usize) {
        if let Some(mut proc) = self.workers[index].proc.lock().await.take() {
            if proc.terminate(Duration::from_secs(15)).await.is_none() {
                self.problem(format!(
                    "worker {index} did not exit within 15 s of SIGTERM (killed)"
                ));
            }
        }
    }

    /// Starts worker `index` again (a new process, which registers anew).
    pub async fn restart_worker(&self, index: usize) -> Result<(), ChaosError> {
        self.start_worker(index).await
    }

    /// Sets the network between worker `index` and the coordinator.
    pub fn set_network(&self, index: usize, mode: Mode) {
        self.workers[index].proxy.set(mode);
    }

    /// Heals every network fault.
    pub fn heal_networks(&self) {
        for slot in &self.workers {
            slot.proxy.set(Mode::OPEN);
        }
    }

    /// Connections reset by all proxies so far.
    pub fn proxy_resets(&self) -> u64 {
        self.workers
            .iter()
            .map(|w| w.proxy.stats().resets.load(Ordering::Relaxed))
            .sum()
    }

    /// Shadow connections the proxies opened to duplicate requests, and the bytes sent twice.
    pub fn duplicated(&self) -> (u64, u64) {
        self.workers.iter().fold((0, 0), |(c, b), w| {
            let stats = w.proxy.stats();
            (
                c + stats.shadow_connections.load(Ordering::Relaxed),
                b + stats.duplicated_bytes.load(Ordering::Relaxed),
            )
        })
    }

    /// Checks that no process exited on its own; restarts any that did and records it.
    pub async fn supervise(&self) {
        {
            let mut slot = self.coordinator.lock().await;
            if let Some(status) = slot.as_mut().and_then(|p| p.exited()) {
                let log = slot.as_ref().map(|p| p.log.clone()).unwrap_or_default();
                self.counts.unexpected_exits.fetch_add(1, Ordering::SeqCst);
                self.problem(format!(
                    "the coordinator exited on its own ({status}); log {}:\n{}",
                    log.display(),
                    tail_of(&log, 1500)
                ));
                self.target.send_replace(None);
                *slot = None;
                if let Err(e) = self.start_coordinator_locked(&mut slot).await {
                    self.problem(format!("restarting the coordinator failed: {e}"));
                }
            }
        }
        for index in 0..self.workers.len() {
            let exited = {
                let mut proc = self.workers[index].proc.lock().await;
                match proc.as_mut().and_then(|p| p.exited()) {
                    Some(status) => {
                        let log = proc.as_ref().map(|p| p.log.clone()).unwrap_or_default();
                        *proc = None;
                        Some((status, log))
                    }
                    None => None,
                }
            };
            if let Some((status, log)) = exited {
                self.counts.unexpected_exits.fetch_add(1, Ordering::SeqCst);
                self.problem(format!(
                    "worker {index} exited on its own ({status}); log {}:\n{}",
                    log.display(),
                    tail_of(&log, 1500)
                ));
                if let Err(e) = self.start_worker(index).await {
                    self.problem(format!("restarting worker {index} failed: {e}"));
                }
            }
        }
    }

    /// Makes sure everything runs and nothing is faulted: networks healed, the database
    /// writable, every process up.
    pub async fn heal_all(&self) -> Result<(), ChaosError> {
        self.heal_networks();
        self.set_db_writable(true).await?;
        self.restart_coordinator().await?;
        for index in 0..self.workers.len() {
            self.start_worker(index).await?;
        }
        Ok(())
    }

    /// Stops every process: workers with SIGTERM, then the coordinator with SIGTERM.
    pub async fn shutdown(&self) {
        for index in 0..self.workers.len() {
            self.stop_worker(index).await;
        }
        let mut slot = self.coordinator.lock().await;
        if let Some(mut proc) = slot.take() {
            if proc.terminate(Duration::from_secs(15)).await.is_none() {
                self.problem("the coordinator did not exit within 15 s of SIGTERM".into());
            }
        }
        self.target.send_replace(None);
    }
}

/// A fault that could not be applied or undone.
fn fault(error: grind_kit::KitError) -> ChaosError {
    ChaosError::Fault(error.to_string())
}
