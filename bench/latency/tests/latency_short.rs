//! The short latency case the test suite runs: two workers behind a 50 ms round trip whose
//! connections are reset during the run, one campaign of 1-second units. Asserts that the
//! campaign's answer equals pi(N) by the harness's own sieve, that every unit was counted
//! exactly once (with the chaos crate's store invariants), and a generous busy fraction.
//! The lease time is 5 s instead of grind serve's 60 s so that a lease stranded by a reset
//! costs seconds, not a minute.
//! The figures for users come from the full benchmark (BENCHMARKS.md).
//!
//! Needs `grind` and `grind-worker` built beside `grind-latency`: run with
//! `cargo test --workspace` (or `cargo build --workspace` first).

use std::process::Command;

#[test]
fn workers_behind_a_50ms_round_trip_with_resets_lose_nothing_and_stay_busy() {
    let out_dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_grind-latency"))
        .args([
            "--round-trip-ms",
            "50",
            "--workers",
            "2",
            "--threads",
            "2",
            "--units-per-thread",
            "5",
            "--unit-numbers",
            "50000",
            "--resets-per-minute",
            "40",
            "--lease-ttl-ms",
            "5000",
            "--heartbeat-ms",
            "1000",
            "--time-limit-seconds",
            "60",
            "--json",
            "--out",
        ])
        .arg(out_dir.path())
        .output()
        .expect("run grind-latency");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let report: serde_json::Value = stdout
        .lines()
        .find_map(|line| serde_json::from_str(line).ok())
        .unwrap_or_else(|| panic!("no report.\nstdout:\n{stdout}\nstderr:\n{stderr}"));
    let evidence = || {
        format!(
            "report: {report:#}\nlogs kept in {}",
            out_dir.path().display()
        )
    };
    if !out.status.success() {
        let kept = tempfile::TempDir::keep(out_dir);
        panic!(
            "case failed (logs in {}):\n{report:#}\n{stderr}",
            kept.display()
        );
    }
    assert_eq!(report["finished"], true, "{}", evidence());
    assert_eq!(report["value"], report["expected"], "{}", evidence());
    assert_eq!(report["expected"], "78498", "pi(10^6) is 78498");
    assert!(
        report["violations"].as_array().unwrap().is_empty(),
        "{}",
        evidence()
    );
    assert!(report["checks"].as_u64().unwrap() >= 40, "{}", evidence());
    assert!(report["resets"].as_u64().unwrap() >= 1, "{}", evidence());
    let busy = report["busy_fraction"].as_f64().unwrap();
    // Generous: a reset that loses the reply to a call that granted leases strands those
    // units until their lease expires (BENCHMARKS.md, "Latency hiding"), hence the short
    // lease time above and a floor that one such stranding still clears.
    assert!(busy >= 0.4, "busy fraction {busy}: {}", evidence());
}
