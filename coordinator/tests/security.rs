//! Authentication, bans and TLS against real `grind serve` and `grind-worker` processes.

mod common;

use common::*;
use grind_proto::refusal::refusal_of;
use grind_proto::v1 as pb;
use grind_proto::v1::admin_client::AdminClient;
use grind_proto::v1::refusal::Kind;
use grind_proto::v1::worker_client::WorkerClient;
use grind_worker::connect::{authenticated, Access, AuthChannel};
use std::process::Command;
use std::time::Duration;
use tonic::transport::Channel;
use tonic::Code;

const WAIT: Duration = Duration::from_secs(60);

/// `channel` sending `token` raw (even malformed ones) as a bearer token.
fn with_token(channel: Channel, token: Option<&str>) -> AuthChannel {
    let access = Access {
        token: token.map(str::to_string),
        ca_pem: None,
    };
    authenticated(channel, &access).expect("header-safe token")
}

/// A coordinator that requires a token on every call (no token exists yet), and a plain
/// channel to it.
async fn requiring_auth() -> (Cluster, Channel) {
    let grind = Cluster::start(30_000, &["--require-auth"]).await;
    let ch = channel(&grind.coord.url).await;
    (grind, ch)
}

/// The answer to one RPC called with an empty request.
struct Probe {
    /// The client it was called on: `worker` or `admin`.
    service: &'static str,
    rpc: &'static str,
    code: Code,
}

/// Calls every grind RPC once and returns the status codes of the refusals.
async fn call_everything(channel: Channel, token: Option<&str>) -> Vec<Probe> {
    let mut worker = WorkerClient::new(with_token(channel.clone(), token));
    let mut admin = AdminClient::new(with_token(channel, token));
    let mut probes = Vec::new();
    // A table: `client.rpc(request type)`, each called with the type's default.
    macro_rules! probe {
        ($($client:ident.$rpc:ident($request:ty)),* $(,)?) => {
            $(probes.push(Probe {
                service: stringify!($client),
                rpc: stringify!($rpc),
                code: $client
                    .$rpc(<$request>::default())
                    .await
                    .err()
                    .map_or(Code::Ok, |s| s.code()),
            });)*
        };
    }
    probe!(
        worker.register(pb::RegisterRequest),
        worker.lease(pb::LeaseRequest),
        worker.heartbeat(pb::HeartbeatRequest),
        worker.report_improvement(pb::ImprovementRequest),
        worker.donate(pb::DonateRequest),
        worker.complete(pb::CompleteRequest),
        worker.release(pb::ReleaseRequest),
        worker.watch_bounds(pb::WatchBoundsRequest),
        admin.create_campaign(pb::CreateCampaignRequest),
        admin.list_campaigns(pb::ListCampaignsRequest),
        admin.show_campaign(pb::CampaignRef),
        admin.pause_campaign(pb::CampaignRef),
        admin.resume_campaign(pb::CampaignRef),
        admin.cancel_campaign(pb::CampaignRef),
        admin.status(pb::StatusRequest),
        admin.leaderboard(pb::LeaderboardRequest),
        admin.export(pb::CampaignRef),
        admin.import(pb::ImportRequest),
        admin.list_problems(pb::ListProblemsRequest),
        admin.ban_worker(pb::BanWorkerRequest),
    );
    assert_eq!(probes.len(), 20, "every RPC of the two services");
    probes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_rpc_refuses_missing_and_wrong_tokens_and_roles_are_enforced() {
    let (grind, ch) = requiring_auth().await;
    let worker_token = create_token(&grind.coord.db, false);
    let admin_token = create_token(&grind.coord.db, true);

    for token in [None, Some("grind_0000"), Some("not even a token")] {
        for probe in call_everything(ch.clone(), token).await {
            assert_eq!(
                probe.code,
                Code::Unauthenticated,
                "{} with {token:?}",
                probe.rpc
            );
        }
    }
    // New tokens take effect within a second or so: wait until both work.
    wait_for("the new tokens to be loaded", WAIT, || {
        let ch = ch.clone();
        let (w, a) = (worker_token.clone(), admin_token.clone());
        async move {
            let worker = call_everything(ch.clone(), Some(&w)).await;
            let admin = call_everything(ch, Some(&a)).await;
            (worker[0].code == Code::Ok && admin[0].code == Code::Ok).then_some(())
        }
    })
    .await;
    for Probe { service, rpc, code } in call_everything(ch.clone(), Some(&worker_token)).await {
        if service == "admin" {
            assert_eq!(code, Code::PermissionDenied, "{rpc} with a worker token");
        } else {
            assert_ne!(code, Code::Unauthenticated, "{rpc} with a worker token");
            assert_ne!(code, Code::PermissionDenied, "{rpc} with a worker token");
        }
    }
    for Probe { rpc, code, .. } in call_everything(ch.clone(), Some(&admin_token)).await {
        assert_ne!(code, Code::Unauthenticated, "{rpc} with the admin token");
        assert_ne!(code, Code::PermissionDenied, "{rpc} with the admin token");
    }
    // Health stays open without a token.
    let served = health(ch.clone(), "grind.v1.Worker")
        .await
        .expect("health answers without a token");
    assert_eq!(served, 1);

    // A revoked token stops working.
    grind_ok(&[
        "token",
        "revoke",
        "--db",
        grind.coord.db.to_str().unwrap(),
        "1",
    ]);
    wait_for("the revocation to take effect", WAIT, || {
        let ch = ch.clone();
        let t = worker_token.clone();
        async move {
            let probes = call_everything(ch, Some(&t)).await;
            (probes[0].code == Code::Unauthenticated).then_some(())
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identities_are_bound_to_tokens_and_banned_workers_are_refused() {
    let (grind, ch) = requiring_auth().await;
    let alice_token = create_token(&grind.coord.db, false);
    let mallory_token = create_token(&grind.coord.db, false);
    let admin_token = create_token(&grind.coord.db, true);
    let mut admin = AdminClient::new(with_token(ch.clone(), Some(&admin_token)));
    let campaign = create_primes(&admin, r#"{"to": 4000, "unit": 1000}"#).await;
    let alice_client = WorkerClient::new(with_token(ch.clone(), Some(&alice_token)));
    let mut mallory = WorkerClient::new(with_token(ch.clone(), Some(&mallory_token)));
    let register = pb::RegisterRequest {
        name: "alice".into(),
        host: "h".into(),
        cores: 1,
        ..Default::default()
    };
    let mut alice = RawWorker {
        id: alice_client
            .clone()
            .register(register.clone())
            .await
            .unwrap()
            .into_inner()
            .worker_id,
        client: alice_client,
    };
    // Mallory cannot act as Alice, nor take over her identity by re-registering.
    let mut mallory_as_alice = RawWorker {
        client: mallory.clone(),
        id: alice.id,
    };
    let err = assert_refused(mallory_as_alice.lease(1).await, Code::PermissionDenied);
    // A refused call, not a refused worker: no typed refusal (Alice is not banned).
    assert_eq!(refusal_of(&err), None, "{err:?}");
    // An id the coordinator never gave is refused as an unknown worker, typed.
    let mut stranger = RawWorker {
        client: alice.client.clone(),
        id: alice.id + 1000,
    };
    let err = assert_refused(stranger.lease(1).await, Code::NotFound);
    let refusal = refusal_of(&err).expect("a typed refusal");
    assert_eq!(
        (refusal.kind(), refusal.worker_id),
        (Kind::UnknownWorker, alice.id + 1000)
    );
    let taken = mallory
        .register(pb::RegisterRequest {
            previous_worker_id: alice.id,
            ..register.clone()
        })
        .await
        .unwrap()
        .into_inner()
        .worker_id;
    assert_ne!(taken, alice.id);

    let grant = alice.lease_one().await;
    let banned = admin
        .ban_worker(pb::BanWorkerRequest {
            worker_id: alice.id,
            reason: "test".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(banned.leases_taken_back, 1);
    let err = assert_refused(
        alice.complete(&grant, count(primes_in(&grant))).await,
        Code::PermissionDenied,
    );
    assert!(err.message().contains("banned"), "{err:?}");
    assert_eq!(refusal_of(&err).map(|r| r.kind()), Some(Kind::Banned));
    let again = alice
        .client
        .register(pb::RegisterRequest {
            previous_worker_id: alice.id,
            ..register
        })
        .await;
    let err = assert_refused(again, Code::PermissionDenied);
    assert_eq!(refusal_of(&err).map(|r| r.kind()), Some(Kind::Banned));

    // The unit went back to pending and an honest worker finishes the campaign.
    let mut honest =
        start_worker_with_env(&grind.coord.url, &[("GRIND_TOKEN", mallory_token.as_str())]);
    let done = wait_done(&admin, campaign).await;
    assert_eq!(done.value, primes_between(0, 4000).to_string());
    let workers = workers(&mut admin).await;
    assert!(workers.iter().any(|w| w.worker_id == alice.id && w.banned));
    honest.kill();
}

/// Creates a primes campaign (no replication) as soon as the admin token has been loaded.
async fn create_primes(admin: &AdminClient<AuthChannel>, params_json: &str) -> i64 {
    wait_for("the admin token to be loaded", WAIT, || {
        let mut admin = admin.clone();
        async move {
            admin
                .create_campaign(pb::CreateCampaignRequest {
                    problem: "primes".into(),
                    params_json: params_json.into(),
                    verify_rate: 0.0,
                    ..Default::default()
                })
                .await
                .ok()
                .map(|r| r.into_inner().campaign_id)
        }
    })
    .await
}

/// Waits until `campaign` is done and returns its status.
async fn wait_done(admin: &AdminClient<AuthChannel>, campaign: i64) -> pb::CampaignStatus {
    wait_campaign(admin, campaign, "the campaign to finish", WAIT, &|c| {
        c.state == "done"
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_checkpoint_cannot_make_another_tokens_worker_count_wrong() {
    let (grind, ch) = requiring_auth().await;
    let poisoner_token = create_token(&grind.coord.db, false);
    let honest_token = create_token(&grind.coord.db, false);
    let admin_token = create_token(&grind.coord.db, true);
    let admin = AdminClient::new(with_token(ch.clone(), Some(&admin_token)));
    // One unit, no replication (the default rate, 0.05, skips most units the same way).
    let campaign = create_primes(&admin, r#"{"to": 30000, "unit": 30000}"#).await;
    let poisoner_client = WorkerClient::new(with_token(ch.clone(), Some(&poisoner_token)));
    let mut poisoner = RawWorker::register(&poisoner_client, "poisoner").await;
    let grant = poisoner.lease_one().await;
    // "I got to the end of the unit and found no prime": a checkpoint the primes solver
    // accepts (position inside the unit, count not above what was covered).
    let mut forged = 30_000u64.to_le_bytes().to_vec();
    forged.extend_from_slice(&0u64.to_le_bytes());
    poisoner.release(grant.lease_id, forged).await.unwrap();
    // A worker of another token is not handed the poisoner's checkpoint.
    let mut honest =
        start_worker_with_env(&grind.coord.url, &[("GRIND_TOKEN", honest_token.as_str())]);
    let done = wait_done(&admin, campaign).await;
    assert_eq!(
        done.value,
        primes_between(0, 30_000).to_string(),
        "the honest worker resumed from the forged checkpoint"
    );
    honest.kill();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_coordinator_with_a_self_signed_ca_serves_a_campaign_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let certs = dir.path().join("certs");
    grind_ok(&[
        "cert",
        "self-signed",
        "--host",
        "localhost",
        "--out-dir",
        certs.to_str().unwrap(),
    ]);
    let (cert, key, ca) = (
        certs.join("cert.pem"),
        certs.join("key.pem"),
        certs.join("ca.pem"),
    );
    let coord = start_coordinator(
        dir.path(),
        30_000,
        &[
            "--require-auth",
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ],
    );
    let port = coord.url.rsplit(':').next().unwrap().to_string();
    let url = format!("https://localhost:{port}");
    let worker_token = create_token(&coord.db, false);
    let admin_token = create_token(&coord.db, true);
    let token_file = dir.path().join("worker.token");
    std::fs::write(&token_file, &worker_token).unwrap();

    // The admin CLI over TLS: refused without the CA, accepted with it.
    let grind = |command: &[&str], rest: &[&str], pin_ca: bool| {
        let mut cmd = Command::new(grind_bin());
        cmd.args(command)
            .args(["--coordinator", &url])
            .env("GRIND_ADMIN_TOKEN", &admin_token);
        if pin_ca {
            cmd.arg("--ca-file").arg(&ca);
        }
        cmd.args(rest).output().unwrap()
    };
    let refused = grind(&["campaign", "list"], &[], false);
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("certificate"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    let created = wait_for("the admin token to be loaded", WAIT, || {
        let out = grind(
            &["campaign", "add"],
            &[
                "primes",
                "--to",
                "300000",
                "--unit",
                "50000",
                "--verify-rate",
                "0",
            ],
            true,
        );
        async move { out.status.success().then_some(out) }
    })
    .await;
    let campaign: i64 = String::from_utf8_lossy(&created.stdout)
        .trim()
        .parse()
        .unwrap();

    let mut cmd = Command::new(worker_bin());
    cmd.args(["--coordinator", &url, "--threads", "1", "--ca-file"])
        .arg(&ca)
        .arg("--token-file")
        .arg(&token_file);
    let worker = Proc::spawn_command(cmd);
    let deadline = std::time::Instant::now() + WAIT;
    let shown = loop {
        let out = grind(
            &["campaign", "show"],
            &[&campaign.to_string(), "--json"],
            true,
        );
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let shown: Option<serde_json::Value> = serde_json::from_str(&text).ok();
        if let Some(shown) = shown.filter(|v| v["state"] == "done") {
            break shown;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the campaign did not finish over TLS: {text}\nworker log:\n{}",
            worker.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(
        shown["value"],
        primes_between(0, 300_000).to_string(),
        "{shown}"
    );
}

#[test]
fn serving_a_public_address_needs_tls_or_an_explicit_plaintext_flag() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(grind_bin())
        .args(["serve", "--listen", "0.0.0.0:0", "--db"])
        .arg(dir.path().join("g.db"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--allow-plaintext") && err.contains("--tls-cert"),
        "{err}"
    );
}
