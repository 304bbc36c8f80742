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

#[test]
fn sigterm_during_the_first_call_stops_the_worker_cleanly() {
    use std::time::{Duration, Instant};
    // A "coordinator" that accepts the connection and never answers: the worker's first
    // call (registering) hangs for its whole timeout (a minute).
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let mut child = worker()
        .args(["--coordinator", &url])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let _connection = loop {
        match listener.accept() {
            Ok((connection, _)) => break connection,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                assert!(Instant::now() < deadline, "the worker never connected");
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => panic!("accept: {e}"),
        }
    };
    // The worker is past its start-up, waiting on the call: a stop must still be graceful.
    grind_kit::launch::sigterm(child.id());
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            panic!("the worker did not stop within 20 s of SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0), "{status:?}");
}
