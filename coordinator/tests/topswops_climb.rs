//! Heuristic Topswops climb rounds with real processes: every unit is run twice (on two
//! workers) and the runs agree, the rounds run to the requested limit, the best deck replays
//! to the campaign's value, and seed and budget are part of every unit's label.

mod common;

use common::*;
use serde_json::json;
use std::time::Duration;

const LONG: Duration = Duration::from_secs(240);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn climb_rounds_are_replicated_identically_and_improve_the_start() {
    let mut grind = Cluster::start(5_000, &[]).await;
    // Every unit replicated (verify rate 1): a climb unit depends on its payload only.
    let campaign = grind
        .create(
            "topswops",
            json!({"n": 40, "heuristic": true, "strategy": "climb", "units": 3,
                   "budget": 1500, "rounds": 3}),
            1.0,
        )
        .await;
    let _workers = grind.workers(&["w1", "w2"]);
    let done = grind.wait_finished(campaign, LONG).await;
    assert_eq!(done.state, "done");
    let deck: Vec<usize> = solution_field(&done, "deck");
    assert_eq!(topswops_flips(&deck).to_string(), done.value);
    // The start: unique heads 2, 3, ..., 40, then 1 (built here with the shared crate's
    // bijection, scored by the replay above).
    let heads: Vec<u16> = (2..=40).chain([1]).collect();
    let start = grind_shared::problems::topswops::heads::to_deck(&heads).unwrap();
    let start: Vec<usize> = start.iter().map(|&c| c as usize).collect();
    assert!(done.value.parse::<u64>().unwrap() > topswops_flips(&start));
    let params = params(&done);
    assert_eq!(params["strategy"], "climb");
    assert_eq!(
        (params["rounds"].clone(), params["budget"].clone()),
        (json!(3), json!(1500))
    );

    let conn = open_read_only(&grind.coord.db);
    let labels: Vec<String> = conn
        .prepare("SELECT label FROM units WHERE campaign_id = ?1 ORDER BY id")
        .unwrap()
        .query_map([campaign], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(labels.len(), 9, "3 rounds of 3 units: {labels:?}");
    for label in &labels {
        assert!(
            label.starts_with("climb round ") && label.ends_with(" budget 1500 moves"),
            "{label}"
        );
    }
    let distinct: std::collections::HashSet<_> = labels.iter().collect();
    assert_eq!(distinct.len(), 9, "a seed of its own for every unit");
    let events = |kind| event_details(&grind.coord.db, campaign, kind).len();
    assert_eq!(events("replica_differed"), 0);
    assert_eq!(events("replica_agreed"), 9);
}
