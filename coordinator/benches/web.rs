//! Web UI render times with 10,000 units and 200 workers registered.
//!
//! Builds a coordinator in-process on a temporary database: 200 workers, a count campaign of
//! 10,000 units (70% done, 20% leased with progress reports, 10% pending), and an
//! optimisation campaign with one improvement per flip count (23). Serves it on loopback and times
//! each page and API endpoint over HTTP (request to last byte), first (cold) and then the
//! best/median/worst of repeated requests.
//!
//! `cargo bench -p grind-coordinator --bench web` (figures in bench/notes-web.md).

use axum::body::Bytes;
use grind_coordinator::clock::SystemClock;
use grind_coordinator::config::Config;
use grind_coordinator::store::Store;
use grind_coordinator::Coordinator;
use grind_proto::v1 as pb;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use std::sync::Arc;
use std::time::{Duration, Instant};

const WORKERS: usize = 200;
const UNITS: u64 = 10_000;
const REPEATS: usize = 15;
const BUDGET_MS: f64 = 200.0;

async fn populate(coordinator: &Coordinator) -> (i64, i64) {
    let mut workers = Vec::new();
    for i in 0..WORKERS {
        let reply = coordinator
            .register(
                pb::RegisterRequest {
                    name: format!("bench-worker-{i:03}"),
                    host: format!("host-{:02}", i / 4),
                    cores: 4,
                    version: "0.1.0".into(),
                    git_commit: "0123456789ab".into(),
                    previous_worker_id: 0,
                    ..Default::default()
                },
                None,
                None,
            )
            .await
            .expect("register");
        workers.push(reply.worker_id);
    }
    let ids = coordinator
        .create_campaigns(pb::CreateCampaignRequest {
            problem: "primes".into(),
            params_json: format!(r#"{{"from":0,"to":{},"unit":1000}}"#, UNITS * 1000),
            name: String::new(),
            verify_rate: 0.0,
            max_attempts: 0,
            ..Default::default()
        })
        .await
        .expect("create");
    let primes = ids[0];
    // Lease every unit, spread over the workers.
    let mut grants = Vec::new();
    let per_worker = (UNITS as usize).div_ceil(WORKERS) as u32;
    for &w in &workers {
        let reply = coordinator
            .lease(pb::LeaseRequest {
                worker_id: w,
                capacity: per_worker,
                max_units: 0,
                wait_ms: 0,
            })
            .await
            .expect("lease");
        grants.extend(reply.leases.into_iter().map(|g| (w, g)));
    }
    // Complete 7 in 10 (concurrently, so the store groups the commits), 2 in 10 report
    // progress, 1 in 10 is released back to pending.
    let mut tasks = Vec::new();
    for (i, (w, g)) in grants.into_iter().enumerate() {
        let c = coordinator.clone();
        tasks.push(tokio::spawn(async move {
            if i % 10 < 7 {
                c.complete(pb::CompleteRequest {
                    worker_id: w,
                    lease_id: g.lease_id,
                    result: Some(pb::UnitResult {
                        count: "80".into(),
                        nodes: 1000,
                        cpu_seconds: 0.01 + (i % 13) as f64 * 0.01,
                        wall_seconds: 0.01 + (i % 13) as f64 * 0.01,
                        ..Default::default()
                    }),
                    unit_payload: g.unit_payload,
                })
                .await
                .map(|_| ())
            } else if i % 10 == 9 {
                c.release(pb::ReleaseRequest {
                    worker_id: w,
                    lease_id: g.lease_id,
                    cursor: Vec::new(),
                    nodes: 0,
                    cpu_seconds: 0.0,
                    ..Default::default()
                })
                .await
                .map(|_| ())
            } else {
                c.heartbeat(pb::HeartbeatRequest {
                    worker_id: w,
                    leases: vec![pb::LeaseProgress {
                        lease_id: g.lease_id,
                        nodes: 500,
                        cursor: Vec::new(),
                        fraction: 0.5,
                    }],
                    ..Default::default()
                })
                .await
                .map(|_| ())
            }
        }));
    }
    for t in tasks {
        t.await.expect("task").expect("complete or heartbeat");
    }
    // An optimisation campaign with a history of improvements.
    let topswops = coordinator
        .create_campaigns(pb::CreateCampaignRequest {
            problem: "topswops".into(),
            params_json: r#"{"n":8}"#.into(),
            name: String::new(),
            verify_rate: 0.0,
            max_attempts: 0,
            ..Default::default()
        })
        .await
        .expect("create")[0];
    for deck in decks_by_flips(8) {
        coordinator
            .import(pb::ImportRequest {
                campaign_id: topswops,
                solution_json: format!(r#"{{"deck":{deck:?}}}"#),
                source: "bench".into(),
            })
            .await
            .expect("import");
    }
    (primes, topswops)
}

fn flips(deck: &[u8]) -> usize {
    let mut d = deck.to_vec();
    let mut n = 0;
    while d[0] != 1 {
        let k = d[0] as usize;
        d[..k].reverse();
        n += 1;
    }
    n
}

/// One deck of `n` cards for every flip count reached, fewest flips first (so importing them
/// in order makes one improvement each).
fn decks_by_flips(n: u8) -> Vec<Vec<u8>> {
    let mut best: std::collections::BTreeMap<usize, Vec<u8>> = Default::default();
    let mut deck: Vec<u8> = (1..=n).collect();
    // Heap's algorithm, iterative.
    let mut c = vec![0usize; n as usize];
    best.entry(flips(&deck)).or_insert_with(|| deck.clone());
    let mut i = 1;
    while i < n as usize {
        if c[i] < i {
            let j = if i % 2 == 0 { 0 } else { c[i] };
            deck.swap(j, i);
            best.entry(flips(&deck)).or_insert_with(|| deck.clone());
            c[i] += 1;
            i = 1;
        } else {
            c[i] = 0;
            i += 1;
        }
    }
    best.into_values().collect()
}

async fn time_get(base: &str, path: &str) -> (Duration, usize) {
    let client: Client<_, Empty<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let started = Instant::now();
    let response = client
        .get(format!("{base}{path}").parse().unwrap())
        .await
        .expect("GET");
    assert!(
        response.status().is_success(),
        "{path}: {}",
        response.status()
    );
    let body = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    (started.elapsed(), body.len())
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("bench.db")).unwrap();
        let coordinator = Coordinator::new(store, Arc::new(SystemClock), Config::default());
        let started = Instant::now();
        let (primes, topswops) = populate(&coordinator).await;
        let status = coordinator.campaign(primes).await.unwrap();
        let u = status.units.unwrap();
        println!(
            "populated in {:.1} s: {} workers, campaign {primes}: {} done, {} leased, {} pending",
            started.elapsed().as_secs_f64(),
            WORKERS,
            u.done,
            u.leased,
            u.pending
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(grind_coordinator::serve(
            coordinator.clone(),
            listener,
            async move {
                let _ = stopped.await;
            },
        ));
        let paths = [
            "/".to_string(),
            format!("/campaigns/{primes}"),
            format!("/campaigns/{topswops}"),
            "/workers".to_string(),
            "/api/campaigns".to_string(),
            format!("/api/campaigns/{primes}"),
            "/api/workers".to_string(),
            "/metrics".to_string(),
        ];
        println!(
            "{:<24} {:>9} {:>9} {:>9} {:>9} {:>9}",
            "path", "cold ms", "best ms", "median", "worst", "bytes"
        );
        let mut worst_overall: f64 = 0.0;
        for path in &paths {
            let (cold, _) = time_get(&base, path).await;
            let mut times = Vec::new();
            let mut bytes = 0;
            for _ in 0..REPEATS {
                let (t, n) = time_get(&base, path).await;
                times.push(t.as_secs_f64() * 1000.0);
                bytes = n;
            }
            times.sort_by(f64::total_cmp);
            let worst = times[REPEATS - 1];
            worst_overall = worst_overall.max(worst);
            println!(
                "{:<24} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9}",
                path,
                cold.as_secs_f64() * 1000.0,
                times[0],
                times[REPEATS / 2],
                worst,
                bytes
            );
        }
        println!(
            "worst warm request {worst_overall:.1} ms (budget {BUDGET_MS} ms): {}",
            if worst_overall < BUDGET_MS {
                "OK"
            } else {
                "OVER"
            }
        );
        let _ = stop.send(());
        let _ = server.await;
    });
}
