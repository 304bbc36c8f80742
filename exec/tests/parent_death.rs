//! A worker that dies (even by SIGKILL, with no chance to clean up) takes its solvers with it:
//! the parent-death signal set in the sandbox.

mod common;

use common::*;
use grind_exec::runner;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Set for the helper run of this test binary: the directory to run the solver in.
const HELPER_ENV: &str = "GRIND_EXEC_TEST_HELPER_DIR";

/// Plays the worker when started by `a_dying_worker_takes_its_solvers_with_it`; does
/// nothing in a normal test run.
#[test]
fn helper_worker() {
    let Ok(dir) = std::env::var(HELPER_ENV) else {
        return;
    };
    let dir = Path::new(&dir);
    let mut s = spec("ignore_term.sh", &dir.join("run"));
    s.time_limit = None;
    let running = runner::spawn(s, |_| {}).unwrap();
    std::fs::write(dir.join("pid.tmp"), running.pid().to_string()).unwrap();
    std::fs::rename(dir.join("pid.tmp"), dir.join("pid")).unwrap();
    loop {
        std::thread::park();
    }
}

#[test]
fn a_dying_worker_takes_its_solvers_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut worker = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "helper_worker", "--nocapture"])
        .env(HELPER_ENV, dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid_file = dir.path().join("pid");
    let mut pid = 0;
    let started = wait_for(Duration::from_secs(60), || {
        pid = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        pid > 0
    });
    assert!(started, "the helper worker never started its solver");
    assert!(alive(pid));
    worker.kill().unwrap(); // SIGKILL: no cleanup code runs in the worker
    worker.wait().unwrap();
    assert!(
        wait_for(Duration::from_secs(10), || !alive(pid)),
        "solver {pid} outlived its worker"
    );
}
