//! Helpers shared by the integration tests: fixture paths, specs, running to the end.
#![allow(dead_code)]

use grind_exec::protocol::{Event, Solution};
use grind_exec::runner::{self, RunOutcome, SolverEvent, SolverSpec};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The fixtures directory (treated as the solver bundle: read-only in the sandbox).
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// A fixture's path.
pub fn fixture(name: &str) -> PathBuf {
    fixtures().join(name)
}

/// A spec for fixture `program` with short limits suited to tests.
pub fn spec(program: &str, run_dir: &Path) -> SolverSpec {
    let mut s = SolverSpec::new(fixture(program), run_dir);
    s.bundle_dir = Some(fixtures());
    s.grace = Duration::from_millis(500);
    s.time_limit = Some(Duration::from_secs(30));
    s
}

/// Runs `spec` to its end; returns every event and the outcome.
pub fn run(spec: SolverSpec) -> (Vec<SolverEvent>, RunOutcome) {
    let (tx, rx) = mpsc::channel();
    let running = runner::spawn(spec, move |e| {
        let _ = tx.send(e);
    })
    .expect("spawn");
    let outcome = running.wait().expect("outcome");
    (rx.try_iter().collect(), outcome)
}

/// The comments among `events`.
pub fn comments(events: &[SolverEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::Comment(c) => Some(c.clone()),
            _ => None,
        })
        .collect()
}

/// The complete solutions among `events`.
pub fn solutions(events: &[SolverEvent]) -> Vec<Solution> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::Solution(s) => Some(s.clone()),
            _ => None,
        })
        .collect()
}

/// Waits up to `timeout` for `cond`, polling.
pub fn wait_for(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + timeout;
    while Instant::now() < end {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    cond()
}

/// Whether process `pid` is still alive (a zombie counts as dead).
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat
                .rsplit_once(')')
                .map(|(_, r)| r.trim_start().chars().next());
            !matches!(state, Some(Some('Z')) | Some(Some('X')))
        }
        Err(_) => false,
    }
}

/// The kernel's Landlock support, printing a skip note when there is none.
pub fn landlock_or_skip(test: &str) -> bool {
    match grind_exec::sandbox::kernel_landlock_abi() {
        Ok(_) => true,
        Err(why) => {
            eprintln!("{test}: SKIPPED the Landlock assertions: {why}");
            false
        }
    }
}
