//! The `grind` command line as users and scripts see it: `grind run` output contract, exit
//! codes, and the admin commands against a real coordinator process.

mod common;

use common::*;
use std::process::Command;

fn grind(args: &[&str]) -> std::process::Output {
    Command::new(grind_bin())
        .args(args)
        .output()
        .expect("run grind")
}

fn last_line(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .lines()
        .last()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn run_prints_the_verified_result_as_json_on_the_last_line() {
    let out = grind(&[
        "run",
        "primes",
        "--to",
        "200000",
        "--unit",
        "25000",
        "--workers",
        "2",
        "--threads",
        "1",
        "--verify-rate",
        "1",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_str(&last_line(&out.stdout)).unwrap();
    // pi(200000) = 17984.
    assert_eq!(v["value"], "17984");
    assert_eq!(v["proven"], true);
    assert_eq!(v["outcome"], "exact_count");
    assert_eq!(v["objective"], "count");
    assert_eq!(v["problem"], "primes");
    assert_eq!(v["params"]["to"], 200000);
    assert_eq!(v["units_done"], 8);
    assert!(v["solution"].is_null());
    for field in ["campaign", "wall_seconds", "cpu_seconds"] {
        assert!(v[field].is_number(), "{field} missing: {v}");
    }
}

#[test]
fn run_resumes_a_campaign_stored_in_its_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("run.db");
    let db = db.to_str().unwrap();
    let first = grind(&["run", "nimsquare", "--n", "100", "--db", db, "--json"]);
    assert!(first.status.success());
    let again = grind(&["run", "nimsquare", "--n", "100", "--db", db, "--json"]);
    let a: serde_json::Value = serde_json::from_str(&last_line(&first.stdout)).unwrap();
    let b: serde_json::Value = serde_json::from_str(&last_line(&again.stdout)).unwrap();
    assert_eq!(
        a["campaign"], b["campaign"],
        "the same campaign, not a new one"
    );
    assert_eq!(a["value"], b["value"]);
}

#[test]
fn bad_flags_and_values_exit_with_code_2_and_one_clear_line() {
    for args in [
        vec!["run", "nimsquare", "--n", "-5"],
        vec!["run", "nimsquare", "--n", "abc"],
        vec!["run", "nimsquare", "--n", "99999999999999"],
        vec!["run", "nimsquare"],
        vec!["run", "nosuchproblem", "--n", "5"],
        vec!["run", "primes", "--to", "10", "--from", "20"],
        vec!["run", "primes", "--to", "100", "--workers", "0"],
        vec!["run", "primes", "--to", "100", "--verify-rate", "2"],
        vec!["serve", "--lease-ttl-ms", "5"],
    ] {
        let out = grind(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(
            stderr.trim().lines().count(),
            1,
            "{args:?}: one line, got {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_commands_drive_a_served_campaign() {
    let dir = tempfile::tempdir().unwrap();
    let coord = start_coordinator(dir.path(), 5_000, &[]);
    let url = coord.url.clone();
    let add = grind(&[
        "campaign",
        "add",
        "--coordinator",
        &url,
        "primes",
        "--to",
        "300000",
        "--unit",
        "100000",
        "--verify-rate",
        "0",
    ]);
    assert!(
        add.status.success(),
        "{}",
        String::from_utf8_lossy(&add.stderr)
    );
    let id: i64 = last_line(&add.stdout).parse().expect("id on the last line");
    let pause = grind(&["campaign", "pause", "--coordinator", &url, &id.to_string()]);
    assert!(pause.status.success());
    let _worker = start_worker(&url, "cli-worker", 2);
    let status = grind(&["status", "--coordinator", &url, &id.to_string(), "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(v["state"], "paused");
    let resume = grind(&["campaign", "resume", "--coordinator", &url, &id.to_string()]);
    assert!(resume.status.success());
    let mut admin = admin(&url).await;
    wait_finished(&mut admin, id, std::time::Duration::from_secs(60)).await;
    let status = grind(&["status", "--coordinator", &url, &id.to_string(), "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    // pi(300000) = 25997.
    assert_eq!(v["state"], "done");
    assert_eq!(v["value"], "25997");
    assert_eq!(v["proven"], true);
    assert_eq!(v["outcome"], "exact_count");
    assert_eq!(v["units"]["done"], 3);
    assert_eq!(v["units"]["pending"], 0);
    assert!(v["workers"].is_number());
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 3);
    for r in results {
        assert_eq!(r["provenance"]["worker"], "cli-worker");
        assert!(r["cpu_seconds"].as_f64().unwrap() >= 0.0);
        assert!(r["provenance"]["lease"].as_i64().unwrap() > 0);
    }
    let out = dir.path().join("export.txt");
    let export = grind(&[
        "export",
        "--coordinator",
        &url,
        &id.to_string(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(export.status.success());
    assert_eq!(std::fs::read_to_string(&out).unwrap().trim(), "25997");
    let provenance: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{}.provenance.json", out.display())).unwrap(),
    )
    .unwrap();
    assert_eq!(provenance["contributors"][0]["name"], "cli-worker");
    let missing = grind(&["status", "--coordinator", &url, "999", "--json"]);
    assert_eq!(missing.status.code(), Some(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_sent_sigterm_hands_back_a_checkpoint_that_another_worker_resumes() {
    let dir = tempfile::tempdir().unwrap();
    // Heartbeats every second (a fifth of the lease time) bring checkpoints to the store.
    let coord = start_coordinator(dir.path(), 5_000, &[]);
    let mut admin = admin(&coord.url).await;
    let id = create(
        &mut admin,
        "primes",
        serde_json::json!({"to": 1_000_000, "unit": 1_000_000, "min_unit_ms": 3_000}),
        0.0,
    )
    .await;
    let stored_position = || -> Option<u64> {
        let cursor: Option<Vec<u8>> = rusqlite::Connection::open(&coord.db)
            .ok()?
            .query_row(
                "SELECT cursor FROM units WHERE campaign_id = ?1",
                [id],
                |r| r.get(0),
            )
            .ok()?;
        Some(u64::from_le_bytes(cursor?.get(..8)?.try_into().ok()?))
    };
    let mut first = start_worker(&coord.url, "first", 1);
    // The unit paces itself over 3 s in 16 steps of 62,500 numbers: wait until a heartbeat
    // stored a checkpoint at least two steps in, then ask the worker to stop.
    let seen = wait_for("a checkpoint two steps in", LONG_WAIT, || {
        let position = stored_position().filter(|p| *p >= 125_000);
        async move { position }
    })
    .await;
    let asked = std::time::Instant::now();
    first.terminate();
    let exit = first
        .wait_exit(std::time::Duration::from_secs(5))
        .await
        .expect("exited within 5 s of SIGTERM");
    assert!(exit.success(), "{}", first.log());
    assert!(asked.elapsed() < std::time::Duration::from_secs(5));
    let c = admin
        .show_campaign(grind_proto::v1::CampaignRef { campaign_id: id })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(c.units.unwrap().pending, 1, "the lease was handed back");
    // The checkpoint handed back keeps at least the work done up to the signal.
    let kept = stored_position().expect("a checkpoint was handed back");
    assert!(
        (seen..1_000_000).contains(&kept),
        "checkpoint at {kept}, {seen} was stored before the signal"
    );
    let _second = start_worker(&coord.url, "second", 1);
    let done = wait_finished(&mut admin, id, LONG_WAIT).await;
    assert_eq!(done.value, "78498");
    // Neither worker has a token (this coordinator requires none): they share one trust
    // domain, so the second resumed the first one's checkpoint. (Checkpoints across tokens
    // are refused: tests/scheduler.rs.)
    let conn = rusqlite::Connection::open(&coord.db).unwrap();
    let resumed: String = conn
        .query_row(
            "SELECT detail FROM events WHERE kind = 'lease_granted' AND lease_id = 2",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(resumed.contains("\"resumes\":true"), "{resumed}");
    let released: i64 = conn
        .query_row(
            "SELECT count(*) FROM events WHERE kind = 'lease_released' AND lease_id = 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(released, 1);
}

const LONG_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

#[test]
fn a_proof_that_nothing_reaches_the_target_is_not_called_an_optimum() {
    // f(7) = 16 (OEIS A000375): no 7-card deck takes 17 flips.
    let out = grind(&[
        "run",
        "topswops",
        "--n",
        "7",
        "--target",
        "17",
        "--workers",
        "1",
        "--threads",
        "1",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_str(&last_line(&out.stdout)).unwrap();
    assert_eq!(v["value"], serde_json::Value::Null);
    assert_eq!(v["outcome"], "proven_none_reaches_target");
    let human = grind(&[
        "run",
        "topswops",
        "--n",
        "7",
        "--target",
        "17",
        "--workers",
        "1",
        "--threads",
        "1",
    ]);
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(
        text.contains("proven: no solution reaches the target") && !text.contains("optimum"),
        "{text}"
    );
}
