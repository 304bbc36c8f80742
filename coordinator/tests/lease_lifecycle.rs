//! The durable lease lifecycle, end to end: real coordinator and worker processes on
//! loopback, killed and restarted; raw clients playing late, confused and lying workers.

mod common;

use common::*;
use grind_proto::v1 as pb;
use serde_json::json;
use std::time::Duration;
use tonic::Code;

const LONG: Duration = Duration::from_secs(90);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_campaign_completes_with_the_right_answer_on_two_workers() {
    let mut grind = Cluster::start(5_000, &[]).await;
    let _workers = grind.workers(&["w1", "w2"]);
    // Every count replicated on the other worker.
    let primes = grind
        .create("primes", json!({"to": 2_000_000, "unit": 100_000}), 1.0)
        .await;
    let nim = grind.create("nimsquare", json!({"n": 29}), 1.0).await;

    let done = grind.wait_finished(primes, LONG).await;
    assert_eq!(done.state, "done");
    assert!(done.proven);
    // pi(2 * 10^6) = 148933 (published, OEIS A000720).
    let reply = grind.status(primes).await;
    assert_counted_once(&reply, 148_933);
    let replicas = reply.results.iter().filter(|r| r.replica).count();
    assert_eq!(replicas, 20, "every unit re-run once");
    for r in &reply.results {
        let p = provenance(r);
        assert!(p.worker_name == "w1" || p.worker_name == "w2");
        assert!(!p.worker_version.is_empty() && !p.git_commit.is_empty());
    }
    // A unit's replica ran on the other worker.
    for unit in reply.results.iter().map(|r| r.unit_id) {
        let workers: std::collections::BTreeSet<_> = reply
            .results
            .iter()
            .filter(|r| r.unit_id == unit)
            .map(|r| provenance(r).worker_id)
            .collect();
        assert_eq!(
            workers.len(),
            2,
            "unit {unit} replicated on a second worker"
        );
    }

    let nim = grind.wait_finished(nim, LONG).await;
    // Project Euler 310's statement: N = 29 gives 1160.
    assert_eq!((nim.state.as_str(), nim.value.as_str()), ("done", "1160"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_lease_loses_nothing() {
    let mut grind = Cluster::start(1_500, &[]).await;
    let campaign = grind
        .create(
            "primes",
            json!({"to": 400_000, "unit": 50_000, "min_unit_ms": 600}),
            0.0,
        )
        .await;
    let mut victim = start_worker(&grind.coord.url, "victim", 2);
    let victim_id = wait_for("the victim to hold leases", LONG, || {
        let mut admin = grind.admin.clone();
        async move {
            workers(&mut admin)
                .await
                .iter()
                .find(|w| w.name == "victim" && w.active_leases > 0)
                .map(|w| w.worker_id)
        }
    })
    .await;
    victim.kill();
    let _survivor = start_worker(&grind.coord.url, "survivor", 2);
    let done = grind.wait_finished(campaign, LONG).await;
    assert_eq!(done.state, "done");
    // pi(400000) = 33860.
    let reply = grind.status(campaign).await;
    assert_counted_once(&reply, 33_860);
    let survivor_units = reply
        .results
        .iter()
        .filter(|r| provenance(r).worker_id != victim_id)
        .count();
    assert!(survivor_units > 0, "the survivor re-ran the victim's units");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_coordinator_killed_and_restarted_finishes_with_the_identical_answer() {
    let mut grind = Cluster::start(3_000, &[]).await;
    let campaign = grind
        .create(
            "primes",
            json!({"to": 1_000_000, "unit": 50_000, "min_unit_ms": 250}),
            0.0,
        )
        .await;
    let _workers = grind.workers(&["w1", "w2"]);
    grind
        .wait_campaign(campaign, "a few units to finish", LONG, &|c| {
            c.units.unwrap().done >= 4
        })
        .await;
    grind.restart().await;
    let done = grind.wait_finished(campaign, LONG).await;
    assert_eq!(done.state, "done");
    // pi(10^6) = 78498.
    let reply = grind.status(campaign).await;
    assert_counted_once(&reply, 78_498);
    assert_eq!(done.units.unwrap().done, 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batched_grants_and_completions_survive_a_coordinator_sigkill() {
    // Tiny units: granted in runs, completed in batches, joined once measured.
    let mut grind = Cluster::start(3_000, &["--target-lease-ms", "400"]).await;
    let campaign = grind
        .create("primes", json!({"to": 100_000_000, "unit": 100}), 0.0)
        .await;
    let _workers = grind.workers(&["w1", "w2"]);
    grind
        .wait_campaign(campaign, "runs of units to finish", LONG, &|c| {
            // Past the first split batch (256 units as split), into joined units.
            c.units.unwrap().done >= 1_000
        })
        .await;
    grind.restart().await;
    let done = grind.wait_finished(campaign, LONG).await;
    assert_eq!(done.state, "done");
    // pi(10^8) = 5761455 (published, OEIS A006880).
    let reply = grind.status(campaign).await;
    assert_counted_once(&reply, 5_761_455);

    let db = open_read_only(&grind.coord.db);
    let restarted_ms: i64 = db
        .query_row(
            "SELECT max(at_ms) FROM events WHERE kind = 'coordinator_started'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    // Several leases in one grant and several results in one commit, on both sides of
    // the crash.
    let largest = |sql: &str, after: bool| -> i64 {
        db.query_row(sql, rusqlite::params![restarted_ms, after], |r| r.get(0))
            .unwrap()
    };
    for after in [false, true] {
        let grant = largest(
            "SELECT max(n) FROM (SELECT count(*) n FROM leases
             WHERE (granted_ms >= ?1) = ?2 GROUP BY worker_id, granted_ms)",
            after,
        );
        assert!(
            grant > 1,
            "largest grant {grant} (after the restart: {after})"
        );
        let commit = largest(
            "SELECT max(n) FROM (SELECT count(*) n FROM results
             WHERE (created_ms >= ?1) = ?2 GROUP BY worker_id, created_ms)",
            after,
        );
        assert!(
            commit > 1,
            "largest completion commit {commit} (after the restart: {after})"
        );
    }
    // Units created after measuring join many splitter units, and the units tile the range.
    let (units, joined, covered): (i64, i64, i64) = db
        .query_row(
            "SELECT count(*), max(parts), sum(parts) FROM units WHERE campaign_id = ?1",
            [campaign],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert!(joined > 1, "no unit was joined");
    assert_eq!(
        covered, 1_000_000,
        "splitter units covered by {units} units"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_finished_while_the_coordinator_was_down_is_delivered_afterwards() {
    let mut grind = Cluster::start(5_000, &[]).await;
    let campaign = grind
        .create(
            "primes",
            json!({"to": 100_000, "unit": 100_000, "min_unit_ms": 1_500}),
            0.0,
        )
        .await;
    let worker = grind.worker("patient");
    grind
        .wait_campaign(campaign, "the unit to be leased", LONG, &|c| {
            c.units.unwrap().leased == 1
        })
        .await;
    grind.kill();
    wait_log(
        "the worker to finish its unit offline",
        LONG,
        || worker.log(),
        "finished in",
    )
    .await;
    grind.start_again().await;
    let done = grind.wait_finished(campaign, LONG).await;
    assert_eq!(done.state, "done");
    let reply = grind.status(campaign).await;
    // pi(10^5) = 9592, delivered from the lease granted before the crash.
    assert_counted_once(&reply, 9_592);
    assert_eq!(reply.results.len(), 1);
    assert_eq!(provenance(&reply.results[0]).lease_id, 1);
    assert!(worker.log().contains("unreachable"), "{}", worker.log());
}

/// Waits until `pending` units of the campaign are pending (an expired lease freed one).
async fn wait_pending(grind: &Cluster, campaign: i64, pending: u64) {
    grind
        .wait_campaign(campaign, "an expired lease to free its unit", LONG, &|c| {
            c.units.unwrap().pending == pending
        })
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_completion_of_an_expired_reissued_lease_is_not_double_counted() {
    let mut grind = Cluster::start(600, &["--max-attempts", "5"]).await;
    let mut slow = grind.raw_worker("slow").await;
    let mut quick = grind.raw_worker("quick").await;
    let campaign = grind
        .create("primes", json!({"to": 2000, "unit": 1000}), 0.0)
        .await;

    // Unit 1: the slow worker's lease expires, the quick worker finishes it, then the slow
    // worker's late result arrives and is not counted.
    let late = slow.lease_one().await;
    wait_pending(&grind, campaign, 2).await;
    let fresh = quick.lease_one().await;
    assert_eq!(fresh.unit_id, late.unit_id, "the expired unit is re-issued");
    let truth = primes_in(&fresh);
    let first = quick.complete(&fresh, count(truth)).await.unwrap();
    assert!(first.accepted && !first.duplicate);
    let again = slow.complete(&late, count(truth)).await.unwrap();
    assert!(again.duplicate && !again.accepted, "{again:?}");

    // Unit 2: the late result arrives first and is taken; the re-issued lease is cancelled
    // and its result is the duplicate.
    let late = slow.lease_one().await;
    wait_pending(&grind, campaign, 1).await;
    let fresh = quick.lease_one().await;
    assert_eq!(fresh.unit_id, late.unit_id);
    let truth = primes_in(&late);
    let taken = slow.complete(&late, count(truth)).await.unwrap();
    assert!(
        taken.accepted,
        "a late but useful result is taken: {taken:?}"
    );
    assert_eq!(
        quick.verdict(fresh.lease_id).await,
        pb::LeaseVerdict::Cancel as i32
    );
    let dup = quick.complete(&fresh, count(truth)).await.unwrap();
    assert!(dup.duplicate && !dup.accepted);

    let done = grind.wait_finished(campaign, LONG).await;
    assert_eq!(done.state, "done");
    let reply = grind.status(campaign).await;
    assert_counted_once(&reply, primes_between(0, 2000));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_and_lying_requests_are_rejected_and_change_nothing() {
    let mut grind = Cluster::start(60_000, &["--max-attempts", "5"]).await;
    let mut liar = grind.raw_worker("liar").await;
    let mut honest = grind.raw_worker("honest").await;
    let mut referee = grind.raw_worker("referee").await;
    let campaign = grind
        .create("primes", json!({"to": 3000, "unit": 1000}), 1.0)
        .await;
    let other = grind.create("nimsquare", json!({"n": 10}), 1.0).await;

    // A lease nobody was granted.
    let nobodys = pb::LeaseGrant {
        lease_id: 999_999,
        ..Default::default()
    };
    let err = assert_refused(liar.complete(&nobodys, count(1)).await, Code::NotFound);
    assert!(err.message().contains("unknown lease 999999"), "{err:?}");

    // An unregistered worker.
    let err = assert_refused(liar.posing_as(424_242).lease(1).await, Code::NotFound);
    assert!(err.message().contains("unknown worker"), "{err:?}");

    let lease = liar.lease_one().await;
    assert_eq!(lease.campaign_id, campaign);
    let truth = primes_in(&lease);

    // Someone else's lease.
    assert_refused(
        honest.complete(&lease, count(truth)).await,
        Code::PermissionDenied,
    );

    // A count that is not a number, and a completion without a result.
    for bad in ["abc", "-3", "", "1e9"] {
        assert_refused(
            liar.complete(&lease, count(bad)).await,
            Code::InvalidArgument,
        );
    }
    assert_refused(liar.complete(&lease, None).await, Code::InvalidArgument);

    // An improvement naming the wrong campaign, and one for a campaign without solutions.
    for (campaign_id, fragment) in [(other, "belongs to campaign"), (campaign, "rejected")] {
        let refused = liar
            .report_improvement(lease.lease_id, campaign_id, "{}", 5)
            .await;
        let err = assert_refused(refused, Code::InvalidArgument);
        assert!(err.message().contains(fragment), "{err:?}");
    }

    // The other campaign has served its purpose: from here on, every lease comes from the
    // primes campaign (campaigns otherwise take turns).
    grind
        .admin
        .cancel_campaign(pb::CampaignRef { campaign_id: other })
        .await
        .unwrap();

    // None of that changed anything: the unit is still leased, nothing is counted.
    let c = grind.show(campaign).await;
    assert_eq!((c.units.unwrap().leased, c.value.as_str()), (1, "0"));

    // The liar completes with a wrong count: replication catches it.
    let first = liar.complete(&lease, count(truth + 1)).await.unwrap();
    assert!(first.accepted);
    let replica = honest.lease_one().await;
    assert!(replica.replica && replica.unit_id == lease.unit_id);
    honest.complete(&replica, count(truth)).await.unwrap();
    let c = grind.show(campaign).await;
    let units = c.units.unwrap();
    assert_eq!(
        (units.disputed, units.verifying, c.value.as_str()),
        (1, 1, "0")
    );
    let tiebreak = referee.lease_one().await;
    assert_eq!(tiebreak.unit_id, lease.unit_id);
    referee.complete(&tiebreak, count(truth)).await.unwrap();

    // The other units, honestly, each confirmed by a second worker.
    'work: loop {
        for holder in [&mut honest, &mut referee] {
            if let Some(grant) = holder.lease(1).await.unwrap().into_iter().next() {
                let reply = holder
                    .complete(&grant, count(primes_in(&grant)))
                    .await
                    .unwrap();
                assert!(reply.accepted);
                continue 'work;
            }
        }
        break;
    }
    let done = grind.wait_finished(campaign, LONG).await;
    assert_eq!(done.state, "done");
    let reply = grind.status(campaign).await;
    assert_counted_once(&reply, primes_between(0, 3000));
    let lie = reply
        .results
        .iter()
        .find(|r| provenance(r).worker_id == liar.id)
        .unwrap();
    assert_eq!(lie.state, "rejected");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_worker_finishes_a_fully_replicated_campaign_by_self_checks() {
    let mut grind = Cluster::start(
        5_000,
        &["--verify-rate", "1", "--self-check-after-ms", "300"],
    )
    .await;
    let campaign = grind
        .create("primes", json!({"to": 100_000, "unit": 25_000}), 1.0)
        .await;
    let _alone = grind.worker("alone");
    let done = grind.wait_finished(campaign, LONG).await;
    assert_eq!(done.state, "done");
    let reply = grind.status(campaign).await;
    // pi(10^5) = 9592: every unit counted once although each ran twice.
    assert_counted_once(&reply, 9_592);
    let replicas: Vec<_> = reply.results.iter().filter(|r| r.replica).collect();
    assert_eq!(replicas.len(), 4, "every unit was re-checked");
    assert!(replicas.iter().all(|r| r.self_checked));
    assert!(reply
        .results
        .iter()
        .filter(|r| !r.replica)
        .all(|r| !r.self_checked));
}
