//! Authentication, bans and TLS against real `grind serve` and `grind-worker` processes.

mod common;

use common::*;
use grind_proto::v1 as pb;
use grind_proto::v1::admin_client::AdminClient;
use grind_proto::v1::worker_client::WorkerClient;
use grind_worker::connect::{authenticated, Access, AuthChannel};
use std::process::Command;
use std::time::Duration;
use tonic::transport::Channel;
use tonic::Code;

const WAIT: Duration = Duration::from_secs(60);

async fn channel(url: &str) -> Channel {
    wait_for("the coordinator", WAIT, || async {
        Channel::from_shared(url.to_string())
            .unwrap()
            .connect()
            .await
            .ok()
    })
    .await
}

/// `channel` sending `token` raw (even malformed ones) as a bearer token.
fn with_token(channel: Channel, token: Option<&str>) -> AuthChannel {
    let access = Access {
        token: token.map(str::to_string),
        ca_pem: None,
    };
    authenticated(channel, &access).expect("header-safe token")
}

/// Calls every grind RPC once and returns the status codes of the refusals.
async fn call_everything(channel: Channel, token: Option<&str>) -> Vec<(&'static str, Code)> {
    let mut worker = WorkerClient::new(with_token(channel.clone(), token));
    let mut admin = AdminClient::new(with_token(channel, token));
    let mut codes = Vec::new();
    macro_rules! probe {
        ($name:literal, $call:expr) => {
            codes.push(($name, $call.await.err().map_or(Code::Ok, |s| s.code())));
        };
    }
    probe!("Register", worker.register(pb::RegisterRequest::default()));
    probe!("Lease", worker.lease(pb::LeaseRequest::default()));
    probe!(
        "Heartbeat",
        worker.heartbeat(pb::HeartbeatRequest::default())
    );
    probe!(
        "ReportImprovement",
        worker.report_improvement(pb::ImprovementRequest::default())
    );
    probe!("Donate", worker.donate(pb::DonateRequest::default()));
    probe!("Complete", worker.complete(pb::CompleteRequest::default()));
    probe!("Release", worker.release(pb::ReleaseRequest::default()));
    probe!(
        "WatchBounds",
        worker.watch_bounds(pb::WatchBoundsRequest::default())
    );
    probe!(
        "CreateCampaign",
        admin.create_campaign(pb::CreateCampaignRequest::default())
    );
    probe!(
        "ListCampaigns",
        admin.list_campaigns(pb::ListCampaignsRequest::default())
    );
    probe!(
        "ShowCampaign",
        admin.show_campaign(pb::CampaignRef::default())
    );
    probe!(
        "PauseCampaign",
        admin.pause_campaign(pb::CampaignRef::default())
    );
    probe!(
        "ResumeCampaign",
        admin.resume_campaign(pb::CampaignRef::default())
    );
    probe!(
        "CancelCampaign",
        admin.cancel_campaign(pb::CampaignRef::default())
    );
    probe!("Status", admin.status(pb::StatusRequest::default()));
    probe!(
        "Leaderboard",
        admin.leaderboard(pb::LeaderboardRequest::default())
    );
    probe!("Export", admin.export(pb::CampaignRef::default()));
    probe!("Import", admin.import(pb::ImportRequest::default()));
    probe!(
        "ListProblems",
        admin.list_problems(pb::ListProblemsRequest::default())
    );
    probe!(
        "BanWorker",
        admin.ban_worker(pb::BanWorkerRequest::default())
    );
    codes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_rpc_refuses_missing_and_wrong_tokens_and_roles_are_enforced() {
    let dir = tempfile::tempdir().unwrap();
    let coord = start_coordinator(dir.path(), 30_000, &["--require-auth"]);
    let worker_token = create_token(&coord.db, false);
    let admin_token = create_token(&coord.db, true);
    let ch = channel(&coord.url).await;

    for token in [None, Some("grind_0000"), Some("not even a token")] {
        for (rpc, code) in call_everything(ch.clone(), token).await {
            assert_eq!(code, Code::Unauthenticated, "{rpc} with {token:?}");
        }
    }
    // New tokens take effect within a second or so: wait until both work.
    wait_for("the new tokens to be loaded", WAIT, || {
        let ch = ch.clone();
        let (w, a) = (worker_token.clone(), admin_token.clone());
        async move {
            let worker = call_everything(ch.clone(), Some(&w)).await;
            let admin = call_everything(ch, Some(&a)).await;
            (worker[0].1 == Code::Ok && admin[0].1 == Code::Ok).then_some(())
        }
    })
    .await;
    for (rpc, code) in call_everything(ch.clone(), Some(&worker_token)).await {
        let admin_rpc = !matches!(
            rpc,
            "Register"
                | "Lease"
                | "Heartbeat"
                | "ReportImprovement"
                | "Donate"
                | "Complete"
                | "Release"
                | "WatchBounds"
        );
        if admin_rpc {
            assert_eq!(code, Code::PermissionDenied, "{rpc} with a worker token");
        } else {
            assert_ne!(code, Code::Unauthenticated, "{rpc} with a worker token");
            assert_ne!(code, Code::PermissionDenied, "{rpc} with a worker token");
        }
    }
    for (rpc, code) in call_everything(ch.clone(), Some(&admin_token)).await {
        assert_ne!(code, Code::Unauthenticated, "{rpc} with the admin token");
        assert_ne!(code, Code::PermissionDenied, "{rpc} with the admin token");
    }
    // Health stays open without a token.
    let mut health = tonic_health::pb::health_client::HealthClient::new(ch.clone());
    let served = health
        .check(tonic_health::pb::HealthCheckRequest {
            service: "grind.v1.Worker".into(),
        })
        .await
        .expect("health answers without a token");
    assert_eq!(served.into_inner().status, 1);

    // A revoked token stops working.
    let out = Command::new(grind_bin())
        .args(["token", "revoke", "--db"])
        .arg(&coord.db)
        .arg("1")
        .output()
        .unwrap();
    assert!(out.status.success());
    wait_for("the revocation to take effect", WAIT, || {
        let ch = ch.clone();
        let t = worker_token.clone();
        async move {
            let codes = call_everything(ch, Some(&t)).await;
            (codes[0].1 == Code::Unauthenticated).then_some(())
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identities_are_bound_to_tokens_and_banned_workers_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let coord = start_coordinator(dir.path(), 30_000, &["--require-auth"]);
    let alice_token = create_token(&coord.db, false);
    let mallory_token = create_token(&coord.db, false);
    let admin_token = create_token(&coord.db, true);
    let ch = channel(&coord.url).await;
    let mut admin = AdminClient::new(with_token(ch.clone(), Some(&admin_token)));
    let campaign = create_primes(&admin, r#"{"to": 4000, "unit": 1000}"#).await;
    let mut alice = WorkerClient::new(with_token(ch.clone(), Some(&alice_token)));
    let mut mallory = WorkerClient::new(with_token(ch.clone(), Some(&mallory_token)));
    let register = pb::RegisterRequest {
        name: "alice".into(),
        host: "h".into(),
        cores: 1,
        ..Default::default()
    };
    let alice_id = alice
        .register(register.clone())
        .await
        .unwrap()
        .into_inner()
        .worker_id;
    // Mallory cannot act as Alice, nor take over her identity by re-registering.
    let err = mallory
        .lease(pb::LeaseRequest {
            worker_id: alice_id,
            capacity: 1,
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied, "{err:?}");
    let taken = mallory
        .register(pb::RegisterRequest {
            previous_worker_id: alice_id,
            ..register.clone()
        })
        .await
        .unwrap()
        .into_inner()
        .worker_id;
    assert_ne!(taken, alice_id);

    let grant = alice
        .lease(pb::LeaseRequest {
            worker_id: alice_id,
            capacity: 1,
        })
        .await
        .unwrap()
        .into_inner()
        .leases
        .remove(0);
    let banned = admin
        .ban_worker(pb::BanWorkerRequest {
            worker_id: alice_id,
            reason: "test".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(banned.leases_taken_back, 1);
    let (lo, hi) = primes_unit(&grant.unit_payload);
    let err = alice
        .complete(pb::CompleteRequest {
            worker_id: alice_id,
            lease_id: grant.lease_id,
            unit_payload: grant.unit_payload.clone(),
            result: Some(pb::UnitResult {
                count: primes_between(lo, hi).to_string(),
                ..Default::default()
            }),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied, "{err:?}");
    assert!(err.message().contains("banned"), "{err:?}");
    let err = alice
        .register(pb::RegisterRequest {
            previous_worker_id: alice_id,
            ..register
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied, "{err:?}");

    // The unit went back to pending and an honest worker finishes the campaign.
    let mut honest = start_worker_with(&coord.url, &[("GRIND_TOKEN", mallory_token.as_str())]);
    let mut admin_plain = AdminClient::new(with_token(ch.clone(), Some(&admin_token)));
    let done = wait_done(&admin_plain, campaign).await;
    assert_eq!(done.value, primes_between(0, 4000).to_string());
    let workers = admin_plain
        .status(pb::StatusRequest::default())
        .await
        .unwrap()
        .into_inner()
        .workers;
    assert!(workers.iter().any(|w| w.worker_id == alice_id && w.banned));
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
    wait_for("the campaign to finish", WAIT, || {
        let mut admin = admin.clone();
        async move {
            let c = admin
                .show_campaign(pb::CampaignRef {
                    campaign_id: campaign,
                })
                .await
                .ok()?
                .into_inner();
            (c.state == "done").then_some(c)
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_checkpoint_cannot_make_another_tokens_worker_count_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let coord = start_coordinator(dir.path(), 30_000, &["--require-auth"]);
    let poisoner_token = create_token(&coord.db, false);
    let honest_token = create_token(&coord.db, false);
    let admin_token = create_token(&coord.db, true);
    let ch = channel(&coord.url).await;
    let admin = AdminClient::new(with_token(ch.clone(), Some(&admin_token)));
    // One unit, no replication (the default rate, 0.05, skips most units the same way).
    let campaign = create_primes(&admin, r#"{"to": 30000, "unit": 30000}"#).await;
    let mut poisoner = WorkerClient::new(with_token(ch.clone(), Some(&poisoner_token)));
    let poisoner_id = poisoner
        .register(pb::RegisterRequest {
            name: "poisoner".into(),
            host: "h".into(),
            cores: 1,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .worker_id;
    let grant = poisoner
        .lease(pb::LeaseRequest {
            worker_id: poisoner_id,
            capacity: 1,
        })
        .await
        .unwrap()
        .into_inner()
        .leases
        .remove(0);
    // "I got to the end of the unit and found no prime": a checkpoint the primes solver
    // accepts (position inside the unit, count not above what was covered).
    let mut forged = 30_000u64.to_le_bytes().to_vec();
    forged.extend_from_slice(&0u64.to_le_bytes());
    poisoner
        .release(pb::ReleaseRequest {
            worker_id: poisoner_id,
            lease_id: grant.lease_id,
            cursor: forged,
            nodes: 0,
            cpu_seconds: 0.0,
        })
        .await
        .unwrap();
    // A worker of another token is not handed the poisoner's checkpoint.
    let mut honest = start_worker_with(&coord.url, &[("GRIND_TOKEN", honest_token.as_str())]);
    let done = wait_done(&admin, campaign).await;
    assert_eq!(
        done.value,
        primes_between(0, 30_000).to_string(),
        "the honest worker resumed from the forged checkpoint"
    );
    honest.kill();
}

fn start_worker_with(url: &str, env: &[(&str, &str)]) -> Proc {
    let mut cmd = Command::new(worker_bin());
    cmd.args(["--coordinator", url, "--threads", "1"]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    Proc::spawn_command(cmd)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_coordinator_with_a_self_signed_ca_serves_a_campaign_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let certs = dir.path().join("certs");
    let out = Command::new(grind_bin())
        .args(["cert", "self-signed", "--host", "localhost", "--out-dir"])
        .arg(&certs)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
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
