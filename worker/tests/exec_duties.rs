//! The worker's side of running users' solvers (issue 29), for any problem that asks for it,
//! driven against the in-memory coordinator ([`fake::Fake`]) with the `probe` problem (a
//! stand-in for a user's solver): a worker without `--allow-exec` never starts such a
//! solver even when granted its units (it hands them back saying why), an opted-in worker
//! sends the solver's provenance record with each result, and a stop (as on SIGTERM) or the
//! `--max-hours` budget hands running units back with their checkpoints, megabytes large.
//! No fixed sleeps: every wait is on the fake's state, with a timeout.

#[allow(dead_code)]
mod fake;

use fake::Fake;
use grind_worker::{run_with, WorkerConfig, WorkerError, WorkerSummary};
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

const WAIT: Duration = Duration::from_secs(60);

/// A running agent and the switch that stops it.
struct Agent {
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<Result<WorkerSummary, WorkerError>>,
}

impl Agent {
    fn start(fake: &Fake, configure: impl FnOnce(&mut WorkerConfig)) -> Agent {
        let mut config = WorkerConfig::new("http://fake.invalid");
        config.threads = 2;
        config.name = "exec-duties".into();
        config.idle_lease_wait_ms = 0;
        configure(&mut config);
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(run_with(config, fake.clone(), async move {
            let _ = stopped.await;
        }));
        Agent {
            stop: Some(stop),
            task,
        }
    }

    async fn stop(mut self) -> Result<WorkerSummary, WorkerError> {
        let _ = self.stop.take().unwrap().send(());
        self.exit().await
    }

    async fn exit(self) -> Result<WorkerSummary, WorkerError> {
        tokio::time::timeout(WAIT, self.task)
            .await
            .expect("the agent ends within the timeout")
            .expect("the agent does not panic")
    }
}

fn probe(params: serde_json::Value) -> String {
    params.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_opt_in_a_granted_solver_is_never_started() {
    let markers = tempfile::tempdir().unwrap();
    let params = probe(serde_json::json!({
        "units": 4, "native_code": true, "marker_dir": markers.path(),
    }));
    // The fake grants every unit to whoever asks: a coordinator that ignores placement.
    let fake = Fake::new("probe", &params);
    let agent = Agent::start(&fake, |_| {});
    assert!(
        fake.wait_for(WAIT, |s| s.releases.len() >= 8).await,
        "the worker hands the units back, again and again"
    );
    agent.stop().await.unwrap();
    let started: Vec<_> = std::fs::read_dir(markers.path()).unwrap().collect();
    assert!(started.is_empty(), "solvers started: {started:?}");
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
    let markers = tempfile::tempdir().unwrap();
    let params = probe(serde_json::json!({
        "units": 4, "native_code": true, "marker_dir": markers.path(), "provenance_bytes": 100,
    }));
    let fake = Fake::new("probe", &params);
    let agent = Agent::start(&fake, |c| c.allow_exec = true);
    assert!(fake.wait_for(WAIT, |s| s.all_done()).await);
    agent.stop().await.unwrap();
    assert_eq!(std::fs::read_dir(markers.path()).unwrap().count(), 4);
    fake.read(|s| {
        assert!(s.registrations[0].native_code_allowed);
        assert!(s.releases.iter().all(|r| r.reason.is_empty()));
        for (lease, result) in &s.results {
            let record: serde_json::Value = serde_json::from_str(&result.provenance_json)
                .unwrap_or_else(|e| panic!("lease {lease}: provenance not JSON: {e}"));
            let seed = record["probe"]["seed"].as_u64().expect("the seed");
            assert!(seed < 4);
            assert_eq!(record["pad"].as_str().unwrap().len(), 100);
        }
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
            assert_eq!(release.cursor.len(), bytes);
            assert!(release.reason.is_empty());
        }
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_hands_running_units_back_with_megabyte_checkpoints() {
    const BYTES: usize = 3 << 20;
    let params = probe(serde_json::json!({
        "units": 4, "native_code": true, "unit_ms": 600_000, "checkpoint_bytes": BYTES,
    }));
    let fake = Fake::new("probe", &params);
    let agent = Agent::start(&fake, |c| c.allow_exec = true);
    wait_checkpointed(&fake, 2).await;
    agent.stop().await.unwrap();
    assert_handed_back_with_checkpoints(&fake, BYTES);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_max_hours_budget_hands_running_units_back_with_their_checkpoints() {
    const BYTES: usize = 1 << 20;
    let params = probe(serde_json::json!({
        "units": 4, "native_code": true, "unit_ms": 600_000, "checkpoint_bytes": BYTES,
    }));
    let fake = Fake::new("probe", &params);
    let agent = Agent::start(&fake, |c| {
        c.allow_exec = true;
        c.max_runtime = Some(Duration::from_secs(2));
    });
    // The agent ends by itself when its budget is spent.
    agent.exit().await.unwrap();
    assert_handed_back_with_checkpoints(&fake, BYTES);
}
