//! Heuristic Topswops climb rounds with real processes: every unit is run twice (on two
//! workers) and the runs agree, the rounds run to the requested limit, the best deck replays
//! to the campaign's value, and seed and budget are part of every unit's label.

mod common;

use common::*;
use serde_json::{json, Value};
use std::time::Duration;

const LONG: Duration = Duration::from_secs(240);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn climb_rounds_are_replicated_identically_and_improve_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let coord = start_coordinator(dir.path(), 5_000, &[]);
    let mut admin = admin(&coord.url).await;
    // Every unit replicated (verify rate 1): a climb unit depends on its payload only.
    let campaign = create(
        &mut admin,
        "topswops",
        json!({"n": 40, "heuristic": true, "strategy": "climb", "units": 3,
               "budget": 1500, "rounds": 3}),
        1.0,
    )
    .await;
    let _w1 = start_worker(&coord.url, "w1", 1);
    let _w2 = start_worker(&coord.url, "w2", 1);
    let done = wait_finished(&mut admin, campaign, LONG).await;
    assert_eq!(done.state, "done");
    let solution: Value = serde_json::from_str(&done.solution_json).unwrap();
    let deck: Vec<usize> = serde_json::from_value(solution["deck"].clone()).unwrap();
    assert_eq!(topswops_flips(&deck).to_string(), done.value);
    // The start: unique heads 2, 3, ..., 40, then 1 (built here with the shared crate's
    // bijection, scored by the replay above).
    let heads: Vec<u16> = (2..=40).chain([1]).collect();
    let start = grind_shared::problems::topswops::heads::to_deck(&heads).unwrap();
    let start: Vec<usize> = start.iter().map(|&c| c as usize).collect();
    assert!(done.value.parse::<u64>().unwrap() > topswops_flips(&start));
    let params: Value = serde_json::from_str(&done.params_json).unwrap();
    assert_eq!(params["strategy"], "climb");
    assert_eq!(
        (params["rounds"].clone(), params["budget"].clone()),
        (json!(3), json!(1500))
    );

    let conn = rusqlite::Connection::open(&coord.db).unwrap();
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
    let count = |kind: &str| -> i64 {
        conn.query_row(
            "SELECT count(*) FROM events WHERE campaign_id = ?1 AND kind = ?2",
            rusqlite::params![campaign, kind],
            |r| r.get(0),
        )
        .unwrap()
    };
    assert_eq!(count("replica_differed"), 0);
    assert_eq!(count("replica_agreed"), 9);
}
