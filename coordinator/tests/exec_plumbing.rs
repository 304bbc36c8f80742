//! The plumbing that makes campaigns of users' own solvers (issue 29) safe and honest, with
//! real `grind serve` and `grind-worker` processes on loopback and `exec` campaigns of small
//! shell solvers and checkers written by the tests: users' programs run only on workers
//! started with `--allow-exec`, each skip told and logged once; the solver's provenance
//! record kept with each result and in the export; a checker that fails holds the claim for
//! the operator without a strike; a broken checker refuses the campaign when it is added; a
//! finished campaign over a user's split is the solver's claim, never proven; and the size
//! limits on provenance and checkpoints.

mod common;

use common::cluster::Cluster;
use common::exec::{add_exec_campaign, script, start_exec_worker, try_add_exec_campaign};
use common::processes::{grind_ok, grind_run_json, start_worker};
use common::rpc::{assert_refused, RawWorker};
use common::waiting::wait_log;
use grind_proto::v1 as pb;
use grind_shared::problems::exec::fixtures;
use std::path::Path;
use std::time::Duration;
use tonic::Code;

const WAIT: Duration = Duration::from_secs(120);

/// The value of seed `seed`: the score of the solution `v <seed>`.
fn value_of(seed: u64) -> i64 {
    (seed % 1009 * 7919 % 1009) as i64
}

/// The best value of seeds `0..units`, from the closed form.
fn best_of(units: u64) -> i64 {
    (0..units).map(value_of).max().expect("at least one unit")
}

/// A user's anytime solver: seed `s` prints the solution `v s`, claims its value, says on
/// stderr that it ran (kept in its provenance record), and works on while a file exists at
/// `hold` (at most 30 s).
fn solver(hold: &Path) -> String {
    let hold = hold.display();
    format!(
        r#"#!/bin/sh
echo "seed $GRIND_SEED ran here" >&2
echo "o $(( GRIND_SEED % 1009 * 7919 % 1009 ))"
echo "v $GRIND_SEED"
i=0
while [ -e '{hold}' ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
"#
    )
}

/// A user's checker of [`solver`]'s solutions: the score of `v <seed>` is the seed's value
/// (43, invalid, for anything else). While a file exists at `switch` it fails as a crashing
/// checker does (exit 3: "the checker itself failed").
fn checker(switch: &Path) -> String {
    let switch = switch.display();
    format!(
        r#"#!/bin/sh
if [ -e '{switch}' ]; then echo "checker crashed: {switch} is present" >&2; exit 3; fi
x=
while IFS= read -r line; do case $line in "v "*) x=${{line#v }} ;; esac; done < "$2"
case $x in ''|*[!0-9]*) echo "expected one line: v <seed>"; exit 43 ;; esac
echo $(( x % 1009 * 7919 % 1009 ))
"#
    )
}

/// Adds a campaign over seeds `0..units` of [`solver`] and [`checker`], both with `switch`,
/// every result taken on the checker's word (no replicas). Returns its id.
fn add_seeds_campaign(url: &str, files: &Path, units: u64, switch: &Path) -> i64 {
    add_exec_campaign(
        url,
        &[
            "--solver",
            &script(files, "solve.sh", &solver(switch)),
            "--checker",
            &script(files, "check.sh", &checker(switch)),
            "--objective",
            "max",
            "--units",
            &format!("seeds:{units}"),
            "--unit-seconds",
            "30",
            "--grace-seconds",
            "1",
            "--verify-rate",
            "0",
        ],
    )
}

/// The seed of an exec solution document of [`solver`] (`{"model": "v <seed>\n"}`).
fn seed_of(solution_json: &str) -> u64 {
    let doc: serde_json::Value = serde_json::from_str(solution_json).expect("a solution document");
    let model = doc["model"].as_str().expect("a model");
    model
        .trim()
        .strip_prefix("v ")
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not a model of the seed solver: {model:?}"))
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
async fn users_programs_run_only_on_opted_in_workers_with_their_provenance_kept() {
    let mut cluster = Cluster::start(5_000, &[]).await;
    let files = tempfile::tempdir().unwrap();
    let never = files.path().join("never-there");
    let campaign = add_seeds_campaign(&cluster.coord.url, files.path(), 6, &never);
    let plain = start_worker(&cluster.coord.url, "plain", 1);
    let told = format!("campaign {campaign} is not for this worker");
    wait_log("the plain worker told why", WAIT, || plain.log(), &told).await;
    assert!(plain.log().contains("--allow-exec"), "{}", plain.log());
    let trusted = start_exec_worker(&cluster.coord.url, "trusted", &files.path().join("cache"));
    let done = cluster.wait_finished(campaign, WAIT).await;
    assert_eq!(done.state, "done", "{done:?}");
    assert_eq!(done.value, best_of(6).to_string());
    // Independent anytime runs: the best found, never a proof.
    assert_eq!((done.outcome.as_str(), done.proven), ("best_found", false));

    let status = cluster.status(campaign).await;
    let params: serde_json::Value = serde_json::from_str(&status.campaigns[0].params_json).unwrap();
    let workers = common::campaigns::workers(&mut cluster.admin).await;
    let (plain_id, trusted_id) = (worker_id(&workers, "plain"), worker_id(&workers, "trusted"));
    assert_eq!(status.results.len(), 6, "one result per unit");
    let mut seeds_run = Vec::new();
    for result in &status.results {
        assert_eq!(common::campaigns::provenance(result).worker_id, trusted_id);
        let record: serde_json::Value = serde_json::from_str(&result.provenance_json)
            .unwrap_or_else(|e| panic!("unit {}: provenance not JSON: {e}", result.unit_id));
        // The record is the solver run's own: its bundles, how it ended, what it said.
        assert_eq!(record["solver"]["digest"], params["solver"][0], "{record}");
        assert_eq!(record["checker"], params["checker"], "{record}");
        seeds_run.push(fixtures::seed_of_clean_run(&record).unwrap());
    }
    seeds_run.sort();
    assert_eq!(seeds_run, (0..6).collect::<Vec<_>>(), "each seed ran once");
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
    let best_seed = (0..6).find(|&s| value_of(s) == best_of(6)).unwrap();
    assert_eq!(
        record["solver_provenance"]["unit"],
        format!("seed {best_seed}"),
        "{record}"
    );
    assert!(
        record["solver_provenance"]["stderr_tail"]
            .as_str()
            .unwrap_or_default()
            .contains(&format!("seed {best_seed} ran here")),
        "{record}"
    );
    assert_eq!(record["claimed_by_solver"], false);
    drop((plain, trusted));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_checker_holds_the_claim_without_a_strike() {
    let mut cluster = Cluster::start(5_000, &[]).await;
    let files = tempfile::tempdir().unwrap();
    let switch = files.path().join("checker-broken");
    // The checker works when the campaign is added (its check at `add` passes), then breaks.
    // Each unit claims its value at once and works on while the checker is broken: the
    // one-thread worker has units left to run when the checker is mended.
    let campaign = add_seeds_campaign(&cluster.coord.url, files.path(), 3, &switch);
    std::fs::write(&switch, b"").unwrap();
    let worker = start_exec_worker(&cluster.coord.url, "w", &files.path().join("cache-w"));
    let held = cluster
        .wait_campaign(campaign, "a held claim", WAIT, &|c| {
            !c.held_claims.is_empty()
        })
        .await;
    let claim = &held.held_claims[0];
    assert!(claim.reason.contains("checker crashed"), "{claim:?}");
    assert_eq!(
        value_of(seed_of(&claim.solution_json)),
        claim.claimed_score,
        "{claim:?}"
    );
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
    // and the held claims is the best seed's. A campaign holding unchecked claims is not
    // proven.
    std::fs::remove_file(&switch).unwrap();
    let second = start_exec_worker(&cluster.coord.url, "w2", &files.path().join("cache-w2"));
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
    assert_eq!(accepted.max(best_held), best_of(3));
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
async fn a_broken_checker_refuses_the_campaign_and_limits_are_enforced() {
    let mut cluster = Cluster::start(60_000, &[]).await;
    let files = tempfile::tempdir().unwrap();
    let never = files.path().join("never-there");
    let broken = "#!/bin/sh\necho 'cannot read the instance' >&2\nexit 1\n";
    let refused = try_add_exec_campaign(
        &cluster.coord.url,
        &[
            "--solver",
            &script(files.path(), "solve.sh", &solver(&never)),
            "--checker",
            &script(files.path(), "broken-check.sh", broken),
            "--objective",
            "max",
            "--units",
            "seeds:2",
        ],
    );
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{stderr}");
    assert!(stderr.contains("check at creation"), "{stderr}");
    assert!(stderr.contains("empty solution"), "{stderr}");
    assert!(stderr.contains("cannot read the instance"), "{stderr}");
    let listed = cluster
        .admin
        .list_campaigns(pb::ListCampaignsRequest::default())
        .await
        .expect("list campaigns")
        .into_inner();
    assert!(listed.campaigns.is_empty(), "{listed:?}");

    // A lease whose checkpoint or provenance is too large is refused, naming the limits.
    let campaign = add_seeds_campaign(&cluster.coord.url, files.path(), 2, &never);
    let mut raw: RawWorker = cluster.raw_exec_worker("raw").await;
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
    let unit: serde_json::Value = serde_json::from_slice(&grant.unit_payload).unwrap();
    let seed = unit["seed"].as_u64().expect("a seed unit");
    let result = |provenance: String| pb::UnitResult {
        best_solution_json: serde_json::json!({ "model": format!("v {seed}\n") }).to_string(),
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

    // A worker registered the old way (no host facts) still gets built-in units, and is told
    // why it gets no users' programs.
    let builtin = cluster
        .create("primes", serde_json::json!({"to": 1000, "unit": 500}), 0.0)
        .await;
    let old = cluster.raw_worker("old").await;
    let reply = old
        .client
        .clone()
        .lease(pb::LeaseRequest {
            worker_id: old.id,
            capacity: 4,
            ..Default::default()
        })
        .await
        .expect("lease")
        .into_inner();
    assert!(!reply.leases.is_empty(), "{reply:?}");
    assert!(
        reply.leases.iter().all(|g| g.campaign_id == builtin),
        "{reply:?}"
    );
    let skipped: Vec<_> = reply.skipped.iter().map(|s| s.campaign_id).collect();
    assert_eq!(skipped, vec![campaign]);
    assert!(
        reply.skipped[0].reason.contains("--allow-exec"),
        "{reply:?}"
    );
}

#[test]
fn a_run_of_a_users_split_ends_as_the_solvers_claim() {
    // The toy problem of the exec fixtures: the units file splits 0..=11 into three slices,
    // each searched to its end for the smallest (x * x + 7) mod m.
    let files = tempfile::tempdir().unwrap();
    let m = fixtures::MODULUS;
    let smallest = (0..=11).map(|x| (x * x + 7) % m).min().unwrap();
    // `grind run` (one's own machine) lets its workers run the user's program without a flag.
    let v = grind_run_json(&[
        "run",
        "exec",
        "--solver",
        &script(files.path(), "slices.sh", fixtures::SLICES),
        "--checker",
        &script(files.path(), "check.sh", fixtures::CHECKER),
        "--instance",
        &script(files.path(), "instance.txt", &format!("{m}\n")),
        "--units-file",
        &script(files.path(), "units.txt", fixtures::UNITS),
        "--objective",
        "min",
        "--arg",
        "min",
        "--arg",
        "{instance}",
        "--arg",
        "{unit}",
        "--workers",
        "1",
        "--threads",
        "1",
        "--json",
    ]);
    assert_eq!(v["value"], smallest.to_string(), "{v}");
    assert_eq!(v["units_done"], 3, "{v}");
    assert_eq!(v["proven"], false, "{v}");
    assert_eq!(v["outcome"], "claimed_optimum", "{v}");
    // The same command over a split grind made itself is proven: f(6) = 10 (OEIS A000375).
    let v = grind_run_json(&[
        "run",
        "topswops",
        "--n",
        "6",
        "--workers",
        "1",
        "--threads",
        "1",
        "--json",
    ]);
    assert_eq!(v["value"], "10", "{v}");
    assert_eq!(
        (v["outcome"].as_str(), v["proven"].as_bool()),
        (Some("proven_optimum"), Some(true))
    );
}
