//! The worker's side of running users' solvers (issue 29), driven against the in-memory
//! coordinator ([`fake::Fake`]) granting the units of an `exec` campaign of a small shell
//! solver: a worker without `--allow-exec` never starts the solver even when granted its
//! units (it hands them back saying why), an opted-in worker sends the solver's provenance
//! record with each result, and a stop (as on SIGTERM) or the `--max-hours` budget hands
//! running units back with their checkpoints, megabytes large.
//! No fixed sleeps: every wait is on the fake's state, with a timeout.

#[allow(dead_code)]
mod fake;

use fake::agent::{Agent, WAIT};
use fake::Fake;
use grind_shared::problems::exec::{checkpoint, fixtures};
use std::io::ErrorKind;
use std::net::TcpListener;
use std::time::Duration;

/// A port solvers knock on when they start (a TCP connection the test counts), so the test
/// sees whether a worker started a solver at all, from outside the solver's sandbox.
struct Door(TcpListener);

impl Door {
    fn open() -> Door {
        Door(TcpListener::bind("127.0.0.1:0").expect("a loopback port"))
    }

    /// A solver of the toy problem that knocks first, says on stderr which seed it runs,
    /// and prints the solution `v <seed mod m>` with its cost.
    fn knocking_solver(&self) -> String {
        let port = self.0.local_addr().unwrap().port();
        format!(
            r#"#!/bin/bash
exec 3<>/dev/tcp/127.0.0.1/{port} && exec 3>&-
read -r m < "$1"
x=$(( GRIND_SEED % m ))
echo "seed $GRIND_SEED ran here" >&2
echo "o $(( (x * x + 7) % m ))"
echo "v $x"
"#
        )
    }

    /// The knocks so far.
    fn knocks(&self) -> usize {
        self.0.set_nonblocking(true).unwrap();
        let mut knocks = 0;
        loop {
            match self.0.accept() {
                Ok(_) => knocks += 1,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return knocks,
                Err(e) => panic!("accept: {e}"),
            }
        }
    }
}

/// A solver that writes a checkpoint file of `bytes` bytes, says so, and then works until it
/// is stopped (SIGTERM).
fn checkpointing_solver(bytes: usize) -> String {
    format!(
        r#"#!/bin/sh
trap 'exit 0' TERM
head -c {bytes} /dev/zero > "$GRIND_CHECKPOINT_DIR/state.tmp"
mv "$GRIND_CHECKPOINT_DIR/state.tmp" "$GRIND_CHECKPOINT_DIR/state"
echo "g checkpoint"
while :; do sleep 1; done
"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_opt_in_a_granted_solver_is_never_started() {
    let door = Door::open();
    // The fake grants every unit to whoever asks: a coordinator that ignores placement.
    let fake = Fake::exec(
        &door.knocking_solver(),
        serde_json::json!({"objective": "max", "units": "seeds:4"}),
    );
    let agent = Agent::start(&fake, |_| {});
    assert!(
        fake.wait_for(WAIT, |s| s.releases.len() >= 8).await,
        "the worker hands the units back, again and again"
    );
    agent.stop().await.unwrap();
    assert_eq!(door.knocks(), 0, "solvers started");
    fake.read(|s| {
        assert!(!s.registrations[0].native_code_allowed);
        assert!(s.registrations[0].platform.contains('-'));
        assert!(s.accepted.is_empty(), "results: {:?}", s.accepted);
        for release in &s.releases {
            assert!(
                release.reason.contains("--allow-exec"),
                "release without the reason: {release:?}"
            );
            assert!(release.cursor.is_empty());
        }
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_opted_in_worker_runs_the_units_and_sends_their_provenance() {
    let door = Door::open();
    let fake = Fake::exec(
        &door.knocking_solver(),
        serde_json::json!({"objective": "max", "units": "seeds:4"}),
    );
    let solver_digest = fake.read(|s| {
        let params: serde_json::Value = serde_json::from_str(&s.params_json).unwrap();
        params["solver"][0].clone()
    });
    let agent = Agent::start(&fake, |c| c.allow_exec = true);
    assert!(fake.wait_for(WAIT, |s| s.all_done()).await);
    agent.stop().await.unwrap();
    assert_eq!(door.knocks(), 4, "one solver per unit");
    fake.read(|s| {
        assert!(s.registrations[0].native_code_allowed);
        assert!(s.releases.iter().all(|r| r.reason.is_empty()));
        let mut seeds = Vec::new();
        for (lease, result) in &s.results {
            let record: serde_json::Value = serde_json::from_str(&result.provenance_json)
                .unwrap_or_else(|e| panic!("lease {lease}: provenance not JSON: {e}"));
            // The record is the solver run's own: its bundle, how it ended, what it said.
            assert_eq!(record["solver"]["digest"], solver_digest, "{record}");
            seeds.push(fixtures::seed_of_clean_run(&record).unwrap());
        }
        seeds.sort();
        assert_eq!(seeds, [0, 1, 2, 3]);
    });
}

/// Waits until every running unit of the fake has reported a checkpoint in a heartbeat.
async fn wait_checkpointed(fake: &Fake, leases: usize) {
    assert!(
        fake.wait_for(WAIT, |s| {
            let with_checkpoint: std::collections::BTreeSet<i64> = s
                .heartbeats
                .iter()
                .flat_map(|h| &h.leases)
                .filter(|p| !p.cursor.is_empty())
                .map(|p| p.lease_id)
                .collect();
            with_checkpoint.len() >= leases
        })
        .await,
        "running units checkpoint in heartbeats"
    );
}

/// Each release of a running unit carries its (large) checkpoint whole, and nothing ran to
/// its end.
fn assert_handed_back_with_checkpoints(fake: &Fake, bytes: usize) {
    fake.read(|s| {
        assert!(
            s.accepted.is_empty(),
            "a unit of minutes finished: {:?}",
            s.accepted
        );
        let with_checkpoint: Vec<_> = s.releases.iter().filter(|r| !r.cursor.is_empty()).collect();
        assert!(with_checkpoint.len() >= 2, "releases: {}", s.releases.len());
        for release in with_checkpoint {
            // The checkpoint directory, packed: it unpacks to the file the solver wrote.
            let dir = tempfile::tempdir().unwrap();
            let restored = dir.path().join("checkpoint");
            checkpoint::restore(&release.cursor, &restored).unwrap();
            let state = std::fs::read(restored.join("state")).unwrap();
            assert_eq!(state.len(), bytes);
            assert!(state.iter().all(|&b| b == 0));
            assert!(release.reason.is_empty());
        }
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_hands_running_units_back_with_megabyte_checkpoints() {
    const BYTES: usize = 3 << 20;
    let fake = Fake::exec(
        &checkpointing_solver(BYTES),
        serde_json::json!({"objective": "max", "units": "seeds:4", "unit_seconds": 600}),
    );
    let agent = Agent::start(&fake, |c| c.allow_exec = true);
    wait_checkpointed(&fake, 2).await;
    agent.stop().await.unwrap();
    assert_handed_back_with_checkpoints(&fake, BYTES);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_max_hours_budget_hands_running_units_back_with_their_checkpoints() {
    const BYTES: usize = 1 << 20;
    let fake = Fake::exec(
        &checkpointing_solver(BYTES),
        serde_json::json!({"objective": "max", "units": "seeds:4", "unit_seconds": 600}),
    );
    let agent = Agent::start(&fake, |c| {
        c.allow_exec = true;
        c.max_runtime = Some(Duration::from_secs(2));
    });
    // The agent ends by itself when its budget is spent.
    agent.exit().await.unwrap();
    assert_handed_back_with_checkpoints(&fake, BYTES);
}
