//! Test harness: real `grind serve` and `grind-worker` processes on loopback, an admin
//! client, a raw worker client for playing a (possibly lying) worker, and condition waits
//! with timeouts instead of sleeps.

#![allow(dead_code)]

pub mod http;

use grind_proto::v1 as pb;
use grind_proto::v1::admin_client::AdminClient;
use grind_proto::v1::worker_client::WorkerClient;
use std::future::Future;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tonic::transport::Channel;

/// Path of the `grind` binary under test.
pub fn grind_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_grind"))
}

/// Creates a token offline with `grind token create` (an admin token when `admin`).
pub fn create_token(db: &Path, admin: bool) -> String {
    let mut cmd = Command::new(grind_bin());
    cmd.args(["token", "create", "--db"]).arg(db);
    if admin {
        cmd.arg("--admin");
    }
    let out = cmd.output().expect("grind token create");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// Path of the `grind-worker` binary (built beside `grind` by `cargo test --workspace`).
pub fn worker_bin() -> PathBuf {
    let path = grind_bin().with_file_name("grind-worker");
    assert!(
        path.exists(),
        "{} is missing: run the tests with `cargo test --workspace` (or `cargo build --workspace` first)",
        path.display()
    );
    path
}

/// Polls `check` every 50 ms until it returns `Some`, or panics after `timeout` naming `what`.
pub async fn wait_for<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A child process whose stderr is collected, killed when dropped.
pub struct Proc {
    pub child: Child,
    pub log: Arc<Mutex<String>>,
}

impl Proc {
    fn spawn(mut cmd: Command) -> (Proc, Option<std::process::ChildStdout>) {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env("RUST_LOG", "info");
        let mut child = cmd.spawn().expect("spawn process");
        let stderr = child.stderr.take().expect("stderr");
        let log = Arc::new(Mutex::new(String::new()));
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut log = sink.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        let stdout = child.stdout.take();
        (Proc { child, log }, stdout)
    }

    /// Spawns `cmd` with its output collected.
    pub fn spawn_command(cmd: Command) -> Proc {
        Proc::spawn(cmd).0
    }

    /// Everything the process wrote to stderr so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// SIGKILL, and reap.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Sends SIGTERM.
    pub fn terminate(&self) {
        // SAFETY: plain kill(2) on our own child's pid.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
    }

    /// Waits for exit up to `timeout`; returns the exit status if it exited.
    pub async fn wait_exit(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A coordinator process on a database in a temporary directory.
pub struct Coordinator {
    pub proc: Proc,
    pub url: String,
    pub db: PathBuf,
    pub ttl_ms: u64,
}

impl Coordinator {
    /// Its `host:port`.
    pub fn addr(&self) -> &str {
        self.url.trim_start_matches("http://")
    }

    /// A new coordinator on the same database, address and lease time (after this one was
    /// killed: a restart).
    pub fn start_again(&self) -> Coordinator {
        start_coordinator_on(self.db.clone(), self.addr(), self.ttl_ms, &[])
    }
}

/// Starts `grind serve` on a free loopback port with a short lease time.
pub fn start_coordinator(dir: &Path, ttl_ms: u64, extra: &[&str]) -> Coordinator {
    start_coordinator_on(dir.join("grind.db"), "127.0.0.1:0", ttl_ms, extra)
}

/// Starts `grind serve` on `listen` with database `db`.
pub fn start_coordinator_on(db: PathBuf, listen: &str, ttl_ms: u64, extra: &[&str]) -> Coordinator {
    let mut cmd = Command::new(grind_bin());
    let heartbeat = (ttl_ms / 5).max(20).to_string();
    cmd.args(["serve", "--listen", listen, "--db"])
        .arg(&db)
        .args([
            "--lease-ttl-ms",
            &ttl_ms.to_string(),
            "--heartbeat-ms",
            &heartbeat,
        ])
        .args(extra);
    let (proc, stdout) = Proc::spawn(cmd);
    let mut line = String::new();
    BufReader::new(stdout.expect("stdout"))
        .read_line(&mut line)
        .expect("read the listening line");
    let addr = line
        .trim()
        .rsplit(' ')
        .next()
        .unwrap_or_default()
        .to_string();
    assert!(
        line.contains("listening on"),
        "coordinator did not start: {line:?}\n{}",
        proc.log()
    );
    Coordinator {
        proc,
        url: format!("http://{addr}"),
        db,
        ttl_ms,
    }
}

/// Starts a `grind-worker` process.
pub fn start_worker(url: &str, name: &str, threads: usize) -> Proc {
    let mut cmd = Command::new(worker_bin());
    cmd.args(["--coordinator", url, "--name", name, "--threads"])
        .arg(threads.to_string());
    Proc::spawn(cmd).0
}

/// An admin client.
pub async fn admin(url: &str) -> AdminClient<Channel> {
    wait_for("the admin API", Duration::from_secs(20), || async {
        AdminClient::connect(url.to_string()).await.ok()
    })
    .await
}

/// A raw worker client (to play a worker, honest or not).
pub async fn raw_worker(url: &str) -> WorkerClient<Channel> {
    wait_for("the worker API", Duration::from_secs(20), || async {
        WorkerClient::connect(url.to_string()).await.ok()
    })
    .await
}

/// Registers a raw worker and returns its id.
pub async fn register(client: &mut WorkerClient<Channel>, name: &str) -> i64 {
    client
        .register(pb::RegisterRequest {
            name: name.into(),
            host: "test-host".into(),
            cores: 1,
            version: "test".into(),
            git_commit: "test".into(),
            previous_worker_id: 0,
        })
        .await
        .expect("register")
        .into_inner()
        .worker_id
}

/// Topswops flips of a deck by plain replay (independent of the coordinator's verifier).
pub fn topswops_flips<T: Copy + TryInto<usize>>(deck: &[T]) -> u64 {
    let mut deck: Vec<usize> = deck
        .iter()
        .map(|&card| {
            card.try_into()
                .unwrap_or_else(|_| panic!("card out of range"))
        })
        .collect();
    let mut flips = 0;
    while deck[0] != 1 {
        let k = deck[0];
        deck[..k].reverse();
        flips += 1;
    }
    flips
}

/// Leases exactly one unit for a raw worker (fails the test when none is granted).
pub async fn lease_one(client: &mut WorkerClient<Channel>, worker: i64) -> pb::LeaseGrant {
    let mut reply = client
        .lease(pb::LeaseRequest {
            worker_id: worker,
            capacity: 1,
        })
        .await
        .expect("lease")
        .into_inner();
    assert_eq!(reply.leases.len(), 1, "one lease granted");
    reply.leases.remove(0)
}

/// Creates a campaign from a problem and JSON parameters.
pub async fn create(
    admin: &mut AdminClient<Channel>,
    problem: &str,
    params: serde_json::Value,
    verify_rate: f64,
) -> i64 {
    admin
        .create_campaign(pb::CreateCampaignRequest {
            problem: problem.into(),
            params_json: params.to_string(),
            name: String::new(),
            verify_rate,
            max_attempts: 0,
            family: String::new(),
        })
        .await
        .expect("create campaign")
        .into_inner()
        .campaign_id
}

/// One campaign's status with every unit result.
pub async fn status(admin: &mut AdminClient<Channel>, campaign: i64) -> pb::StatusReply {
    admin
        .status(pb::StatusRequest {
            campaign_id: campaign,
            with_results: true,
        })
        .await
        .expect("status")
        .into_inner()
}

/// Polls a campaign's status until `until` holds, returning that status.
pub async fn wait_campaign(
    admin: &AdminClient<Channel>,
    campaign: i64,
    what: &str,
    timeout: Duration,
    until: &(dyn Fn(&pb::CampaignStatus) -> bool + Sync),
) -> pb::CampaignStatus {
    wait_for(what, timeout, || {
        let mut admin = admin.clone();
        async move {
            let c = admin
                .show_campaign(pb::CampaignRef {
                    campaign_id: campaign,
                })
                .await
                .ok()?
                .into_inner();
            until(&c).then_some(c)
        }
    })
    .await
}

/// Waits until the campaign has left the running state, returning its final status.
pub async fn wait_finished(
    admin: &mut AdminClient<Channel>,
    campaign: i64,
    timeout: Duration,
) -> pb::CampaignStatus {
    wait_campaign(admin, campaign, "the campaign to finish", timeout, &|c| {
        c.state != "running"
    })
    .await
}

/// Primes in [lo, hi) by trial division: an independent reference for the calibration problem.
pub fn primes_between(lo: u64, hi: u64) -> u64 {
    (lo..hi)
        .filter(|&n| {
            n >= 2
                && (2..)
                    .take_while(|d| d * d <= n)
                    .all(|d| !n.is_multiple_of(d))
        })
        .count() as u64
}

/// Decodes a primes unit payload (two little-endian u64: start, end).
pub fn primes_unit(payload: &[u8]) -> (u64, u64) {
    let start = u64::from_le_bytes(payload[0..8].try_into().unwrap());
    let end = u64::from_le_bytes(payload[8..16].try_into().unwrap());
    (start, end)
}

/// Asserts every unit of a campaign was counted exactly once: one accepted result per done
/// unit (replicas agreeing with it aside), and the total equals their sum.
pub fn assert_counted_once(reply: &pb::StatusReply, expected_total: u64) {
    let campaign = &reply.campaigns[0];
    assert_eq!(campaign.value, expected_total.to_string(), "campaign total");
    let units = campaign.units.unwrap();
    let mut accepted: std::collections::BTreeMap<i64, Vec<String>> = Default::default();
    for r in reply.results.iter().filter(|r| r.state == "accepted") {
        accepted.entry(r.unit_id).or_default().push(r.value.clone());
    }
    assert_eq!(
        accepted.len() as u64,
        units.done,
        "units with accepted results"
    );
    let mut sum = 0u64;
    for (unit, values) in &accepted {
        assert!(
            values.windows(2).all(|w| w[0] == w[1]),
            "unit {unit} accepted different values {values:?}"
        );
        sum += values[0].parse::<u64>().unwrap();
    }
    assert_eq!(sum, expected_total, "sum of accepted unit values");
}
