//! Resuming a campaign with a newer solver: results of the older solver are kept and
//! labelled, the campaign continues with the new one and ends with the exact answer.

mod common;

use common::*;
use grind_proto::v1 as pb;
use serde_json::json;
use std::time::Duration;

const LONG: Duration = Duration::from_secs(90);

/// The solver version a pre-reporting worker sends (the field did not exist: 0), which is
/// also the version the "old" campaign below was created with.
const OLD: u32 = 0;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_campaign_resumed_by_a_newer_solver_keeps_and_labels_the_older_results() {
    let current = grind_shared::registry::lookup("primes")
        .unwrap()
        .solver_version;
    assert!(current > OLD);
    let mut grind = Cluster::start(5_000, &[]).await;
    let campaign = grind
        .create("primes", json!({"to": 400_000, "unit": 50_000}), 0.0)
        .await;

    // An old worker finishes two units (it reports no solver version).
    let mut old_worker = grind.raw_worker("old").await;
    let mut old_units = Vec::new();
    for _ in 0..2 {
        let grant = old_worker.lease_one().await;
        let result = Some(pb::UnitResult {
            count: primes_in(&grant).to_string(),
            solver_version: OLD,
            ..Default::default()
        });
        let reply = old_worker.complete(&grant, result).await.unwrap();
        assert!(reply.accepted, "{reply:?}");
        old_units.push(grant.unit_id);
    }

    // The old coordinator stops; its database says the campaign runs the old solver.
    grind.kill();
    {
        let db = rusqlite::Connection::open(&grind.coord.db).unwrap();
        db.execute(
            "UPDATE campaigns SET solver_version = ?2 WHERE id = ?1",
            rusqlite::params![campaign, OLD],
        )
        .unwrap();
    }

    // The new grind resumes it.
    grind.start_again().await;
    let _worker = grind.worker("new");
    let done = grind.wait_finished(campaign, LONG).await;
    assert_eq!(done.state, "done");
    assert_eq!(
        done.solver_version, current,
        "the campaign runs the new solver"
    );
    let reply = grind.status(campaign).await;
    // pi(400,000) = 33,860 (published, OEIS A000720 / tables of pi(x)).
    assert_counted_once(&reply, 33_860);
    assert_eq!(reply.results.len(), 8);
    for result in &reply.results {
        let version = provenance(result).solver_version;
        if old_units.contains(&result.unit_id) {
            assert_eq!(version, OLD, "an old result keeps its label: {result:?}");
        } else {
            assert_eq!(version, current, "{result:?}");
        }
    }

    // The upgrade is in the event log, once.
    let upgrades = event_details(&grind.coord.db, campaign, "solver_upgraded");
    assert_eq!(upgrades.len(), 1, "{upgrades:?}");
    let upgrade: serde_json::Value = serde_json::from_str(&upgrades[0]).unwrap();
    assert_eq!(
        (upgrade["from"].as_u64(), upgrade["to"].as_u64()),
        (Some(OLD as u64), Some(current as u64))
    );

    // The export's provenance splits the results by solver version and marks the older.
    let export = grind
        .admin
        .export(pb::CampaignRef {
            campaign_id: campaign,
        })
        .await
        .unwrap()
        .into_inner();
    let record: serde_json::Value = serde_json::from_str(&export.provenance_json).unwrap();
    let by_solver = record["results_by_solver_version"].as_array().unwrap();
    let summary: Vec<(u64, u64, bool)> = by_solver
        .iter()
        .map(|v| {
            (
                v["solver_version"].as_u64().unwrap(),
                v["results"].as_u64().unwrap(),
                v["older_solver"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![(OLD as u64, 2, true), (current as u64, 6, false)]
    );
}
