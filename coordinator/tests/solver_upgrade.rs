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
    let dir = tempfile::tempdir().unwrap();
    let mut coord = start_coordinator(dir.path(), 5_000, &[]);
    let mut admin_client = admin(&coord.url).await;
    let campaign = create(
        &mut admin_client,
        "primes",
        json!({"to": 400_000, "unit": 50_000}),
        0.0,
    )
    .await;

    // An old worker finishes two units (it reports no solver version).
    let mut old_worker = raw_worker(&coord.url).await;
    let old_id = register(&mut old_worker, "old").await;
    let mut old_units = Vec::new();
    for _ in 0..2 {
        let grant = lease_one(&mut old_worker, old_id).await;
        let (lo, hi) = primes_unit(&grant.unit_payload);
        let reply = old_worker
            .complete(pb::CompleteRequest {
                worker_id: old_id,
                lease_id: grant.lease_id,
                unit_payload: grant.unit_payload.clone(),
                result: Some(pb::UnitResult {
                    count: primes_between(lo, hi).to_string(),
                    solver_version: OLD,
                    ..Default::default()
                }),
            })
            .await
            .unwrap()
            .into_inner();
        assert!(reply.accepted, "{reply:?}");
        old_units.push(grant.unit_id);
    }

    // The old coordinator stops; its database says the campaign runs the old solver.
    coord.proc.kill();
    {
        let db = rusqlite::Connection::open(&coord.db).unwrap();
        db.execute(
            "UPDATE campaigns SET solver_version = ?2 WHERE id = ?1",
            rusqlite::params![campaign, OLD],
        )
        .unwrap();
    }

    // The new grind resumes it.
    let coord = coord.start_again();
    let mut admin_client = admin(&coord.url).await;
    let _worker = start_worker(&coord.url, "new", 1);
    let done = wait_finished(&mut admin_client, campaign, LONG).await;
    assert_eq!(done.state, "done");
    assert_eq!(
        done.solver_version, current,
        "the campaign runs the new solver"
    );
    let reply = status(&mut admin_client, campaign).await;
    // pi(400,000) = 33,860 (published, OEIS A000720 / tables of pi(x)).
    assert_counted_once(&reply, 33_860);
    assert_eq!(reply.results.len(), 8);
    for result in &reply.results {
        let version = result.provenance.as_ref().unwrap().solver_version;
        if old_units.contains(&result.unit_id) {
            assert_eq!(version, OLD, "an old result keeps its label: {result:?}");
        } else {
            assert_eq!(version, current, "{result:?}");
        }
    }

    // The upgrade is in the event log, once.
    let db = rusqlite::Connection::open(&coord.db).unwrap();
    let upgrades: Vec<String> = db
        .prepare("SELECT detail FROM events WHERE campaign_id = ?1 AND kind = 'solver_upgraded'")
        .unwrap()
        .query_map([campaign], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(upgrades.len(), 1, "{upgrades:?}");
    let upgrade: serde_json::Value = serde_json::from_str(&upgrades[0]).unwrap();
    assert_eq!(
        (upgrade["from"].as_u64(), upgrade["to"].as_u64()),
        (Some(OLD as u64), Some(current as u64))
    );

    // The export's provenance splits the results by solver version and marks the older.
    let export = admin_client
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
