//! The plumbing that makes campaigns of users' own solvers (issue 29) safe and honest, for
//! any problem using its seams, with real `grind serve` and `grind-worker` processes on
//! loopback and the `probe` problem (a stand-in for a user's solver that runs nothing
//! external): native code only on workers started with `--allow-exec`, each skip told and
//! logged once; the solver's provenance record kept with each result and in the export; a
//! verifier that fails holds the claim for the operator without a strike; a broken verifier
//! refuses the campaign at creation; a finished campaign over a split grind cannot check is
//! the solver's claim, never proven; and the size limits on provenance and checkpoints.

mod common;

use common::cluster::Cluster;
use common::processes::{grind_ok, worker_bin, Proc};
use common::rpc::{assert_refused, RawWorker};
use common::waiting::wait_log;
use grind_proto::v1 as pb;
use grind_shared::problems::probe::value_of;
use std::process::Command;
use std::time::Duration;
use tonic::Code;

const WAIT: Duration = Duration::from_secs(120);

/// The optimum of `probe --units n`, from the closed form of each unit's value.
fn probe_optimum(units: u64) -> i64 {
    (0..units).map(value_of).max().expect("at least one unit")
}

/// Starts a one-thread `grind-worker` named `name` with `extra` flags.
fn worker_with(url: &str, name: &str, extra: &[&str]) -> Proc {
    let mut cmd = Command::new(worker_bin());
    cmd.args(["--coordinator", url, "--name", name, "--threads", "1"])
        .args(extra);
    Proc::spawn_command(cmd)
}

/// How many `kind` events the store logged for `worker` in `campaign`.
fn events_of(cluster: &Cluster, campaign: i64, worker: i64, kind: &str) -> i64 {
    common::campaigns::open_read_only(&cluster.dir().join("grind.db"))
        .query_row(
            "SELECT count(*) FROM events WHERE campaign_id = ?1 AND worker_id = ?2 AND kind = ?3",
            rusqlite::params![campaign, worker, kind],
            |r| r.get(0),
        )
        .expect("count events")
}

fn worker_id(workers: &[pb::WorkerInfo], name: &str) -> i64 {
    workers
        .iter()
        .find(|w| w.name == name)
        .unwrap_or_else(|| panic!("no worker {name}"))
        .worker_id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn native_code_runs_only_on_opted_in_workers_with_its_provenance_kept() {
    let mut cluster = Cluster::start(5_000, &[]).await;
    let markers = tempfile::tempdir().unwrap();
    let params = serde_json::json!({
        "units": 6, "native_code": true, "marker_dir": markers.path(), "provenance_bytes": 50,
    });
    let campaign = cluster.create("probe", params, 0.0).await;
    let plain = worker_with(&cluster.coord.url, "plain", &[]);
    let told = format!("campaign {campaign} is not for this worker");
    wait_log("the plain worker told why", WAIT, || plain.log(), &told).await;
    assert!(plain.log().contains("--allow-exec"), "{}", plain.log());
    let trusted = worker_with(&cluster.coord.url, "trusted", &["--allow-exec"]);
    let done = cluster.wait_finished(campaign, WAIT).await;
    assert_eq!(done.state, "done", "{done:?}");
    assert_eq!(done.value, probe_optimum(6).to_string());
    assert_eq!(done.outcome, "proven_optimum");

    let status = cluster.status(campaign).await;
    let workers = common::campaigns::workers(&mut cluster.admin).await;
    let (plain_id, trusted_id) = (worker_id(&workers, "plain"), worker_id(&workers, "trusted"));
    assert_eq!(status.results.len(), 6, "one result per unit");
    for result in &status.results {
        assert_eq!(common::campaigns::provenance(result).worker_id, trusted_id);
        let record: serde_json::Value = serde_json::from_str(&result.provenance_json)
            .unwrap_or_else(|e| panic!("unit {}: provenance not JSON: {e}", result.unit_id));
        assert_eq!(record["pad"].as_str().map(str::len), Some(50));
    }
    assert_eq!(std::fs::read_dir(markers.path()).unwrap().count(), 6);
    // The plain worker asked many times; its skip is logged once.
    assert_eq!(
        events_of(&cluster, campaign, plain_id, "campaign_skipped"),
        1
    );
    assert_eq!(events_of(&cluster, campaign, plain_id, "lease_granted"), 0);
    assert_eq!(plain.log().matches(&told).count(), 1, "{}", plain.log());

    let export = cluster
        .admin
        .export(pb::CampaignRef {
            campaign_id: campaign,
        })
        .await
        .expect("export")
        .into_inner();
    let record: serde_json::Value = serde_json::from_str(&export.provenance_json).unwrap();
    let best_seed = (0..6).find(|&s| value_of(s) == probe_optimum(6)).unwrap();
    assert_eq!(record["solver_provenance"]["probe"]["seed"], best_seed);
    assert_eq!(record["claimed_by_solver"], false);
    drop((plain, trusted));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_verifier_holds_the_claim_without_a_strike() {
    let mut cluster = Cluster::start(5_000, &[]).await;
    let switch = cluster.dir().join("checker-broken");
    std::fs::write(&switch, b"").unwrap();
    let params = serde_json::json!({"units": 3, "checker_fails_while": switch});
    let campaign = cluster.create("probe", params, 0.0).await;
    let worker = cluster.worker("w");
    let held = cluster
        .wait_campaign(campaign, "a held claim", WAIT, &|c| {
            !c.held_claims.is_empty()
        })
        .await;
    let claim = &held.held_claims[0];
    assert!(claim.reason.contains("checker crashed"), "{claim:?}");
    let solution: serde_json::Value = serde_json::from_str(&claim.solution_json).unwrap();
    assert_eq!(solution["value"], claim.claimed_score);
    let shown = grind_ok(&[
        "campaign",
        "show",
        "--coordinator",
        &cluster.coord.url,
        &campaign.to_string(),
    ]);
    let shown = String::from_utf8_lossy(&shown.stdout).to_string();
    assert!(shown.contains("the verifier failed"), "{shown}");
    let page = common::http::get(&cluster.coord.url, &format!("/campaigns/{campaign}")).await;
    assert!(page.body.contains("Held claims"), "{}", page.body);
    assert!(
        page.body.contains("claim_held"),
        "the event log shows the hold"
    );

    // The checker is mended: the units that went on finish, nothing was held against the
    // worker and no attempt was counted. No claim was lost: the best of the accepted value
    // and the held claims is the optimum. A campaign holding unchecked claims is not proven.
    // The first worker's own bound rose with its held finds, so its later claims of
    // "nothing better" are refused (`claim_refused`) and want another worker's run.
    std::fs::remove_file(&switch).unwrap();
    let second = cluster.worker("w2");
    let done = cluster.wait_finished(campaign, WAIT).await;
    assert_eq!(done.state, "done");
    assert!(!done.proven);
    assert_eq!(done.outcome, "best_found");
    let db = cluster.dir().join("grind.db");
    let best_held: i64 = common::campaigns::open_read_only(&db)
        .query_row("SELECT max(claimed_score) FROM held_claims", [], |r| {
            r.get(0)
        })
        .unwrap();
    let accepted: i64 = done.value.parse().unwrap_or(i64::MIN);
    assert_eq!(accepted.max(best_held), probe_optimum(3));
    assert!(common::campaigns::count_events(&db, "claim_held") >= 1);
    assert_eq!(
        common::campaigns::count_events(&db, "improvement_rejected"),
        0
    );
    assert_eq!(common::campaigns::count_events(&db, "unit_failed"), 0);
    let attempts: i64 = common::campaigns::open_read_only(&db)
        .query_row("SELECT max(attempts) FROM units", [], |r| r.get(0))
        .unwrap();
    assert_eq!(attempts, 0, "held claims count no attempt");
    let workers = common::campaigns::workers(&mut cluster.admin).await;
    assert!(workers.iter().all(|w| !w.banned));
    drop((worker, second));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_verifier_refuses_the_campaign_and_limits_are_enforced() {
    let mut cluster = Cluster::start(60_000, &[]).await;
    let refused = cluster
        .admin
        .create_campaign(pb::CreateCampaignRequest {
            problem: "probe".into(),
            params_json: serde_json::json!({"broken_checker": true}).to_string(),
            verify_rate: -1.0,
            ..Default::default()
        })
        .await;
    let status = assert_refused(refused, Code::InvalidArgument);
    assert!(
        status.message().contains("check at creation"),
        "{}",
        status.message()
    );
    assert!(
        status.message().contains("empty solution"),
        "{}",
        status.message()
    );

    // A lease whose checkpoint or provenance is too large is refused, naming the limits.
    let campaign = cluster
        .create("probe", serde_json::json!({"units": 2}), 0.0)
        .await;
    let mut raw: RawWorker = cluster.raw_worker("raw").await;
    let grant = raw.lease_one().await;
    assert_eq!(grant.campaign_id, campaign);
    let big = vec![0u8; grind_shared::problem::MAX_CHECKPOINT_BYTES + 1];
    let beat = raw
        .heartbeat(vec![pb::LeaseProgress {
            lease_id: grant.lease_id,
            cursor: big.clone(),
            ..Default::default()
        }])
        .await;
    let status = assert_refused(beat, Code::InvalidArgument);
    assert!(
        status.message().contains("the checkpoint is"),
        "{}",
        status.message()
    );
    let status = assert_refused(
        raw.release(grant.lease_id, big).await,
        Code::InvalidArgument,
    );
    assert!(
        status.message().contains("more than the"),
        "{}",
        status.message()
    );
    let seed =
        grind_shared::problem::codec::decode_u64s::<1>(&grant.unit_payload, "seed").unwrap()[0];
    let solution = serde_json::json!({"seed": seed, "value": value_of(seed)});
    let result = |provenance: String| pb::UnitResult {
        best_solution_json: solution.to_string(),
        best_score: value_of(seed),
        provenance_json: provenance,
        ..Default::default()
    };
    let pad = "x".repeat(grind_shared::problem::MAX_PROVENANCE_BYTES);
    let oversized = serde_json::json!({ "pad": pad }).to_string();
    let status = assert_refused(
        raw.complete(&grant, Some(result(oversized))).await,
        Code::InvalidArgument,
    );
    assert!(
        status.message().contains("provenance record is"),
        "{}",
        status.message()
    );
    let reply = raw
        .complete(&grant, Some(result(r#"{"ok":true}"#.into())))
        .await
        .expect("a result with a small record is taken");
    assert!(reply.accepted);
    let results = cluster.status(campaign).await.results;
    assert_eq!(results[0].provenance_json, r#"{"ok":true}"#);

    // A worker registered the old way (no host facts) is told why it gets no native code.
    let native = cluster
        .create(
            "probe",
            serde_json::json!({"units": 2, "native_code": true}),
            0.0,
        )
        .await;
    let reply = raw
        .client
        .lease(pb::LeaseRequest {
            worker_id: raw.id,
            capacity: 4,
            ..Default::default()
        })
        .await
        .expect("lease")
        .into_inner();
    assert!(
        reply.leases.iter().all(|g| g.campaign_id == campaign),
        "{reply:?}"
    );
    let skipped: Vec<_> = reply.skipped.iter().map(|s| s.campaign_id).collect();
    assert_eq!(skipped, vec![native]);
    assert!(
        reply.skipped[0].reason.contains("--allow-exec"),
        "{reply:?}"
    );
}

#[test]
fn a_run_of_a_users_split_ends_as_the_solvers_claim() {
    // `grind run` (one's own machine) lets its workers run native code without a flag.
    let out = grind_ok(&[
        "run",
        "probe",
        "--units",
        "5",
        "--native-code",
        "--claim-only",
        "--workers",
        "1",
        "--threads",
        "1",
        "--json",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    let v: serde_json::Value =
        serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(v["value"], probe_optimum(5).to_string());
    assert_eq!(v["units_done"], 5);
    assert_eq!(v["proven"], false);
    assert_eq!(v["outcome"], "claimed_optimum");
    // The same split made by grind itself is proven.
    let out = grind_ok(&["run", "probe", "--units", "5", "--json"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(
        (v["outcome"].as_str(), v["proven"].as_bool()),
        (Some("proven_optimum"), Some(true))
    );
}
