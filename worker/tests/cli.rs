//! The `grind-worker` command line: bad input gets a clear error and exit code 2.
//! (Also makes `cargo test --workspace` build the worker binary that the coordinator's
//! integration tests start.)

use std::process::Command;

fn worker() -> Command {
    Command::new(env!("CARGO_BIN_EXE_grind-worker"))
}

#[test]
fn missing_coordinator_is_a_usage_error() {
    let out = worker().env_remove("GRIND_COORDINATOR").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--coordinator"));
}

#[test]
fn bad_thread_counts_are_refused() {
    for threads in ["0", "-1", "many"] {
        let out = worker()
            .args(["--coordinator", "http://127.0.0.1:1", "--threads", threads])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "--threads {threads}");
    }
}
