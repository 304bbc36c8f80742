//! The agent driven against an in-memory coordinator ([`fake::Fake`]) running real `primes`
//! campaigns: refusals, batching with its fallback, shutdown hand-back and a lost
//! connection. No fixed sleeps: every wait is on the fake's state, with a timeout.

mod fake;

use fake::agent::{Agent, WAIT};
use fake::Fake;
use grind_kit::reference::primes_between;
use grind_shared::problem::codec;
use grind_worker::{WorkerError, EXIT_REFUSED};

/// Primes below 100,000: 9,592 (the published value of pi(10^5)).
const PI_100K: u64 = 9_592;
/// 20 units of 5,000 numbers.
const PRIMES_100K: &str = r#"{"from":0,"to":100000,"unit":5000}"#;

/// Every unit accepted exactly once, nothing refused or acknowledged twice, and the total
/// the published one.
fn assert_every_unit_once(fake: &Fake) {
    fake.read(|s| {
        let per_unit = s.accepted_per_unit();
        assert_eq!(per_unit.len(), s.units.len(), "units with a result");
        assert!(per_unit.values().all(|&n| n == 1), "{per_unit:?}");
        assert_eq!(s.total(), PI_100K);
        assert!(s.duplicates.is_empty(), "duplicates: {:?}", s.duplicates);
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_campaign_runs_to_the_end_in_batches() {
    let fake = Fake::new("primes", PRIMES_100K);
    let agent = Agent::start(&fake, |_| {});
    assert!(fake.wait_for(WAIT, |s| s.all_done()).await);
    let summary = agent.stop().await.unwrap();
    assert_every_unit_once(&fake);
    fake.read(|s| {
        assert!(s.refused.is_empty(), "refused: {:?}", s.refused);
        assert!(s.batch_calls > 0);
        assert_eq!(s.single_completes, 0, "every result travelled in a batch");
    });
    assert_eq!(summary.units_done, 20);
    assert_eq!(summary.undelivered, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_batches_results_go_one_by_one() {
    let fake = Fake::new("primes", PRIMES_100K);
    fake.with(|s| s.batch_unimplemented = true);
    let agent = Agent::start(&fake, |_| {});
    assert!(fake.wait_for(WAIT, |s| s.all_done()).await);
    let summary = agent.stop().await.unwrap();
    assert_every_unit_once(&fake);
    fake.read(|s| {
        // Asked once, then never again.
        assert_eq!(s.batch_calls, 1);
        assert_eq!(s.single_completes, 20);
        assert!(s.refused.is_empty(), "refused: {:?}", s.refused);
    });
    assert_eq!(summary.units_done, 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_batches_are_sent_again_without_loss_or_duplicates() {
    let fake = Fake::new("primes", PRIMES_100K);
    fake.with(|s| s.fail_batches = 3);
    let agent = Agent::start(&fake, |_| {});
    assert!(fake.wait_for(WAIT, |s| s.all_done()).await);
    agent.stop().await.unwrap();
    assert_every_unit_once(&fake);
    fake.read(|s| {
        assert_eq!(s.batches_failed, 3);
        assert!(s.refused.is_empty(), "refused: {:?}", s.refused);
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_wait_out_a_lost_connection() {
    // Units of at least 100 ms, so results keep coming while the coordinator is away.
    let fake = Fake::new(
        "primes",
        r#"{"from":0,"to":100000,"unit":5000,"min_unit_ms":100}"#,
    );
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("events.jsonl");
    let path = events.clone();
    let agent = Agent::start(&fake, move |c| c.events = Some(path));
    assert!(fake.wait_for(WAIT, |s| !s.accepted.is_empty()).await);
    fake.with(|s| s.down = true);
    // The worker finishes units and fails to deliver them (at least twice: it holds them).
    assert!(
        fake.wait_for(WAIT, |s| s.attempted_while_down.len() >= 2)
            .await
    );
    let (held, accepted_before) = fake.with(|s| {
        s.down = false;
        (s.attempted_while_down.clone(), s.accepted.len())
    });
    assert!(accepted_before < 20);
    assert!(fake.wait_for(WAIT, |s| s.all_done()).await);
    let summary = agent.stop().await.unwrap();
    assert_every_unit_once(&fake);
    fake.read(|s| {
        for lease in &held {
            assert!(
                s.accepted.contains_key(lease),
                "lease {lease} held and lost"
            );
        }
        assert!(s.refused.is_empty(), "refused: {:?}", s.refused);
    });
    assert_eq!((summary.units_done, summary.undelivered), (20, 0));
    // The event stream names every accepted result once, with its unit.
    let text = std::fs::read_to_string(&events).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    let mut heard: Vec<(i64, i64)> = lines
        .iter()
        .filter(|e| e["event"] == "result_accepted")
        .map(|e| {
            (
                e["lease_id"].as_i64().unwrap(),
                e["unit_id"].as_i64().unwrap(),
            )
        })
        .collect();
    heard.sort();
    let expected: Vec<(i64, i64)> = fake.read(|s| {
        s.accepted
            .keys()
            .map(|lease| (*lease, s.leases[lease].unit_id))
            .collect()
    });
    assert_eq!(heard, expected);
    assert_eq!(lines.first().unwrap()["event"], "registered");
    assert_eq!(lines.last().unwrap()["event"], "stopped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_hands_leases_back_with_checkpoints() {
    // Units that would take a minute each: stopped long before they finish.
    let fake = Fake::new(
        "primes",
        r#"{"from":0,"to":100000,"unit":50000,"min_unit_ms":60000}"#,
    );
    let agent = Agent::start(&fake, |_| {});
    // Both running units have reported progress (so both have checkpoints).
    assert!(
        fake.wait_for(WAIT, |s| {
            s.heartbeats
                .last()
                .is_some_and(|h| h.leases.len() == 2 && h.leases.iter().all(|l| l.nodes > 0))
        })
        .await
    );
    let summary = agent.stop().await.unwrap();
    assert_eq!(summary.undelivered, 0);
    fake.read(|s| {
        assert!(s.accepted.is_empty());
        let granted: Vec<i64> = s.leases.keys().copied().collect();
        assert_eq!(granted.len(), 2);
        let mut released: Vec<i64> = s.releases.iter().map(|r| r.lease_id).collect();
        released.sort();
        let mut granted = granted;
        granted.sort();
        assert_eq!(released, granted, "every lease handed back once");
        for release in &s.releases {
            // The checkpoint is (position, primes counted so far), and the count is right.
            let [pos, count] = codec::decode_u64s::<2>(&release.cursor, "checkpoint").unwrap();
            let unit = &s.units[&s.leases[&release.lease_id].unit_id];
            let [start, end] = codec::decode_u64s::<2>(&unit.spec.payload, "unit").unwrap();
            assert!(start < pos && pos < end, "{start} < {pos} < {end}");
            assert_eq!(count, primes_between(start, pos));
            assert!(release.nodes > 0);
        }
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_banned_worker_stops_for_good() {
    let fake = Fake::new(
        "primes",
        r#"{"from":0,"to":100000,"unit":5000,"min_unit_ms":100}"#,
    );
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("events.jsonl");
    let path = events.clone();
    let agent = Agent::start(&fake, move |c| c.events = Some(path));
    assert!(fake.wait_for(WAIT, |s| !s.leases.is_empty()).await);
    fake.with(|s| s.banned = true);
    // It stops by itself, without being asked.
    let err = agent.exit().await.unwrap_err();
    assert!(matches!(err, WorkerError::Refused(_)), "{err}");
    assert_eq!(err.exit_code(), EXIT_REFUSED);
    let text = std::fs::read_to_string(&events).unwrap();
    assert!(
        text.lines()
            .any(|l| l.contains(r#""event":"refused","worker_id":1,"kind":"banned""#)),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forgotten_worker_registers_again_and_carries_on() {
    let fake = Fake::new(
        "primes",
        r#"{"from":0,"to":100000,"unit":5000,"min_unit_ms":50}"#,
    );
    let agent = Agent::start(&fake, |_| {});
    assert!(fake.wait_for(WAIT, |s| !s.accepted.is_empty()).await);
    let first = fake.read(|s| s.known[0]);
    fake.forget(first);
    assert!(fake.wait_for(WAIT, |s| s.registrations.len() == 2).await);
    // It asked for its old identity back.
    assert_eq!(fake.read(|s| s.registrations[1].previous_worker_id), first);
    assert!(fake.wait_for(WAIT, |s| s.all_done()).await);
    agent.stop().await.unwrap();
    fake.read(|s| {
        let per_unit = s.accepted_per_unit();
        assert_eq!(per_unit.len(), 20);
        assert!(per_unit.values().all(|&n| n == 1), "{per_unit:?}");
        assert_eq!(s.total(), PI_100K);
        // Units finished after the second registration were delivered under the new one.
        assert!(s
            .leases
            .values()
            .any(|l| l.worker_id != first && l.completed));
    });
}
