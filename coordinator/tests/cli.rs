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
    let v = grind_run_json(&[
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
    let a = grind_run_json(&["run", "nimsquare", "--n", "100", "--db", db, "--json"]);
    let b = grind_run_json(&["run", "nimsquare", "--n", "100", "--db", db, "--json"]);
    assert_eq!(
        a["campaign"], b["campaign"],
        "the same campaign, not a new one"
    );
    assert_eq!(a["value"], b["value"]);
}

#[test]
fn bad_flags_and_values_exit_with_code_2_and_a_clear_message() {
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
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        if stderr.starts_with("error: ") {
            // clap's own message, whole: the error, then how to get help.
            assert!(
                stderr
                    .trim_end()
                    .ends_with("For more information, try '--help'."),
                "{args:?}: {stderr}"
            );
        } else {
            // grind's own checks: one line.
            assert!(stderr.starts_with("grind: "), "{args:?}: {stderr}");
            assert_eq!(
                stderr.trim().lines().count(),
                1,
                "{args:?}: one line, got {stderr}"
            );
        }
    }
}

#[test]
fn clap_did_you_mean_hints_reach_the_user_whole() {
    for (args, tip) in [
        (vec!["statu"], "tip: a similar subcommand exists: 'status'"),
        (
            vec!["run", "nimsquare", "--nn", "5"],
            "tip: a similar argument exists: '--n'",
        ),
        (
            vec!["token", "create", "--db", "x.db", "--admn"],
            "tip: a similar argument exists: '--admin'",
        ),
    ] {
        let out = grind(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(tip), "{args:?}: {stderr}");
        assert!(stderr.contains("Usage: "), "{args:?}: {stderr}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_made_before_the_first_start_let_workers_in() {
    // The quick-start order: tokens first (this creates the database), then the coordinator.
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("campaigns.db");
    let worker_token = create_token(&db, false);
    let admin_token = create_token(&db, true);
    assert!(worker_token.starts_with("grind_") && admin_token.starts_with("grind_"));
    let list = grind(&["token", "list", "--db", db.to_str().unwrap(), "--json"]);
    assert!(list.status.success());
    let tokens: Vec<serde_json::Value> = String::from_utf8_lossy(&list.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON object per line"))
        .collect();
    assert_eq!(tokens.len(), 2);
    assert_eq!(tokens[0]["role"], "worker");
    assert_eq!(tokens[1]["role"], "admin");
    assert!(tokens[1]["revoked_ms"].is_null());
    // Listing a database that does not exist refuses (a typo must not create one).
    let missing = grind(&[
        "token",
        "list",
        "--db",
        dir.path().join("typo.db").to_str().unwrap(),
    ]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(!dir.path().join("typo.db").exists());

    let coord = start_coordinator_on(db.clone(), "127.0.0.1:0", 5_000, &["--require-auth"]);
    let token_file = dir.path().join("worker.token");
    std::fs::write(&token_file, format!("{worker_token}\n")).unwrap();
    let mut worker = Command::new(worker_bin());
    worker
        .args([
            "--coordinator",
            &coord.url,
            "--threads",
            "1",
            "--name",
            "early",
        ])
        .arg("--token-file")
        .arg(&token_file);
    let _worker = Proc::spawn_command(worker);
    let add = Command::new(grind_bin())
        .args(["campaign", "add", "--coordinator", &coord.url])
        .args([
            "primes",
            "--to",
            "100000",
            "--unit",
            "50000",
            "--verify-rate",
            "0",
        ])
        .env("GRIND_ADMIN_TOKEN", &admin_token)
        .output()
        .unwrap();
    assert!(
        add.status.success(),
        "{}",
        String::from_utf8_lossy(&add.stderr)
    );
    let id = last_line(&add.stdout);
    let show = |json: bool| {
        let mut cmd = Command::new(grind_bin());
        cmd.args(["campaign", "show", "--coordinator", &coord.url, &id])
            .env("GRIND_ADMIN_TOKEN", &admin_token);
        if json {
            cmd.arg("--json");
        }
        cmd.output().unwrap()
    };
    let finished = wait_for("the worker to finish the campaign", LONG_WAIT, || {
        let out = show(true);
        let v: Option<serde_json::Value> = serde_json::from_slice(&out.stdout).ok();
        async move { v.filter(|v| v["state"] == "done") }
    })
    .await;
    // pi(100000) = 9592.
    assert_eq!(finished["value"], "9592");
    let json = show(true);
    assert_eq!(
        String::from_utf8_lossy(&json.stdout).lines().count(),
        1,
        "one line"
    );
    let text = String::from_utf8_lossy(&show(false).stdout).to_string();
    assert!(
        text.starts_with(&format!("campaign {id}: primes")),
        "{text}"
    );
    assert!(text.contains("count = 9592 (exact count)"), "{text}");
    assert!(text.contains("2 done"), "{text}");
    // Parameters as the web page shows them (the command line's words), never JSON.
    assert!(text.contains("primes to=100000 unit=50000"), "{text}");
    let status = Command::new(grind_bin())
        .args(["status", "--coordinator", &coord.url])
        .env("GRIND_ADMIN_TOKEN", &admin_token)
        .output()
        .unwrap();
    let status = String::from_utf8_lossy(&status.stdout).to_string();
    assert!(status.contains("to=100000 unit=50000"), "{status}");
    assert!(
        !status.contains('{') && !status.contains("null"),
        "grind status shows JSON: {status}"
    );
}

#[test]
fn a_second_coordinator_on_the_same_database_is_refused_with_the_holders_name() {
    let dir = tempfile::tempdir().unwrap();
    let coord = start_coordinator(dir.path(), 5_000, &[]);
    let db = coord.db.to_str().unwrap();
    let holder = format!("pid {}", coord.proc.child.id());
    for args in [
        vec!["serve", "--listen", "127.0.0.1:0", "--db", db],
        vec!["run", "primes", "--to", "1000", "--db", db],
    ] {
        let out = grind(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains("in use by another coordinator"), "{stderr}");
        assert!(stderr.contains(&holder), "names the holder: {stderr}");
        assert!(stderr.contains("grind serve"), "and its command: {stderr}");
    }
    // Offline commands still work beside it.
    let token = grind(&["token", "create", "--db", db]);
    assert!(
        token.status.success(),
        "{}",
        String::from_utf8_lossy(&token.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_refused_for_good_exits_77_and_a_bad_token_file_78() {
    let dir = tempfile::tempdir().unwrap();
    let coord = start_coordinator(dir.path(), 5_000, &["--require-auth"]);
    let token = create_token(&coord.db, false);
    let revoked = grind(&["token", "revoke", "--db", coord.db.to_str().unwrap(), "1"]);
    assert!(revoked.status.success());
    let empty = dir.path().join("empty.token");
    std::fs::write(&empty, "").unwrap();
    for (token, code) in [(token.as_str(), 77), ("grind_0000", 77), ("", 78)] {
        let mut cmd = Command::new(worker_bin());
        cmd.args(["--coordinator", &coord.url, "--threads", "1"]);
        if token.is_empty() {
            cmd.arg("--token-file").arg(&empty);
        } else {
            cmd.env("GRIND_TOKEN", token);
        }
        let mut worker = Proc::spawn_command(cmd);
        let exit = worker
            .wait_exit(LONG_WAIT)
            .await
            .expect("a refused worker exits");
        assert_eq!(exit.code(), Some(code), "{token:?}: {}", worker.log());
    }
    let help = Command::new(worker_bin()).arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("77  refused for good"), "{help}");
}

/// A running coordinator reads new tokens once a second: a worker started the moment its
/// token is made (Kubernetes starts one as soon as the Secret exists) is refused until then,
/// and must ask again rather than exit 77 for good.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_started_the_moment_its_token_is_made_joins() {
    let dir = tempfile::tempdir().unwrap();
    let coord = start_coordinator(dir.path(), 5_000, &["--require-auth"]);
    // Three tries: each lands inside the coordinator's one-second reload window with high
    // probability (a worker registers within tens of milliseconds of starting).
    for round in 0..3 {
        let token = create_token(&coord.db, false);
        let mut cmd = Command::new(worker_bin());
        cmd.args(["--coordinator", &coord.url, "--threads", "1"])
            .env("GRIND_TOKEN", &token);
        let mut worker = Proc::spawn_command(cmd);
        let deadline = std::time::Instant::now() + LONG_WAIT;
        while !worker.log().contains("registered as worker") {
            if let Some(exit) = worker.child.try_wait().unwrap() {
                panic!("worker {round} exited ({exit}): {}", worker.log());
            }
            assert!(
                std::time::Instant::now() < deadline,
                "worker {round} did not register: {}",
                worker.log()
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        worker.kill();
    }
}

/// SIGTERM stops `grind serve` within seconds even while workers stay connected (each holds
/// a stream open): systemd and Kubernetes would otherwise SIGKILL it after their grace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_stops_on_sigterm_while_workers_stay_connected() {
    let dir = tempfile::tempdir().unwrap();
    let mut coord = start_coordinator(dir.path(), 5_000, &[]);
    let worker = start_worker(&coord.url, "stays", 1);
    let deadline = std::time::Instant::now() + LONG_WAIT;
    while !worker.log().contains("registered as worker") {
        assert!(
            std::time::Instant::now() < deadline,
            "the worker did not register: {}",
            worker.log()
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    coord.proc.terminate();
    let exit = coord
        .proc
        .wait_exit(std::time::Duration::from_secs(15))
        .await
        .unwrap_or_else(|| {
            panic!(
                "grind serve still runs 15 s after SIGTERM: {}",
                coord.proc.log()
            )
        });
    assert!(exit.success(), "{exit}: {}", coord.proc.log());
}

/// Sends SIGINT, as Ctrl-C in a terminal does.
fn interrupt(child: &std::process::Child) {
    // SAFETY: plain kill(2) on our own child's pid.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_stops_a_run_prints_the_result_so_far_and_says_how_to_resume() {
    let tmp = tempfile::tempdir().unwrap();
    let kept = tmp.path().join("kept.db");
    // 100 units of at least a second each: far from done when interrupted.
    let long_run = |db: Option<&std::path::Path>| {
        let mut cmd = Command::new(grind_bin());
        cmd.args(["run", "primes", "--to", "100000000", "--unit", "1000000"])
            .args(["--min-unit-ms", "1000", "--threads", "1", "--json"])
            .env("TMPDIR", tmp.path())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        if let Some(db) = db {
            cmd.arg("--db").arg(db);
        }
        cmd.spawn().unwrap()
    };
    let units_done = |db: std::path::PathBuf| async move {
        let conn = rusqlite::Connection::open(&db).ok()?;
        let done: i64 = conn
            .query_row("SELECT count(*) FROM units WHERE state = 'done'", [], |r| {
                r.get(0)
            })
            .ok()?;
        (done >= 1).then_some(done)
    };
    let mut campaign = None;
    for db in [None, Some(kept.as_path())] {
        let child = long_run(db);
        let watched = db.map_or_else(
            || tmp.path().join(format!("grind-run-{}.db", child.id())),
            std::path::Path::to_path_buf,
        );
        wait_for("a finished unit", LONG_WAIT, || units_done(watched.clone())).await;
        interrupt(&child);
        let out = tokio::task::spawn_blocking(move || child.wait_with_output())
            .await
            .unwrap()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(130), "{stderr}");
        let v = run_result(&out.stdout);
        assert_eq!(v["state"], "running", "{v}");
        assert!(
            v["units_done"].as_u64().unwrap() >= 1,
            "the result so far: {v}"
        );
        assert!(stderr.contains("interrupted by SIGINT"), "{stderr}");
        match db {
            None => {
                assert!(
                    stderr.contains("--db FILE"),
                    "says how to keep it: {stderr}"
                );
                let left: Vec<_> = std::fs::read_dir(tmp.path())
                    .unwrap()
                    .map(|e| e.unwrap().file_name())
                    .filter(|name| name.to_string_lossy().starts_with("grind-run-"))
                    .collect();
                assert!(left.is_empty(), "temporary files left behind: {left:?}");
            }
            Some(db) => {
                assert!(stderr.contains(&db.display().to_string()), "{stderr}");
                assert!(stderr.contains("again to resume"), "{stderr}");
                campaign = Some(v["campaign"].clone());
            }
        }
    }
    // The same command again resumes the kept campaign (stopped by --seconds this time).
    let v = grind_run_json(&[
        "run",
        "primes",
        "--to",
        "100000000",
        "--unit",
        "1000000",
        "--min-unit-ms",
        "1000",
        "--threads",
        "1",
        "--json",
        "--seconds",
        "0.5",
        "--db",
        kept.to_str().unwrap(),
    ]);
    assert_eq!(Some(v["campaign"].clone()), campaign);
    assert!(v["units_done"].as_u64().unwrap() >= 1, "{v}");
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
    assert_eq!(
        String::from_utf8_lossy(&status.stdout).lines().count(),
        1,
        "--json prints one line"
    );
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
    let v = grind_run_json(&[
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

#[test]
fn an_exec_units_cpu_includes_its_solvers_processes() {
    // Each unit's solver (a shell script) burns half a second of CPU in a child process it
    // waits for: the worker's own clocks see none of it, yet it is the unit's CPU.
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, text: &str| script(dir.path(), name, text);
    let solver = file(
        "burn.sh",
        "#!/bin/sh\npython3 -c '\nimport time\nt = time.process_time()\n\
         while time.process_time() - t < 0.5:\n    pass\n'\necho \"o $GRIND_SEED\"; echo \"v $GRIND_SEED\"\n",
    );
    let checker = file(
        "check.sh",
        "#!/bin/sh\nx=$(sed -n 's/^v //p' \"$2\" | head -n 1)\necho \"${x:-0}\"\n",
    );
    let instance = file("instance.txt", "none\n");
    let db = dir.path().join("run.db");
    let v = grind_run_json(&[
        "run",
        "exec",
        "--solver",
        &solver,
        "--checker",
        &checker,
        "--instance",
        &instance,
        "--objective",
        "max",
        "--units",
        "seeds:3",
        "--unit-seconds",
        "60",
        "--workers",
        "1",
        "--threads",
        "2",
        "--db",
        db.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(v["value"], "2");
    let total = v["cpu_seconds"].as_f64().unwrap();
    assert!(total >= 1.35, "the campaign's CPU: {total} s");
    let stored: Vec<f64> = campaigns::open_read_only(&db)
        .prepare("SELECT cpu_seconds FROM results ORDER BY unit_id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    // One result per unit, and one per replica when a unit was run again to be compared.
    assert!(stored.len() >= 3, "{stored:?}");
    assert!(stored.iter().all(|&s| s >= 0.45), "{stored:?}");
}
