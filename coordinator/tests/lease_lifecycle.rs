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
    let dir = tempfile::tempdir().unwrap();
    let coord = start_coordinator(dir.path(), 5_000, &[]);
    let mut admin = admin(&coord.url).await;
    let _w1 = start_worker(&coord.url, "w1", 1);
    let _w2 = start_worker(&coord.url, "w2", 1);
    // Every count replicated on the other worker.
    let primes = create(
        &mut admin,
        "primes",
        json!({"to": 2_000_000, "unit": 100_000}),
        1.0,
    )
    .await;
    let nim = create(&mut admin, "nimsquare", json!({"n": 29}), 1.0).await;

    let done = wait_finished(&mut admin, primes, LONG).await;
    assert_eq!(done.state, "done");
    assert!(done.proven);
    // pi(2 * 10^6) = 148933 (published, OEIS A000720).
    let reply = status(&mut admin, primes).await;
    assert_counted_once(&reply, 148_933);
    let replicas = reply.results.iter().filter(|r| r.replica).count();
    assert_eq!(replicas, 20, "every unit re-run once");
    for r in &reply.results {
        let p = r.provenance.as_ref().unwrap();
        assert!(p.worker_name == "w1" || p.worker_name == "w2");
        assert!(!p.worker_version.is_empty() && !p.git_commit.is_empty());
    }
    // A unit's replica ran on the other worker.
    for unit in reply.results.iter().map(|r| r.unit_id) {
        let workers: std::collections::BTreeSet<_> = reply
            .results
            .iter()
            .filter(|r| r.unit_id == unit)
            .map(|r| r.provenance.as_ref().unwrap().worker_id)
            .collect();
        assert_eq!(
            workers.len(),
            2,
            "unit {unit} replicated on a second worker"
        );
    }

    let nim = wait_finished(&mut admin, nim, LONG).await;
    // Project Euler 310's statement: N = 29 gives 1160.
    assert_eq!((nim.state.as_str(), nim.value.as_str()), ("done", "1160"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_lease_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let coord = start_coordinator(dir.path(), 1_500, &[]);
    let mut admin = admin(&coord.url).await;
    let campaign = create(
        &mut admin,
        "primes",
        json!({"to": 400_000, "unit": 50_000, "min_unit_ms": 600}),
        0.0,
    )
    .await;
    let mut victim = start_worker(&coord.url, "victim", 2);
    let victim_id = wait_for("the victim to hold leases", LONG, || {
        let mut admin = admin.clone();
        async move {
            let reply = admin
                .status(pb::StatusRequest::default())
                .await
                .ok()?
                .into_inner();
            reply
                .workers
                .iter()
                .find(|w| w.name == "victim" && w.active_leases > 0)
                .map(|w| w.worker_id)
        }
    })
    .await;
    victim.kill();
    let _survivor = start_worker(&coord.url, "survivor", 2);
    let done = wait_finished(&mut admin, campaign, LONG).await;
    assert_eq!(done.state, "done");
    // pi(400000) = 33860.
    let reply = status(&mut admin, campaign).await;
    assert_counted_once(&reply, 33_860);
    let survivor_units = reply
        .results
        .iter()
        .filter(|r| r.provenance.as_ref().unwrap().worker_id != victim_id)
        .count();
    assert!(survivor_units > 0, "the survivor re-ran the victim's units");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_coordinator_killed_and_restarted_finishes_with_the_identical_answer() {
    let dir = tempfile::tempdir().unwrap();
    let mut coord = start_coordinator(dir.path(), 3_000, &[]);
    let mut admin_client = admin(&coord.url).await;
    let campaign = create(
        &mut admin_client,
        "primes",
        json!({"to": 1_000_000, "unit": 50_000, "min_unit_ms": 250}),
        0.0,
    )
    .await;
    let _w1 = start_worker(&coord.url, "w1", 1);
    let _w2 = start_worker(&coord.url, "w2", 1);
    wait_campaign(
        &admin_client,
        campaign,
        "a few units to finish",
        LONG,
        &|c| c.units.unwrap().done >= 4,
    )
    .await;
    coord.proc.kill();
    let coord = coord.start_again();
    let mut admin_client = admin(&coord.url).await;
    let done = wait_finished(&mut admin_client, campaign, LONG).await;
    assert_eq!(done.state, "done");
    // pi(10^6) = 78498.
    let reply = status(&mut admin_client, campaign).await;
    assert_counted_once(&reply, 78_498);
    assert_eq!(done.units.unwrap().done, 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_finished_while_the_coordinator_was_down_is_delivered_afterwards() {
    let dir = tempfile::tempdir().unwrap();
    let mut coord = start_coordinator(dir.path(), 5_000, &[]);
    let mut admin_client = admin(&coord.url).await;
    let campaign = create(
        &mut admin_client,
        "primes",
        json!({"to": 100_000, "unit": 100_000, "min_unit_ms": 1_500}),
        0.0,
    )
    .await;
    let worker = start_worker(&coord.url, "patient", 1);
    wait_campaign(
        &admin_client,
        campaign,
        "the unit to be leased",
        LONG,
        &|c| c.units.unwrap().leased == 1,
    )
    .await;
    coord.proc.kill();
    wait_for("the worker to finish its unit offline", LONG, || {
        let log = worker.log();
        async move { log.contains("finished in").then_some(()) }
    })
    .await;
    let coord = coord.start_again();
    let mut admin_client = admin(&coord.url).await;
    let done = wait_finished(&mut admin_client, campaign, LONG).await;
    assert_eq!(done.state, "done");
    let reply = status(&mut admin_client, campaign).await;
    // pi(10^5) = 9592, delivered from the lease granted before the crash.
    assert_counted_once(&reply, 9_592);
    assert_eq!(reply.results.len(), 1);
    assert_eq!(reply.results[0].provenance.as_ref().unwrap().lease_id, 1);
    assert!(worker.log().contains("unreachable"), "{}", worker.log());
}

fn count_result(count: u64) -> Option<pb::UnitResult> {
    Some(pb::UnitResult {
        count: count.to_string(),
        ..Default::default()
    })
}

async fn wait_pending(
    admin: &mut grind_proto::v1::admin_client::AdminClient<tonic::transport::Channel>,
    campaign: i64,
    pending: u64,
) {
    wait_campaign(
        admin,
        campaign,
        "an expired lease to free its unit",
        LONG,
        &|c| c.units.unwrap().pending == pending,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_completion_of_an_expired_reissued_lease_is_not_double_counted() {
    let dir = tempfile::tempdir().unwrap();
    let coord = start_coordinator(dir.path(), 600, &["--max-attempts", "5"]);
    let mut admin = admin(&coord.url).await;
    let mut client = raw_worker(&coord.url).await;
    let slow = register(&mut client, "slow").await;
    let quick = register(&mut client, "quick").await;
    let campaign = create(&mut admin, "primes", json!({"to": 2000, "unit": 1000}), 0.0).await;

    // Unit 1: the slow worker's lease expires, the quick worker finishes it, then the slow
    // worker's late result arrives and is not counted.
    let late = lease_one(&mut client, slow).await;
    wait_pending(&mut admin, campaign, 2).await;
    let fresh = lease_one(&mut client, quick).await;
    assert_eq!(fresh.unit_id, late.unit_id, "the expired unit is re-issued");
    let (lo, hi) = primes_unit(&fresh.unit_payload);
    let count = primes_between(lo, hi);
    let first = client
        .complete(pb::CompleteRequest {
            worker_id: quick,
            lease_id: fresh.lease_id,
            unit_payload: fresh.unit_payload.clone(),
            result: count_result(count),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(first.accepted && !first.duplicate);
    let again = client
        .complete(pb::CompleteRequest {
            worker_id: slow,
            lease_id: late.lease_id,
            unit_payload: late.unit_payload.clone(),
            result: count_result(count),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(again.duplicate && !again.accepted, "{again:?}");

    // Unit 2: the late result arrives first and is taken; the re-issued lease is cancelled
    // and its result is the duplicate.
    let late = lease_one(&mut client, slow).await;
    wait_pending(&mut admin, campaign, 1).await;
    let fresh = lease_one(&mut client, quick).await;
    assert_eq!(fresh.unit_id, late.unit_id);
    let (lo, hi) = primes_unit(&late.unit_payload);
    let count2 = primes_between(lo, hi);
    let taken = client
        .complete(pb::CompleteRequest {
            worker_id: slow,
            lease_id: late.lease_id,
            unit_payload: late.unit_payload.clone(),
            result: count_result(count2),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(
        taken.accepted,
        "a late but useful result is taken: {taken:?}"
    );
    let beat = client
        .heartbeat(pb::HeartbeatRequest {
            worker_id: quick,
            leases: vec![pb::LeaseProgress {
                lease_id: fresh.lease_id,
                ..Default::default()
            }],
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(beat.leases[0].verdict, pb::LeaseVerdict::Cancel as i32);
    let dup = client
        .complete(pb::CompleteRequest {
            worker_id: quick,
            lease_id: fresh.lease_id,
            unit_payload: fresh.unit_payload.clone(),
            result: count_result(count2),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(dup.duplicate && !dup.accepted);

    let done = wait_finished(&mut admin, campaign, LONG).await;
    assert_eq!(done.state, "done");
    let reply = status(&mut admin, campaign).await;
    assert_counted_once(&reply, primes_between(0, 2000));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_and_lying_requests_are_rejected_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let coord = start_coordinator(dir.path(), 60_000, &["--max-attempts", "5"]);
    let mut admin = admin(&coord.url).await;
    let mut client = raw_worker(&coord.url).await;
    let liar = register(&mut client, "liar").await;
    let honest = register(&mut client, "honest").await;
    let referee = register(&mut client, "referee").await;
    let campaign = create(&mut admin, "primes", json!({"to": 3000, "unit": 1000}), 1.0).await;
    let other = create(&mut admin, "nimsquare", json!({"n": 10}), 1.0).await;

    // A lease nobody was granted.
    let err = client
        .complete(pb::CompleteRequest {
            worker_id: liar,
            lease_id: 999_999,
            unit_payload: vec![],
            result: count_result(1),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound, "{err:?}");
    assert!(err.message().contains("unknown lease 999999"), "{err:?}");

    // An unregistered worker.
    let err = client
        .lease(pb::LeaseRequest {
            worker_id: 424_242,
            capacity: 1,
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound);
    assert!(err.message().contains("unknown worker"), "{err:?}");

    let lease = lease_one(&mut client, liar).await;
    assert_eq!(lease.campaign_id, campaign);
    let (lo, hi) = primes_unit(&lease.unit_payload);
    let truth = primes_between(lo, hi);

    // Someone else's lease.
    let err = client
        .complete(pb::CompleteRequest {
            worker_id: honest,
            lease_id: lease.lease_id,
            unit_payload: lease.unit_payload.clone(),
            result: count_result(truth),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied, "{err:?}");

    // A count that is not a number, and a completion without a result.
    for bad in ["abc", "-3", "", "1e9"] {
        let err = client
            .complete(pb::CompleteRequest {
                worker_id: liar,
                lease_id: lease.lease_id,
                unit_payload: lease.unit_payload.clone(),
                result: Some(pb::UnitResult {
                    count: bad.into(),
                    ..Default::default()
                }),
            })
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument, "{bad:?}: {err:?}");
    }
    let err = client
        .complete(pb::CompleteRequest {
            worker_id: liar,
            lease_id: lease.lease_id,
            unit_payload: lease.unit_payload.clone(),
            result: None,
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);

    // An improvement naming the wrong campaign, and one for a campaign without solutions.
    for (campaign_id, fragment) in [(other, "belongs to campaign"), (campaign, "rejected")] {
        let err = client
            .report_improvement(pb::ImprovementRequest {
                worker_id: liar,
                lease_id: lease.lease_id,
                campaign_id,
                solution_json: "{}".into(),
                claimed_score: 5,
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument);
        assert!(err.message().contains(fragment), "{err:?}");
    }

    // The other campaign has served its purpose: from here on, every lease comes from the
    // primes campaign (campaigns otherwise take turns).
    admin
        .cancel_campaign(pb::CampaignRef { campaign_id: other })
        .await
        .unwrap();

    // None of that changed anything: the unit is still leased, nothing is counted.
    let c = admin
        .show_campaign(pb::CampaignRef {
            campaign_id: campaign,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!((c.units.unwrap().leased, c.value.as_str()), (1, "0"));

    // The liar completes with a wrong count: replication catches it.
    let first = client
        .complete(pb::CompleteRequest {
            worker_id: liar,
            lease_id: lease.lease_id,
            unit_payload: lease.unit_payload.clone(),
            result: count_result(truth + 1),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(first.accepted);
    let replica = lease_one(&mut client, honest).await;
    assert!(replica.replica && replica.unit_id == lease.unit_id);
    client
        .complete(pb::CompleteRequest {
            worker_id: honest,
            lease_id: replica.lease_id,
            unit_payload: replica.unit_payload.clone(),
            result: count_result(truth),
        })
        .await
        .unwrap();
    let c = admin
        .show_campaign(pb::CampaignRef {
            campaign_id: campaign,
        })
        .await
        .unwrap()
        .into_inner();
    let units = c.units.unwrap();
    assert_eq!(
        (units.disputed, units.verifying, c.value.as_str()),
        (1, 1, "0")
    );
    let tiebreak = lease_one(&mut client, referee).await;
    assert_eq!(tiebreak.unit_id, lease.unit_id);
    client
        .complete(pb::CompleteRequest {
            worker_id: referee,
            lease_id: tiebreak.lease_id,
            unit_payload: tiebreak.unit_payload.clone(),
            result: count_result(truth),
        })
        .await
        .unwrap();

    // The other units, honestly, each confirmed by a second worker.
    'work: loop {
        for holder in [honest, referee] {
            let reply = client
                .lease(pb::LeaseRequest {
                    worker_id: holder,
                    capacity: 1,
                })
                .await
                .unwrap()
                .into_inner();
            if let Some(grant) = reply.leases.into_iter().next() {
                let (lo, hi) = primes_unit(&grant.unit_payload);
                let reply = client
                    .complete(pb::CompleteRequest {
                        worker_id: holder,
                        lease_id: grant.lease_id,
                        unit_payload: grant.unit_payload.clone(),
                        result: count_result(primes_between(lo, hi)),
                    })
                    .await
                    .unwrap()
                    .into_inner();
                assert!(reply.accepted);
                continue 'work;
            }
        }
        break;
    }
    let done = wait_finished(&mut admin, campaign, LONG).await;
    assert_eq!(done.state, "done");
    let reply = status(&mut admin, campaign).await;
    assert_counted_once(&reply, primes_between(0, 3000));
    let lie = reply
        .results
        .iter()
        .find(|r| r.provenance.as_ref().unwrap().worker_id == liar)
        .unwrap();
    assert_eq!(lie.state, "rejected");
}
