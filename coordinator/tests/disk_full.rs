//! A coordinator whose disk fills up (every file write fails, its log file included) must
//! refuse writes while it lasts and work again afterwards, not turn into a process that
//! answers "the store is shut down" forever.
//!
//! The full disk is simulated without privileges: the coordinator's soft `RLIMIT_FSIZE` is
//! lowered to 0 with prlimit(2), so every write(2) to a regular file fails with `EFBIG`
//! (`SIGXFSZ` is ignored in the child). Its stderr goes to a file, as with
//! `grind serve 2>> grind.log`.

mod common;

use common::*;
use grind_kit::launch::listening_addr;
use grind_kit::limits::set_file_size_limit;
use grind_proto::v1 as pb;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(60);

async fn create_primes(
    admin: &mut grind_proto::v1::admin_client::AdminClient<tonic::transport::Channel>,
) -> Result<i64, tonic::Status> {
    admin
        .create_campaign(pb::CreateCampaignRequest {
            problem: "primes".into(),
            params_json: r#"{"to": 200000, "unit": 50000}"#.into(),
            name: String::new(),
            verify_rate: 0.0,
            max_attempts: 0,
            family: String::new(),
            target_lease_ms: 0,
        })
        .await
        .map(|r| r.into_inner().campaign_id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_recovers_after_the_disk_was_full() {
    let dir = tempfile::tempdir().unwrap();
    let log = std::fs::File::create(dir.path().join("grind.log")).unwrap();
    let mut cmd = Command::new(grind_bin());
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--db"])
        .arg(dir.path().join("grind.db"))
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(log);
    // SAFETY: one async-signal-safe call between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    let pid = child.id();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let addr = listening_addr(&line).expect("grind serve says where it listens");
    let url = format!("http://{addr}");
    let _guard = Proc {
        child,
        log: Default::default(),
    };
    let mut admin = admin(&url).await;
    create_primes(&mut admin)
        .await
        .expect("a write before the disk fills");

    set_file_size_limit(pid, Some(0)).expect("lower the file-size limit");
    let err = create_primes(&mut admin)
        .await
        .expect_err("no write can commit on a full disk");
    assert_eq!(err.code(), tonic::Code::Unavailable, "{err:?}");
    set_file_size_limit(pid, None).expect("lift the file-size limit");

    // Space is back: writes commit again, and a worker finishes a campaign.
    let campaign = wait_for("writes to work again", WAIT, || {
        let mut admin = admin.clone();
        async move { create_primes(&mut admin).await.ok() }
    })
    .await;
    let _worker = start_worker(&url, "after-the-storm", 1);
    let done = wait_finished(&mut admin, campaign, WAIT).await;
    assert_eq!(
        (done.state.as_str(), done.value.as_str()),
        ("done", primes_between(0, 200_000).to_string().as_str())
    );
}
