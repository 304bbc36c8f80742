//! Ginnow's sieve (the Taxman game) with real processes: a family of campaigns
//! (`--n-from A --n-to B`) is proven by two workers and survives a coordinator restart.

mod common;

use common::*;
use grind_proto::v1 as pb;
use serde_json::json;
use std::collections::BTreeSet;
use std::time::Duration;

const LONG: Duration = Duration::from_secs(240);

/// OEIS A019312 (published optima of the Taxman game), N = 60..=80 and N = 120..=128.
fn published(n: u64) -> u64 {
    const FROM_60: [u64; 21] = [
        1137, 1139, 1201, 1264, 1296, 1328, 1394, 1400, 1468, 1499, 1566, 1570, 1642, 1644, 1718,
        1793, 1869, 1914, 1991, 1997, 2041,
    ];
    const FROM_120: [u64; 9] = [4593, 4689, 4811, 4860, 4984, 5109, 5191, 5205, 5301];
    match n {
        60..=80 => FROM_60[n as usize - 60],
        120..=128 => FROM_120[n as usize - 120],
        _ => panic!("no published term for N = {n} in this test"),
    }
}

/// Plays a move list by the rules (an independent check of the coordinator's verifier):
/// every move needs a remaining proper divisor, and at the end none is left.
fn replay(n: u64, moves: &[u64]) -> Option<u64> {
    let mut present = vec![true; n as usize + 1];
    present[0] = false;
    for &k in moves {
        if k < 2 || k > n || !present[k as usize] {
            return None;
        }
        if !(1..k).any(|d| k % d == 0 && present[d as usize]) {
            return None;
        }
        for d in 1..=k {
            if k % d == 0 {
                present[d as usize] = false;
            }
        }
    }
    let over =
        (2..=n).all(|k| !present[k as usize] || !(1..k).any(|d| k % d == 0 && present[d as usize]));
    over.then(|| moves.iter().sum())
}

/// Creates the family of campaigns N = `from` ..= `to`.
async fn create_family(grind: &mut Cluster, from: u64, to: u64) -> Vec<i64> {
    grind
        .admin
        .create_campaign(pb::CreateCampaignRequest {
            problem: "sieve".into(),
            params_json: json!({"n_from": from, "n_to": to}).to_string(),
            name: String::new(),
            verify_rate: 0.0,
            max_attempts: 0,
            family: String::new(),
        })
        .await
        .expect("create the family")
        .into_inner()
        .campaign_ids
}

/// Waits for every campaign to finish, checks each proven optimum against the published
/// term and replays its game; returns the names of the workers that ran units.
async fn check_all_proven(grind: &mut Cluster, ids: &[i64]) -> BTreeSet<String> {
    let mut workers = BTreeSet::new();
    for &id in ids {
        let done = grind.wait_finished(id, LONG).await;
        let n = params(&done)["n"].as_u64().expect("a member names its N");
        assert_eq!(done.state, "done", "N = {n}");
        assert!(done.proven, "N = {n}");
        assert_eq!(done.value, published(n).to_string(), "N = {n}");
        let moves: Vec<u64> = solution_field(&done, "moves");
        assert_eq!(replay(n, &moves), Some(published(n)), "N = {n}: {moves:?}");
        let units = done.units.unwrap();
        assert_eq!(units.failed, 0, "N = {n}");
        assert!(units.split_complete && units.pending == 0 && units.leased == 0);
        workers.extend(result_workers(&grind.status(id).await));
    }
    workers
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_family_of_n_is_proven_by_two_workers() {
    let mut grind = Cluster::start(5_000, &[]).await;
    let ids = create_family(&mut grind, 120, 128).await;
    assert_eq!(ids.len(), 9, "one campaign per N");
    let _workers = grind.workers(&["w1", "w2"]);
    let workers = check_all_proven(&mut grind, &ids).await;
    assert!(
        workers.contains("w1") && workers.contains("w2"),
        "both workers ran units: {workers:?}"
    );
    let c = grind.show(ids[0]).await;
    assert!(!c.family.is_empty(), "members share a family label");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_family_resumes_after_a_coordinator_restart() {
    let mut grind = Cluster::start(3_000, &[]).await;
    let ids = create_family(&mut grind, 60, 80).await;
    assert_eq!(ids.len(), 21);
    // Nothing runs before the restart: the family and its split state must survive it.
    grind.restart().await;
    let mut w1 = grind.worker("w1");
    let _w2 = grind.worker("w2");
    // Kill the coordinator again once some campaigns are done and others are not.
    grind
        .wait_campaign(ids[0], "the first member to finish", LONG, &|c| {
            c.state == "done"
        })
        .await;
    grind.kill();
    w1.kill();
    grind.start_again().await;
    let _w3 = grind.worker("w3");
    check_all_proven(&mut grind, &ids).await;
}
