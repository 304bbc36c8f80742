//! The hostile-worker suite: clients that lie, replay, forge, flood and send garbage, each
//! against a real `grind serve` while an honest `grind-worker` process finishes a campaign
//! beside them. Every misbehaviour must be refused or absorbed, the honest campaign must end
//! with the exact answer, and the store must stay consistent (checked with the chaos
//! harness's store invariants, reading the database read-only).
//!
//! Already covered elsewhere and not repeated here: unknown leases and workers, someone
//! else's lease, malformed counts and a single wrong count outvoted
//! (`lease_lifecycle.rs`); forged Topswops improvements on a small deck (`topswops.rs`);
//! tokens, identities bound to tokens, bans (`security.rs`).

mod common;

use bytes::Bytes;
use common::*;
use grind_chaos::invariants::{check_store, StoreExpectations, Verdict};
use grind_kit::reference;
use grind_proto::v1 as pb;
use serde_json::json;
use std::path::Path;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tonic::transport::Channel;
use tonic::Code;

const WAIT: Duration = Duration::from_secs(120);

/// Asserts every store invariant of the chaos harness on the database (read-only).
fn assert_store_consistent(db: &Path, honest: bool) {
    let mut conn = grind_chaos::observe::open_read_only(db).expect("open the store read-only");
    let mut verdict = Verdict::default();
    check_store(&mut conn, StoreExpectations { honest }, &mut verdict);
    assert!(verdict.ok(), "store invariants: {:#?}", verdict.violations);
    assert!(verdict.total_checks() > 0);
}

/// Asserts a finished campaign is done with exactly `total` (a primes count).
fn assert_done_with(done: &pb::CampaignStatus, total: u64) {
    assert_eq!(
        (done.state.as_str(), done.value.clone()),
        ("done", total.to_string())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fake_improvements_and_forged_search_results_change_nothing() {
    let mut grind = Cluster::start(3_000, &[]).await;
    let mut forger = grind.raw_worker("forger").await;
    let eight = grind.create("topswops", json!({"n": 8}), 0.0).await;
    let nine = grind.create("topswops", json!({"n": 9}), 0.0).await;
    let grant = forger.lease_one().await;
    assert_eq!(grant.campaign_id, eight);

    let short = reference::topswops_deck_with(8, 20).unwrap();
    let other_campaigns = reference::topswops_deck_with(9, 25).unwrap();
    let enormous = format!("{{\"deck\": [{}]}}", "1,".repeat(3 << 20));
    let cases: Vec<(String, i64, &str)> = vec![
        // A real 20-flip deck claimed to score more.
        (
            json!({"deck": short, "flips": 20}).to_string(),
            21,
            "claimed score 21",
        ),
        // The solution itself lies about its flips.
        (
            json!({"deck": short, "flips": 21}).to_string(),
            21,
            "takes 20 flips",
        ),
        // Not a deck at all.
        (
            json!({"deck": [1, 1, 2, 3, 4, 5, 6, 7]}).to_string(),
            9,
            "invalid",
        ),
        (json!({"cards": short}).to_string(), 9, "expected"),
        ("{not json".to_string(), 9, "not JSON"),
        // A good solution of the other campaign.
        (
            json!({"deck": other_campaigns, "flips": 25}).to_string(),
            25,
            "9 cards",
        ),
        // Larger than anything a solution may be.
        (enormous, 9, "more than"),
    ];
    for (solution, claimed, why) in &cases {
        let refused = forger
            .report_improvement(grant.lease_id, eight, solution.clone(), *claimed)
            .await;
        let err = assert_refused(refused, Code::InvalidArgument);
        assert!(err.message().contains(why), "{why}: {err:?}");
    }
    assert_eq!(
        count_events(&grind.coord.db, "improvement_rejected"),
        cases.len() as i64
    );

    // The same forgeries inside a completion are refused whole; so are proof-mode hits in a
    // discovery campaign, child units the problem does not make, and a result covering a
    // unit this lease does not hold.
    let best = |solution: serde_json::Value, score: i64| pb::UnitResult {
        best_solution_json: solution.to_string(),
        best_score: score,
        ..Default::default()
    };
    let deck22 = reference::topswops_deck_with(8, 22).unwrap();
    let forged = [
        best(json!({"deck": short, "flips": 20}), 22),
        best(json!({"deck": other_campaigns, "flips": 25}), 25),
        pb::UnitResult {
            samples: vec![json!({"deck": deck22, "flips": 22}).to_string()],
            ..Default::default()
        },
        pb::UnitResult {
            children: vec![pb::UnitSpec {
                label: "mine".into(),
                payload: vec![1, 2, 0],
            }],
            ..Default::default()
        },
    ];
    for result in forged {
        assert_refused(
            forger.complete(&grant, Some(result)).await,
            Code::InvalidArgument,
        );
    }
    let elsewhere = pb::LeaseGrant {
        unit_payload: if grant.unit_payload == [1, 1, 0] {
            vec![1, 2, 0]
        } else {
            vec![1, 1, 0]
        },
        ..grant.clone()
    };
    assert_refused(
        forger
            .complete(&elsewhere, Some(pb::UnitResult::default()))
            .await,
        Code::FailedPrecondition,
    );
    let status = grind.show(eight).await;
    assert_eq!(status.units.unwrap().leased, 1, "the unit is still leased");
    assert!(status.best_provenance.is_none(), "no incumbent: {status:?}");

    // The forger walks away; an honest worker finishes both campaigns exactly.
    let _honest = grind.worker("honest");
    for (campaign, n) in [(eight, 8u8), (nine, 9)] {
        let done = grind.wait_finished(campaign, WAIT).await;
        let f = reference::topswops_max(n).to_string();
        assert_eq!(
            (done.state.as_str(), done.value.as_str(), done.proven),
            ("done", f.as_str(), true),
            "f({n})"
        );
        assert_ne!(done.best_provenance.unwrap().worker_name, "forger");
    }
    assert_store_consistent(&grind.coord.db, true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_hiding_its_best_find_cannot_get_a_wrong_maximum_proven() {
    let mut grind = Cluster::start(30_000, &[]).await;
    let mut liar = grind.raw_worker("liar").await;
    // Replication at rate 1: every search unit is run again, from its beginning, by another
    // worker.
    let campaign = grind.create("topswops", json!({"n": 8}), 1.0).await;
    let decoy = reference::topswops_deck_with(8, 20).unwrap();
    loop {
        let grants = liar.lease(8).await.expect("lease");
        if grants.is_empty() {
            break;
        }
        for grant in grants {
            // "Searched my subtree: the best is this 20-flip deck" (f(8) = 22).
            let result = pb::UnitResult {
                best_solution_json: json!({"deck": decoy, "flips": 20}).to_string(),
                best_score: 20,
                ..Default::default()
            };
            liar.complete(&grant, Some(result)).await.unwrap();
        }
    }
    // Every unit the liar searched waits for a replica run, which the liar may not take.
    let waiting = grind.status(campaign).await.campaigns[0].units.unwrap();
    assert_eq!(
        waiting.done, 0,
        "a search unit finished on the liar's word alone"
    );
    let _honest = grind.worker("honest");
    let done = grind.wait_finished(campaign, WAIT).await;
    assert!(
        !(done.proven && done.value != "22"),
        "campaign ended proven with f(8) = {} (truth: 22)",
        done.value
    );
    assert_eq!(
        done.value, "22",
        "the honest replica runs found the true maximum"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_claiming_nothing_better_where_a_replica_finds_better_is_struck() {
    let mut grind = Cluster::start(30_000, &[]).await;
    let mut liar = grind.raw_worker("liar").await;
    // Replication at rate 1: every search unit is run again by another worker.
    let campaign = grind.create("topswops", json!({"n": 8}), 1.0).await;
    let mut lied = 0;
    loop {
        let grants = liar.lease(8).await.expect("lease");
        if grants.is_empty() {
            break;
        }
        for grant in grants {
            // "Nothing in my subtree beats the bound you gave me" (f(7) = 16; f(8) = 22, so
            // some subtree holds better decks).
            let result = pb::UnitResult {
                claims: true,
                claim_bound: grant.bound,
                ..Default::default()
            };
            assert_eq!(grant.bound, Some(16));
            liar.complete(&grant, Some(result)).await.unwrap();
            lied += 1;
        }
    }
    assert!(lied > 1);
    let _honest = grind.worker("honest");
    let done = grind.wait_finished(campaign, WAIT).await;
    assert_eq!(
        (done.state.as_str(), done.value.as_str(), done.proven),
        ("done", "22", true),
        "the campaign ends exact"
    );
    // Caught: struck where the honest replica found a better deck, its result rejected.
    let db = grind.coord.db.clone();
    let strikes = event_details(&db, campaign, "replica_contradicted");
    assert!(!strikes.is_empty(), "the lie was not caught");
    let conn = open_read_only(&db);
    let struck: Vec<i64> = conn
        .prepare(
            "SELECT DISTINCT worker_id FROM events WHERE campaign_id = ?1
             AND kind = 'replica_contradicted'",
        )
        .unwrap()
        .query_map([campaign], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(struck, [liar.id], "only the liar is struck");
    let reply = grind.status(campaign).await;
    let liar_accepted_where_better_exists = reply.results.iter().any(|r| {
        provenance(r).worker_id == liar.id
            && r.state == "accepted"
            && reply
                .results
                .iter()
                .any(|o| o.unit_id == r.unit_id && o.value.parse::<i64>().is_ok_and(|v| v > 16))
    });
    assert!(!liar_accepted_where_better_exists);
    // Every other pair of runs fits together: no difference is left unexplained.
    assert!(event_details(&db, campaign, "replica_differed").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn honest_replicas_under_different_bounds_agree() {
    let mut grind = Cluster::start(30_000, &[]).await;
    let campaign = grind.create("topswops", json!({"n": 9}), 1.0).await;
    let _workers = grind.workers(&["honest-1", "honest-2"]);
    let done = grind.wait_finished(campaign, WAIT).await;
    // OEIS A000375: f(9) = 30.
    assert_eq!((done.value.as_str(), done.proven), ("30", true));
    let db = grind.coord.db.clone();
    assert!(
        event_details(&db, campaign, "replica_differed").is_empty(),
        "consistent replicas counted as differing"
    );
    assert!(event_details(&db, campaign, "replica_contradicted").is_empty());
    // The unit where 30 was first found ran again under bound 30 and found nothing better:
    // different values, consistent claims, counted as agreeing.
    let agreed = event_details(&db, campaign, "replica_agreed");
    let differing_but_agreed = agreed.iter().any(|detail| {
        let d: serde_json::Value = serde_json::from_str(detail).unwrap();
        let claims = d["claims"].as_array().unwrap();
        claims.iter().any(|c| c["value"] != claims[0]["value"])
    });
    assert!(differing_but_agreed, "{agreed:#?}");
    assert_store_consistent(&db, true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_lying_on_every_count_is_outvoted_while_honest_workers_finish() {
    let mut grind = Cluster::start(3_000, &[]).await;
    let mut liar = grind.raw_worker("liar").await;
    let campaign = grind
        .create(
            "primes",
            json!({"to": 600_000, "unit": 50_000, "min_unit_ms": 150}),
            1.0,
        )
        .await;
    let _honest = grind.workers(&["honest-1", "honest-2"]);
    let mut lies = 0;
    let deadline = std::time::Instant::now() + WAIT;
    while grind.show(campaign).await.state == "running" {
        assert!(
            std::time::Instant::now() < deadline,
            "the campaign did not finish"
        );
        let grants = liar.lease(2).await.expect("lease");
        if grants.is_empty() {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        }
        for grant in grants {
            let (lo, hi) = primes_unit(&grant.unit_payload).expect("a primes unit");
            let lie = reference::primes_between(lo, hi) + 1 + lies % 3;
            if liar.complete(&grant, count(lie)).await.unwrap().accepted {
                lies += 1;
            }
        }
    }
    let done = grind.wait_finished(campaign, WAIT).await;
    assert_eq!(done.state, "done");
    let reply = grind.status(campaign).await;
    assert_counted_once(&reply, reference::primes_between(0, 600_000));
    let lied: Vec<_> = reply
        .results
        .iter()
        .filter(|r| provenance(r).worker_id == liar.id)
        .collect();
    assert_eq!(lied.len() as u64, lies);
    assert!(lies > 0, "the liar got no unit to lie about");
    assert!(lied.iter().all(|r| r.state == "rejected"), "{lied:?}");
    assert_store_consistent(&grind.coord.db, false);
}

/// Active leases of `worker` with their units' checkpoints.
fn active_leases(db: &Path, worker: i64) -> Vec<(i64, Option<Vec<u8>>)> {
    let conn = grind_chaos::observe::open_read_only(db).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT l.id, u.cursor FROM leases l JOIN units u ON u.id = l.unit_id
             WHERE l.worker_id = ?1 AND l.state = 'active'",
        )
        .unwrap();
    stmt.query_map([worker], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replayed_and_forged_lease_ids_are_refused_and_change_nothing() {
    let mut grind = Cluster::start(5_000, &[]).await;
    let mut replayer = grind.raw_worker("replayer").await;
    let campaign = grind
        .create(
            "primes",
            json!({"to": 400_000, "unit": 40_000, "min_unit_ms": 1_500}),
            0.0,
        )
        .await;

    // One unit done properly, then its completion replayed, changed, and re-released.
    let grant = replayer.lease_one().await;
    let (lo, hi) = primes_unit(&grant.unit_payload).expect("a primes unit");
    let truth = reference::primes_between(lo, hi);
    let first = replayer.complete(&grant, count(truth)).await.unwrap();
    assert!(first.accepted);
    for replay in [truth, truth + 1000] {
        let again = replayer.complete(&grant, count(replay)).await.unwrap();
        assert!(again.duplicate && !again.accepted, "{again:?}");
    }
    replayer
        .release(grant.lease_id, b"forged checkpoint".to_vec())
        .await
        .expect("releasing a finished lease is a no-op");
    let donated = replayer
        .client
        .donate(pb::DonateRequest {
            worker_id: replayer.id,
            lease_id: grant.lease_id,
            units: vec![pb::UnitSpec {
                label: "more".into(),
                payload: vec![0; 16],
            }],
            remaining_payload: grant.unit_payload.clone(),
            remaining_cursor: vec![],
        })
        .await;
    assert_refused(donated, Code::FailedPrecondition);
    let c = grind.show(campaign).await;
    assert_eq!(
        (c.value.clone(), c.units.unwrap().done),
        (truth.to_string(), 1)
    );

    // An honest worker at work; the replayer forges calls on its leases.
    let _honest = grind.worker("honest");
    let honest_id = wait_for("the honest worker to hold a lease", WAIT, || {
        let mut admin = grind.admin.clone();
        let db = grind.coord.db.clone();
        async move {
            let workers = workers(&mut admin).await;
            let id = workers.iter().find(|w| w.name == "honest")?.worker_id;
            (!active_leases(&db, id).is_empty()).then_some(id)
        }
    })
    .await;
    let (victim, cursor_before) = active_leases(&grind.coord.db, honest_id).remove(0);
    let beat = replayer
        .heartbeat(vec![
            pb::LeaseProgress {
                lease_id: victim,
                nodes: 1,
                cursor: b"forged checkpoint".to_vec(),
                fraction: 0.5,
            },
            pb::LeaseProgress {
                lease_id: grant.lease_id,
                ..Default::default()
            },
        ])
        .await
        .unwrap();
    let cancel = pb::LeaseVerdict::Cancel as i32;
    assert!(beat.leases.iter().all(|l| l.verdict == cancel), "{beat:?}");
    let cursor_now = active_leases(&grind.coord.db, honest_id)
        .into_iter()
        .find(|(id, _)| *id == victim)
        .and_then(|(_, c)| c);
    assert_ne!(cursor_now.as_deref(), Some(&b"forged checkpoint"[..]));
    let _ = cursor_before;
    let stolen = pb::LeaseGrant {
        lease_id: victim,
        ..grant.clone()
    };
    let denied = Code::PermissionDenied;
    assert_refused(replayer.complete(&stolen, count(0)).await, denied);
    assert_refused(replayer.release(victim, vec![]).await, denied);
    assert_refused(
        replayer.report_improvement(victim, campaign, "{}", 1).await,
        denied,
    );

    // Lease ids nobody was ever given.
    for forged in [0, -1, i64::MAX, i64::MIN, 1 << 40] {
        let fake = pb::LeaseGrant {
            lease_id: forged,
            ..grant.clone()
        };
        assert_refused(replayer.complete(&fake, count(1)).await, Code::NotFound);
        assert_refused(replayer.release(forged, vec![]).await, Code::NotFound);
        assert_eq!(replayer.verdict(forged).await, cancel, "{forged}");
    }

    // A completion for a unit the replayer never leased, on a lease it does hold.
    let mine = replayer.lease_one().await;
    let other_unit = pb::LeaseGrant {
        unit_payload: grant.unit_payload.clone(),
        ..mine
    };
    assert_refused(
        replayer.complete(&other_unit, count(7)).await,
        Code::FailedPrecondition,
    );
    // (Its own unit is left to expire; the honest worker takes it over.)

    let done = grind.wait_finished(campaign, WAIT).await;
    assert_eq!(done.state, "done");
    let reply = grind.status(campaign).await;
    assert_counted_once(&reply, reference::primes_between(0, 400_000));
    assert_store_consistent(&grind.coord.db, true);
}

/// What the coordinator answered to one raw HTTP/2 gRPC call.
#[derive(Debug)]
enum RawAnswer {
    /// A gRPC status code and message.
    Status(i32, String),
    /// The stream or connection was reset.
    Reset(String),
}

/// Sends `body` (gRPC framing included, possibly wrong) to `path` over a fresh HTTP/2
/// connection and reads the answer.
async fn raw_grpc(addr: &str, path: &str, body: Vec<u8>, end_stream: bool) -> RawAnswer {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (client, connection) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(async move {
        let _ = connection.await;
    });
    let mut client = client.ready().await.unwrap();
    let request = ::http::Request::builder()
        .method("POST")
        .uri(format!("http://{addr}{path}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(())
        .unwrap();
    let (response, mut stream) = client.send_request(request, false).unwrap();
    // The server may answer and close the stream before the body is sent (it does for an
    // unknown method, on the headers alone): then its answer counts, not the failed send.
    let sent = stream.send_data(Bytes::from(body), end_stream);
    let response = match tokio::time::timeout(WAIT, response)
        .await
        .expect("an answer")
    {
        Ok(response) => response,
        Err(e) => {
            return RawAnswer::Reset(match sent {
                Err(unsent) => format!("{unsent}; {e}"),
                Ok(()) => e.to_string(),
            })
        }
    };
    let (parts, mut body) = response.into_parts();
    let status_of = |headers: &::http::HeaderMap| {
        headers.get("grpc-status").map(|code| {
            let code = code.to_str().unwrap_or("-1").parse().unwrap_or(-1);
            let message = headers
                .get("grpc-message")
                .map(|m| m.to_str().unwrap_or_default().to_string())
                .unwrap_or_default();
            RawAnswer::Status(code, message)
        })
    };
    if let Some(answer) = status_of(&parts.headers) {
        return answer;
    }
    while let Some(chunk) = body.data().await {
        if let Err(e) = chunk {
            return RawAnswer::Reset(e.to_string());
        }
    }
    match body.trailers().await {
        Ok(Some(trailers)) => {
            status_of(&trailers).unwrap_or(RawAnswer::Status(-1, "no status".into()))
        }
        Ok(None) => RawAnswer::Status(-1, "no trailers".into()),
        Err(e) => RawAnswer::Reset(e.to_string()),
    }
}

/// A gRPC length-prefixed frame with a declared length (which may lie) and a payload.
fn frame(compressed: bool, declared: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![u8::from(compressed)];
    out.extend_from_slice(&declared.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// Starts a coordinator with a primes campaign of [0, `to`) and one honest worker on it.
async fn honest_primes_campaign(to: u64, unit: u64, min_unit_ms: u64) -> (Cluster, i64, Proc) {
    let mut grind = Cluster::start(5_000, &[]).await;
    let campaign = grind
        .create(
            "primes",
            json!({"to": to, "unit": unit, "min_unit_ms": min_unit_ms}),
            0.0,
        )
        .await;
    let honest = grind.worker("honest");
    (grind, campaign, honest)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enormous_truncated_and_malformed_messages_are_refused() {
    let (mut grind, campaign, _honest) = honest_primes_campaign(300_000, 30_000, 200).await;
    let addr = grind.coord.addr().to_string();
    let mut giant = grind.raw_worker("giant").await;
    let grant = giant.lease_one().await;

    // Enormous fields inside well-formed messages.
    let too_long_a_name = giant
        .client
        .register(pb::RegisterRequest {
            name: "x".repeat(1 << 20),
            host: "h".into(),
            ..Default::default()
        })
        .await;
    assert_refused(too_long_a_name, Code::InvalidArgument);
    assert_refused(
        giant.complete(&grant, count("9".repeat(20_000))).await,
        Code::InvalidArgument,
    );
    assert_refused(
        giant
            .heartbeat(vec![pb::LeaseProgress::default(); 100_001])
            .await,
        Code::InvalidArgument,
    );

    // Broken framing, over raw HTTP/2.
    let complete_path = "/grind.v1.Worker/Complete";
    let valid = prost::Message::encode_to_vec(&pb::CompleteRequest {
        worker_id: giant.id,
        lease_id: grant.lease_id,
        unit_payload: grant.unit_payload.clone(),
        result: count(1),
    });
    let cases: Vec<(&str, Vec<u8>, bool)> = vec![
        // Declares 4 GiB: refused on the length alone, nothing buffered.
        ("4 GiB declared", frame(false, u32::MAX, &[0; 64]), false),
        // Declares more than it sends, then ends the stream.
        (
            "truncated",
            frame(false, valid.len() as u32 + 50, &valid),
            true,
        ),
        // Half a frame header.
        ("half a header", vec![0, 0], true),
        // Right length, not protobuf.
        ("garbage payload", frame(false, 12, &[0xff; 12]), true),
        // Compressed flag without a compression scheme.
        (
            "compressed flag",
            frame(true, valid.len() as u32, &valid),
            true,
        ),
    ];
    for (what, body, end) in cases {
        let answer = raw_grpc(&addr, complete_path, body, end).await;
        println!("{what}: {answer:?}");
        match answer {
            RawAnswer::Status(code, message) => {
                assert!(code > 0, "{what}: accepted ({code} {message})")
            }
            RawAnswer::Reset(reason) => assert!(!reason.is_empty()),
        }
    }
    match raw_grpc(
        &addr,
        "/grind.v1.Worker/NoSuchCall",
        frame(false, 0, &[]),
        true,
    )
    .await
    {
        RawAnswer::Status(code, _) => assert_eq!(code, Code::Unimplemented as i32),
        other => panic!("unknown method: {other:?}"),
    }

    // None of it counted anything; the lease is still held; honest work finished exactly.
    let status_now = grind.show(campaign).await;
    assert!(status_now.value.parse::<u64>().unwrap() <= reference::primes_between(0, 300_000));
    let done = grind.wait_finished(campaign, WAIT).await;
    assert_done_with(&done, reference::primes_between(0, 300_000));
    assert_store_consistent(&grind.coord.db, true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_bytes_on_the_port_are_dropped_and_honest_work_goes_on() {
    let (mut grind, campaign, _honest) = honest_primes_campaign(300_000, 30_000, 200).await;
    let addr = grind.coord.addr().to_string();

    use grind_chaos::rng::Random;
    let mut rng = grind_chaos::rng::seeded(42);
    let mut random = vec![0u8; 64 << 10];
    for b in random.iter_mut() {
        *b = rng.next_u64() as u8;
    }
    let mut preface_then_garbage = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    preface_then_garbage.extend_from_slice(&[0xff; 4096]);
    let payloads: Vec<(&str, Vec<u8>)> = vec![
        ("random bytes", random),
        ("HTTP/1.1", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec()),
        (
            "TLS hello",
            vec![
                0x16, 0x03, 0x01, 0x00, 0xa5, 0x01, 0x00, 0x00, 0xa1, 0x03, 0x03,
            ],
        ),
        ("HTTP/2 preface, then garbage frames", preface_then_garbage),
        ("half a preface", b"PRI * HTTP/2.0\r\n".to_vec()),
        ("nothing", Vec::new()),
    ];
    // Each kind many times at once; connections that send nothing more are left open.
    let mut connections = tokio::task::JoinSet::new();
    for round in 0..20 {
        for (what, bytes) in payloads.clone() {
            let addr = addr.clone();
            connections.spawn(async move {
                let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
                let _ = stream.write_all(&bytes).await;
                // The coordinator drops garbage: read until it closes (or 10 s, for the
                // quiet ones it may keep waiting on).
                let mut buf = [0u8; 4096];
                let closed = tokio::time::timeout(Duration::from_secs(10), async {
                    loop {
                        match stream.read(&mut buf).await {
                            Ok(0) | Err(_) => return true,
                            Ok(_) => {}
                        }
                    }
                })
                .await
                .unwrap_or(false);
                (round, what, closed)
            });
        }
    }
    let mut closed = std::collections::BTreeMap::new();
    while let Some(done) = connections.join_next().await {
        let (_, what, was_closed) = done.unwrap();
        if was_closed {
            println!("{what}: closed by the coordinator");
        }
        *closed.entry(what).or_insert(0) += u32::from(was_closed);
    }
    for what in [
        "random bytes",
        "HTTP/2 preface, then garbage frames",
        "TLS hello",
    ] {
        assert_eq!(closed[what], 20, "{what}: connections closed {closed:?}");
    }

    // Still serving: health, a new client, and the honest worker's campaign.
    let fresh = Channel::from_shared(grind.coord.url.clone())
        .unwrap()
        .connect()
        .await
        .unwrap();
    health(fresh, "grind.v1.Worker").await.expect("healthy");
    let done = grind.wait_finished(campaign, WAIT).await;
    assert_done_with(&done, reference::primes_between(0, 300_000));
    assert_store_consistent(&grind.coord.db, true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registration_flood_is_rate_limited_and_lease_hoarding_is_capped() {
    let mut grind = Cluster::start(
        2_000,
        &[
            "--registrations-per-second",
            "5",
            "--max-leases-per-worker",
            "3",
        ],
    )
    .await;
    let campaign = grind
        .create(
            "primes",
            json!({"to": 400_000, "unit": 20_000, "min_unit_ms": 100}),
            0.0,
        )
        .await;
    let honest = grind.worker("honest");
    wait_log(
        "the honest worker to register",
        WAIT,
        || honest.log(),
        "registered as worker",
    )
    .await;

    // 300 registrations at once from one address.
    let client = raw_worker(&grind.coord.url).await;
    let started = std::time::Instant::now();
    let mut flood = tokio::task::JoinSet::new();
    for i in 0..300 {
        let mut client = client.clone();
        flood.spawn(async move {
            client
                .register(pb::RegisterRequest {
                    name: format!("flood-{i}"),
                    host: "flood".into(),
                    cores: 1,
                    ..Default::default()
                })
                .await
                .map(|r| r.into_inner().worker_id)
        });
    }
    let (mut admitted, mut refused) = (Vec::new(), 0);
    while let Some(done) = flood.join_next().await {
        match done.unwrap() {
            Ok(id) => admitted.push(id),
            Err(status) => {
                assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
                refused += 1;
            }
        }
    }
    let allowed = 5 + (5.0 * started.elapsed().as_secs_f64()).ceil() as usize;
    assert!(
        admitted.len() <= allowed && refused >= 300 - allowed,
        "{} admitted, {refused} refused, at most {allowed} allowed",
        admitted.len()
    );
    assert_eq!(
        workers(&mut grind.admin).await.len(),
        1 + admitted.len(),
        "one row per admitted registration"
    );

    // An admitted identity tries to hoard units: it never holds more than its cap, and
    // what it never works on expires back to the honest worker.
    let mut hoarder = RawWorker {
        client: client.clone(),
        id: admitted[0],
    };
    for _ in 0..5 {
        hoarder.lease(1_000).await.expect("lease");
        let held = active_leases(&grind.coord.db, hoarder.id).len();
        assert!(held <= 3, "the hoarder holds {held} leases");
    }
    let done = grind.wait_finished(campaign, WAIT).await;
    assert_done_with(&done, reference::primes_between(0, 400_000));
    assert_store_consistent(&grind.coord.db, true);
}

/// A named donation attack: what the donor keeps and what it donates.
type Attack = (&'static str, Vec<u8>, Vec<Vec<u8>>);

/// A donation as a raw client sends it: the kept payload and the donated payloads.
async fn donate(
    worker: &mut RawWorker,
    grant: &pb::LeaseGrant,
    remaining: Vec<u8>,
    donated: Vec<Vec<u8>>,
) -> Result<pb::DonateReply, tonic::Status> {
    let reply = worker
        .client
        .donate(pb::DonateRequest {
            worker_id: worker.id,
            lease_id: grant.lease_id,
            units: donated
                .into_iter()
                .map(|payload| pb::UnitSpec {
                    label: "donated".into(),
                    payload,
                })
                .collect(),
            remaining_payload: remaining,
            remaining_cursor: Vec::new(),
        })
        .await?;
    Ok(reply.into_inner())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn donations_that_do_not_cover_the_unit_exactly_are_refused_and_struck() {
    use grind_shared::problems::topswops::TopswopsUnit;
    let unit = |prefix: &[u8], limit: Option<&[u8]>| {
        TopswopsUnit {
            prefix: prefix.to_vec(),
            limit: limit.map(<[u8]>::to_vec),
        }
        .encode()
    };
    let mut grind = Cluster::start(30_000, &[]).await;
    let mut donor = grind.raw_worker("donor").await;
    // No replication: the coverage check alone must keep the proof whole.
    let campaign = grind
        .create("topswops", json!({"n": 8, "split_depth": 1}), 0.0)
        .await;
    // Take the unit [2] (the subtree where the first card is 2); hand the others back.
    let mut grant = None;
    for leased in donor.lease(8).await.expect("lease") {
        if leased.unit_payload == unit(&[2], None) {
            grant = Some(leased);
        } else {
            donor.release(leased.lease_id, Vec::new()).await.unwrap();
        }
    }
    let grant = grant.expect("the unit [2] was granted");
    let kept = |limit: &[u8]| unit(&[2], Some(limit));
    let whole = |v: u8| unit(&[2, v], None);
    // (attack, what the donor keeps, what it donates)
    let attacks: Vec<Attack> = vec![
        ("shrink and donate nothing", kept(&[2, 3]), vec![]),
        // Keeps [2] below [2, 3], donates [2, 3] only: [2, 4] .. [2, 8] left unsearched.
        ("shrink and donate a little", kept(&[2, 3]), vec![whole(3)]),
        (
            "overlapping donations",
            kept(&[2, 7]),
            vec![whole(7), whole(7), whole(8)],
        ),
        (
            "a donation containing another",
            kept(&[2, 7]),
            vec![whole(7), unit(&[2, 7, 3], None), whole(8)],
        ),
        (
            "a donation outside the unit",
            kept(&[2, 8]),
            vec![whole(8), unit(&[3], None)],
        ),
        (
            "the donor keeps another subtree",
            unit(&[3], Some(&[3, 8])),
            vec![unit(&[3, 8], None)],
        ),
    ];
    for (attack, remaining, donated) in &attacks {
        let refused = donate(&mut donor, &grant, remaining.clone(), donated.clone()).await;
        let err = assert_refused(refused, Code::InvalidArgument);
        assert!(
            err.message().contains("donation"),
            "{attack}: {}",
            err.message()
        );
    }
    assert_eq!(
        count_events(&grind.coord.db, "donation_rejected"),
        attacks.len() as i64,
        "one strike per refused donation"
    );
    assert_eq!(count_events(&grind.coord.db, "donation"), 0);
    // The exact split is taken: [2] below [2, 3] kept, every child from 3 on donated.
    let exact: Vec<Vec<u8>> = (3..=8).map(whole).collect();
    let reply = donate(&mut donor, &grant, kept(&[2, 3]), exact)
        .await
        .unwrap();
    assert_eq!(reply.accepted, 6);
    // The donor walks away; an honest worker finishes everything.
    donor.release(grant.lease_id, Vec::new()).await.unwrap();
    let _honest = grind.worker("honest");
    let done = grind.wait_finished(campaign, WAIT).await;
    assert_eq!((done.state.as_str(), done.value.as_str()), ("done", "22"));
    assert!(done.proven);
    assert_store_consistent(&grind.coord.db, false);
}
