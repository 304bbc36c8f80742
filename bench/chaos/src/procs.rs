//! The real processes under test: `grind serve` and `grind-worker`, started, SIGKILLed,
//! SIGTERMed and restarted. Their stderr goes to one log file per incarnation (written by
//! the kernel straight to the file, so nothing is lost when a process is killed).

use grind_kit::launch::{listening_addr, serve_command, sigterm, tail_of, worker_command};
use std::fs::File;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdout, Command};

use grind_kit::binaries::Binaries;
use grind_proto::v1 as pb;
use grind_proto::v1::admin_client::AdminClient;

use crate::ChaosError;

/// How the coordinator is run.
#[derive(Clone, Debug)]
pub struct CoordinatorSettings {
    /// `--lease-ttl-ms`.
    pub lease_ttl_ms: u64,
    /// `--heartbeat-ms`.
    pub heartbeat_ms: u64,
    /// `--max-attempts`.
    pub max_attempts: u32,
}

/// A running `grind serve`.
pub struct CoordinatorProc {
    child: Child,
    /// Kept open: the coordinator must never write to a closed pipe.
    _stdout: BufReader<ChildStdout>,
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its process id.
    pub pid: u32,
    /// Its log file.
    pub log: PathBuf,
}

fn log_file(path: &Path) -> Result<File, ChaosError> {
    File::create(path)
        .map_err(|e| ChaosError::Setup(format!("cannot create {}: {e}", path.display())))
}

impl CoordinatorProc {
    /// Starts `grind serve` on a free loopback port over `db` and waits (up to `patience`)
    /// for it to say where it listens. `SIGXFSZ` is ignored in the child, so that a lowered
    /// file-size limit (the "database unwritable" fault) makes writes fail with `EFBIG`
    /// instead of killing it.
    pub async fn start(
        bins: &Binaries,
        db: &Path,
        log: PathBuf,
        settings: &CoordinatorSettings,
        patience: Duration,
    ) -> Result<CoordinatorProc, ChaosError> {
        let mut cmd = Command::from(serve_command(
            &bins.grind,
            "127.0.0.1:0",
            db,
            settings.lease_ttl_ms,
            settings.heartbeat_ms,
        ));
        cmd.args(["--max-attempts", &settings.max_attempts.to_string()])
            // Straight to a file, as with `grind serve 2>> grind.log`: under the "database
            // unwritable" fault the coordinator's log writes fail too, as they would on a
            // full disk (lines logged during the fault are lost).
            .stderr(log_file(&log)?)
            .kill_on_drop(true);
        // SAFETY: only async-signal-safe work between fork and exec: one signal(2) call.
        unsafe {
            cmd.pre_exec(|| {
                libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                Ok(())
            });
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| ChaosError::Setup(format!("cannot start grind serve: {e}")))?;
        let pid = child.id().unwrap_or(0);
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| ChaosError::Setup("no stdout".into()))?;
        let mut stdout = BufReader::new(stdout);
        let mut line = String::new();
        let read = tokio::time::timeout(patience, stdout.read_line(&mut line)).await;
        match (read, listening_addr(&line)) {
            (Ok(Ok(_)), Some(addr)) => {
                let mut proc = CoordinatorProc {
                    child,
                    _stdout: stdout,
                    addr,
                    pid,
                    log,
                };
                // It prints its address before its start-up write (every active lease gets
                // a full lease time, event `coordinator_started`) and serves only after it:
                // the first answered call says the start is complete.
                proc.wait_ready(patience).await?;
                Ok(proc)
            }
            _ => {
                let _ = child.start_kill();
                let _ = child.wait().await;
                let tail = tail_of(&log, 2000);
                Err(ChaosError::Process(format!(
                    "grind serve did not start (said {line:?}); log:\n{tail}"
                )))
            }
        }
    }

    async fn wait_ready(&mut self, patience: Duration) -> Result<(), ChaosError> {
        let deadline = tokio::time::Instant::now() + patience;
        let url = format!("http://{}", self.addr);
        loop {
            let answered = async {
                let mut admin = AdminClient::connect(url.clone()).await.ok()?;
                admin.list_problems(pb::ListProblemsRequest {}).await.ok()
            };
            if tokio::time::timeout(Duration::from_secs(5), answered)
                .await
                .ok()
                .flatten()
                .is_some()
            {
                return Ok(());
            }
            if let Some(status) = self.exited() {
                return Err(ChaosError::Process(format!(
                    "grind serve exited during start-up ({status}); log:\n{}",
                    tail_of(&self.log, 2000)
                )));
            }
            if tokio::time::Instant::now() >= deadline {
                self.kill().await;
                return Err(ChaosError::Process(format!(
                    "grind serve did not answer within {patience:?}"
                )));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// SIGKILL, then reap.
    pub async fn kill(&mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }

    /// SIGTERM, then SIGKILL if it has not exited within `grace`.
    pub async fn terminate(&mut self, grace: Duration) -> Option<ExitStatus> {
        terminate(&mut self.child, self.pid, grace).await
    }

    /// The exit status if it has exited.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }
}

/// A running `grind-worker`.
pub struct WorkerProc {
    child: Child,
    /// Its process id.
    pub pid: u32,
    /// Its log file.
    pub log: PathBuf,
}

impl WorkerProc {
    /// Starts `grind-worker` against `url` with `threads` solver threads.
    pub fn start(
        bins: &Binaries,
        url: &str,
        name: &str,
        threads: usize,
        log: PathBuf,
    ) -> Result<WorkerProc, ChaosError> {
        WorkerProc::start_traced(bins, url, name, threads, log, None)
    }

    /// As [`WorkerProc::start`], writing the worker's event stream (`--events`) to `events`.
    pub fn start_traced(
        bins: &Binaries,
        url: &str,
        name: &str,
        threads: usize,
        log: PathBuf,
        events: Option<&Path>,
    ) -> Result<WorkerProc, ChaosError> {
        let mut cmd = Command::from(worker_command(&bins.worker, url, Some(name), threads));
        if let Some(events) = events {
            cmd.arg("--events").arg(events);
        }
        cmd.stdout(Stdio::null())
            .stderr(log_file(&log)?)
            .kill_on_drop(true);
        let child = cmd
            .spawn()
            .map_err(|e| ChaosError::Setup(format!("cannot start grind-worker: {e}")))?;
        let pid = child.id().unwrap_or(0);
        Ok(WorkerProc { child, pid, log })
    }

    /// SIGKILL, then reap.
    pub async fn kill(&mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }

    /// SIGTERM (the worker checkpoints and hands its leases back), then SIGKILL if it has
    /// not exited within `grace`.
    pub async fn terminate(&mut self, grace: Duration) -> Option<ExitStatus> {
        terminate(&mut self.child, self.pid, grace).await
    }

    /// The exit status if it has exited.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }
}

async fn terminate(child: &mut Child, pid: u32, grace: Duration) -> Option<ExitStatus> {
    sigterm(pid);
    match tokio::time::timeout(grace, child.wait()).await {
        Ok(Ok(status)) => Some(status),
        _ => {
            let _ = child.start_kill();
            let _ = child.wait().await;
            None
        }
    }
}
