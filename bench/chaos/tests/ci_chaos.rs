//! The short chaos run CI does on every change: a fixed seed whose 40-second fault plan
//! holds every kind of fault (worker SIGKILL and SIGTERM, coordinator SIGKILL, network cut,
//! stall, delay, lost replies and duplicated requests, unwritable database), then every
//! invariant checked.
//! The long run is a documented command (RELIABILITY.md).
//!
//! Needs `grind` and `grind-worker` built beside `grind-chaos`: run with
//! `cargo test --workspace` (or `cargo build --workspace` first).

use std::process::Command;

const SEED: &str = "13";
const WINDOW_SECONDS: &str = "40";

fn chaos() -> Command {
    Command::new(env!("CARGO_BIN_EXE_grind-chaos"))
}

#[test]
fn the_fixed_seed_plans_every_kind_of_fault() {
    let out = chaos()
        .args(["--plan-only", "--seed", SEED, "--duration", WINDOW_SECONDS])
        .output()
        .expect("run grind-chaos --plan-only");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for kind in [
        "kill_worker",
        "stop_worker",
        "kill_coordinator",
        "cut_network",
        "stall_network",
        "delay_network",
        "lose_replies",
        "db_unwritable",
        "duplicate_requests",
    ] {
        assert!(
            text.contains(&format!("\"kind\":\"{kind}\"")),
            "seed {SEED} plans no {kind}:\n{text}"
        );
    }
}

#[test]
fn a_short_chaos_run_holds_every_invariant() {
    let out_dir = tempfile::tempdir().unwrap();
    let out = chaos()
        .args([
            "--seed",
            SEED,
            "--duration",
            WINDOW_SECONDS,
            "--drain",
            "150",
            "--json",
            "--out",
        ])
        .arg(out_dir.path())
        .output()
        .expect("run grind-chaos");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let report: serde_json::Value = stdout
        .lines()
        .rev()
        .find_map(|line| serde_json::from_str(line).ok())
        .unwrap_or_else(|| panic!("no report line.\nstdout:\n{stdout}\nstderr:\n{stderr}"));
    if !out.status.success() {
        // Keep the evidence for whoever looks at the failure.
        let kept = out_dir.keep();
        panic!(
            "violations (databases and logs kept in {}):\n{}",
            kept.display(),
            serde_json::to_string_pretty(&report["violations"]).unwrap()
        );
    }
    assert_eq!(report["ok"], true);
    assert_eq!(report["drained"], true);
    let faults = report["faults"].as_object().unwrap();
    assert!(faults.len() >= 6, "faults executed: {faults:?}");
    assert!(report["coordinator_starts"].as_u64().unwrap() >= 2);
    assert!(report["store"]["units_done"].as_u64().unwrap() > 20);
    assert!(report["total_checks"].as_u64().unwrap() > 1000);
}
