//! The processes under test: `grind serve` and `grind-worker` spawned on loopback with their
//! stderr collected, killed when dropped.

use grind_kit::launch::{listening_addr, serve_command, sigterm, worker_command};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Path of the `grind` binary under test.
pub fn grind_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_grind"))
}

/// Runs `grind` with `args` to its end, failing the test (with its stderr) unless it
/// succeeds; returns its output.
pub fn grind_ok(args: &[&str]) -> std::process::Output {
    let out = Command::new(grind_bin())
        .args(args)
        .output()
        .expect("run grind");
    assert!(
        out.status.success(),
        "grind {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The result `grind run --json` prints as JSON on the last line of its `stdout`.
pub fn run_result(stdout: &[u8]) -> serde_json::Value {
    let text = String::from_utf8_lossy(stdout);
    let last = text.lines().last().unwrap_or_default();
    serde_json::from_str(last)
        .unwrap_or_else(|e| panic!("no JSON result on the last line ({e}): {text}"))
}

/// Runs `grind ARGS` (a `grind run ... --json`) to its end, failing the test unless it
/// succeeds, and returns the result it prints on its last line.
pub fn grind_run_json(args: &[&str]) -> serde_json::Value {
    run_result(&grind_ok(args).stdout)
}

/// Creates a token offline with `grind token create` (an admin token when `admin`).
pub fn create_token(db: &Path, admin: bool) -> String {
    let db = db.to_str().expect("a UTF-8 path");
    let mut args = vec!["token", "create", "--db", db];
    if admin {
        args.push("--admin");
    }
    let out = grind_ok(&args);
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// Path of the `grind-worker` binary (built beside `grind` by `cargo test --workspace`).
pub fn worker_bin() -> PathBuf {
    grind_kit::binaries::find(None, "grind-worker").unwrap_or_else(|e| panic!("{e}"))
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
        sigterm(self.child.id());
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
    let heartbeat = (ttl_ms / 5).max(20);
    let mut cmd = serve_command(&grind_bin(), listen, &db, ttl_ms, heartbeat);
    cmd.args(extra);
    let (proc, stdout) = Proc::spawn(cmd);
    let mut line = String::new();
    BufReader::new(stdout.expect("stdout"))
        .read_line(&mut line)
        .expect("read the listening line");
    let addr = listening_addr(&line)
        .unwrap_or_else(|| panic!("coordinator did not start: {line:?}\n{}", proc.log()));
    Coordinator {
        proc,
        url: format!("http://{addr}"),
        db,
        ttl_ms,
    }
}

/// Starts a `grind-worker` process.
pub fn start_worker(url: &str, name: &str, threads: usize) -> Proc {
    Proc::spawn(worker_command(&worker_bin(), url, Some(name), threads)).0
}

/// Starts a one-thread `grind-worker` process without a name, with extra environment
/// variables (a token, say).
pub fn start_worker_with_env(url: &str, env: &[(&str, &str)]) -> Proc {
    let mut cmd = worker_command(&worker_bin(), url, None, 1);
    for (k, v) in env {
        cmd.env(k, v);
    }
    Proc::spawn_command(cmd)
}
