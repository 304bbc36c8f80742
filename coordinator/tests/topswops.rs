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
    let mut grind = Cluster::start(5_000, &[]).await;
    let _workers = grind.workers(&["w1", "w2"]);
    // f(1..8) are computed by the problem itself (nothing passed in).
    let discover = grind.create("topswops", json!({"n": 9}), 0.0).await;
    let prove = grind
        .create("topswops", json!({"n": 8, "target": 22}), 0.0)
        .await;

    let done = grind.wait_finished(discover, LONG).await;
    // OEIS A000375: f(9) = 30.
    assert_eq!((done.state.as_str(), done.value.as_str()), ("done", "30"));
    assert!(done.proven);
    let deck: Vec<u64> = solution_field(&done, "deck");
    assert_eq!(topswops_flips(&deck), 30);
    assert!(done.best_provenance.is_some());

    let done = grind.wait_finished(prove, LONG).await;
    assert_eq!((done.state.as_str(), done.value.as_str()), ("done", "22"));
    let export = grind
        .admin
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
    let c = grind.show(prove).await;
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
    let mut grind = Cluster::start(60_000, &[]).await;
    let mut forger = grind.raw_worker("forger").await;
    let campaign = grind.create("topswops", json!({"n": 5}), 0.0).await;
    let mut bounds = forger
        .client
        .watch_bounds(pb::WatchBoundsRequest {
            worker_id: forger.id,
        })
        .await
        .unwrap()
        .into_inner();
    // f(4) = 4 is the starting bound: only decks with more flips count.
    let first = bounds.message().await.unwrap().unwrap();
    assert!(first
        .bounds
        .iter()
        .any(|b| b.campaign_id == campaign && b.bound == 4));
    let grant = forger.lease_one().await;
    for (deck, claimed, why) in [
        (json!([3, 1, 4, 5, 2]), 9, "takes 7 flips"),
        (json!([3, 1, 4, 5, 5]), 7, "invalid solution"),
        (json!([3, 1, 4, 5]), 7, "4 cards"),
        (json!([3, 1, 4, 5, 9]), 7, "not in 1..=5"),
    ] {
        let solution = json!({"deck": deck, "flips": claimed}).to_string();
        let refused = forger
            .report_improvement(grant.lease_id, campaign, solution, claimed)
            .await;
        let err = assert_refused(refused, Code::InvalidArgument);
        assert!(err.message().contains(why), "{deck}: {err:?}");
    }
    let true_one = json!({"deck": [3, 1, 4, 5, 2], "flips": 7}).to_string();
    let reply = forger
        .report_improvement(grant.lease_id, campaign, true_one, 7)
        .await
        .unwrap();
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
    // A claim that cannot change the incumbent (7) is not checked, whatever its solution:
    // it changes nothing and costs no verifier run; one that would change it still is.
    for claimed in [6, 7] {
        let garbage = json!({"deck": [1, 1, 1, 1, 1], "flips": claimed}).to_string();
        let reply = forger
            .report_improvement(grant.lease_id, campaign, garbage, claimed)
            .await
            .unwrap();
        assert!(reply.unchecked && !reply.accepted, "{claimed}: {reply:?}");
        assert_eq!(reply.campaign_best, Some(7));
    }
    let garbage = json!({"deck": [1, 1, 1, 1, 1], "flips": 8}).to_string();
    let refused = forger
        .report_improvement(grant.lease_id, campaign, garbage, 8)
        .await;
    assert_refused(refused, Code::InvalidArgument);
    let c = grind.show(campaign).await;
    assert_eq!(c.value, "7");
    assert_eq!(c.best_provenance.unwrap().worker_name, "forger");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_unit_donates_work_to_an_idle_worker() {
    let mut grind = Cluster::start(1_000, &[]).await;
    // One unit: the whole search tree. Only donation can give the second worker work.
    let campaign = grind
        .create(
            "topswops",
            json!({"n": 12, "split_depth": 0, "known": [0, 1, 2, 4, 7, 10, 16, 22, 30, 38, 51]}),
            0.0,
        )
        .await;
    let _workers = grind.workers(&["w1", "w2"]);
    let done = grind.wait_finished(campaign, LONG).await;
    // OEIS A000375: f(12) = 65.
    assert_eq!((done.state.as_str(), done.value.as_str()), ("done", "65"));
    let reply = grind.status(campaign).await;
    let donations = count_events(&grind.coord.db, "donation");
    assert!(donations > 0, "the unit donated work");
    let workers: std::collections::BTreeSet<_> = reply
        .results
        .iter()
        .map(|r| provenance(r).worker_id)
        .collect();
    assert_eq!(workers.len(), 2, "both workers searched part of the tree");
    assert!(done.units.unwrap().done > 1);
}
