//! Distributed branch-and-bound on Topswops with real processes: the maximum is found and
//! proven, proof mode collects every optimal deck, and forged improvements are refused.

mod common;

use common::*;
use grind_proto::v1 as pb;
use serde_json::json;
use std::time::Duration;
use tonic::Code;

const LONG: Duration = Duration::from_secs(120);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_find_and_prove_the_maximum_and_every_optimal_deck() {
    let dir = tempfile::tempdir().unwrap();
    let coord = start_coordinator(dir.path(), 5_000, &[]);
    let mut admin = admin(&coord.url).await;
    let _w1 = start_worker(&coord.url, "w1", 1);
    let _w2 = start_worker(&coord.url, "w2", 1);
    // f(1..8) are computed by the problem itself (nothing passed in).
    let discover = create(&mut admin, "topswops", json!({"n": 9}), 0.0).await;
    let prove = create(&mut admin, "topswops", json!({"n": 8, "target": 22}), 0.0).await;

    let done = wait_finished(&mut admin, discover, LONG).await;
    // OEIS A000375: f(9) = 30.
    assert_eq!((done.state.as_str(), done.value.as_str()), ("done", "30"));
    assert!(done.proven);
    let solution: serde_json::Value = serde_json::from_str(&done.solution_json).unwrap();
    let deck: Vec<u64> = serde_json::from_value(solution["deck"].clone()).unwrap();
    assert_eq!(topswops_flips(&deck), 30);
    assert!(done.best_provenance.is_some());

    let done = wait_finished(&mut admin, prove, LONG).await;
    assert_eq!((done.state.as_str(), done.value.as_str()), ("done", "22"));
    let export = admin
        .export(pb::CampaignRef { campaign_id: prove })
        .await
        .unwrap()
        .into_inner();
    // Every optimal deck of 8 cards, by brute force over all 8! decks.
    let mut brute = Vec::new();
    let mut deck: Vec<u64> = (1..=8).collect();
    permutations(&mut deck, 0, &mut |d| {
        if topswops_flips(d) == 22 {
            brute.push(d.to_vec());
        }
    });
    brute.sort();
    let proof: serde_json::Value = serde_json::from_str(&export.provenance_json).unwrap();
    assert_eq!(proof["proven"], true);
    let c = admin
        .show_campaign(pb::CampaignRef { campaign_id: prove })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(c.samples as usize, brute.len(), "one hit per optimal deck");
}

fn permutations(deck: &mut Vec<u64>, k: usize, visit: &mut dyn FnMut(&[u64])) {
    if k == deck.len() {
        visit(deck);
        return;
    }
    for i in k..deck.len() {
        deck.swap(k, i);
        permutations(deck, k + 1, visit);
        deck.swap(k, i);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_improvements_are_refused_and_true_ones_shared() {
    let dir = tempfile::tempdir().unwrap();
    let coord = start_coordinator(dir.path(), 60_000, &[]);
    let mut admin = admin(&coord.url).await;
    let mut client = raw_worker(&coord.url).await;
    let me = register(&mut client, "forger").await;
    let campaign = create(&mut admin, "topswops", json!({"n": 5}), 0.0).await;
    let mut bounds = client
        .watch_bounds(pb::WatchBoundsRequest { worker_id: me })
        .await
        .unwrap()
        .into_inner();
    // f(4) = 4 is the starting bound: only decks with more flips count.
    let first = bounds.message().await.unwrap().unwrap();
    assert!(first
        .bounds
        .iter()
        .any(|b| b.campaign_id == campaign && b.bound == 4));
    let grant = client
        .lease(pb::LeaseRequest {
            worker_id: me,
            capacity: 1,
        })
        .await
        .unwrap()
        .into_inner()
        .leases
        .remove(0);
    for (deck, claimed, why) in [
        (json!([3, 1, 4, 5, 2]), 9, "takes 7 flips"),
        (json!([3, 1, 4, 5, 5]), 7, "invalid solution"),
        (json!([3, 1, 4, 5]), 7, "4 cards"),
        (json!([3, 1, 4, 5, 9]), 7, "not in 1..=5"),
    ] {
        let err = client
            .report_improvement(pb::ImprovementRequest {
                worker_id: me,
                lease_id: grant.lease_id,
                campaign_id: campaign,
                solution_json: json!({"deck": deck, "flips": claimed}).to_string(),
                claimed_score: claimed,
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument, "{deck}");
        assert!(err.message().contains(why), "{deck}: {err:?}");
    }
    let reply = client
        .report_improvement(pb::ImprovementRequest {
            worker_id: me,
            lease_id: grant.lease_id,
            campaign_id: campaign,
            solution_json: json!({"deck": [3, 1, 4, 5, 2], "flips": 7}).to_string(),
            claimed_score: 7,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert!(reply.accepted);
    // The new bound is pushed to watchers.
    let pushed = tokio::time::timeout(LONG, async {
        loop {
            let update = bounds.message().await.unwrap().unwrap();
            if let Some(b) = update
                .bounds
                .iter()
                .find(|b| b.campaign_id == campaign && b.bound == 7)
            {
                return b.bound;
            }
        }
    })
    .await
    .expect("the new bound on the stream");
    assert_eq!(pushed, 7);
    let c = admin
        .show_campaign(pb::CampaignRef {
            campaign_id: campaign,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(c.value, "7");
    assert_eq!(c.best_provenance.unwrap().worker_name, "forger");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_unit_donates_work_to_an_idle_worker() {
    let dir = tempfile::tempdir().unwrap();
    let coord = start_coordinator(dir.path(), 1_000, &[]);
    let mut admin = admin(&coord.url).await;
    // One unit: the whole search tree. Only donation can give the second worker work.
    let campaign = create(
        &mut admin,
        "topswops",
        json!({"n": 12, "split_depth": 0, "known": [0, 1, 2, 4, 7, 10, 16, 22, 30, 38, 51]}),
        0.0,
    )
    .await;
    let _w1 = start_worker(&coord.url, "w1", 1);
    let _w2 = start_worker(&coord.url, "w2", 1);
    let done = wait_finished(&mut admin, campaign, LONG).await;
    // OEIS A000375: f(12) = 65.
    assert_eq!((done.state.as_str(), done.value.as_str()), ("done", "65"));
    let reply = status(&mut admin, campaign).await;
    let conn = rusqlite::Connection::open(&coord.db).unwrap();
    let donations: i64 = conn
        .query_row(
            "SELECT count(*) FROM events WHERE kind = 'donation'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(donations > 0, "the unit donated work");
    let workers: std::collections::BTreeSet<_> = reply
        .results
        .iter()
        .map(|r| r.provenance.as_ref().unwrap().worker_id)
        .collect();
    assert_eq!(workers.len(), 2, "both workers searched part of the tree");
    assert!(done.units.unwrap().done > 1);
}
