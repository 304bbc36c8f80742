//! The agent under test, run as a task against the fake coordinator, and the switch that
//! stops it.

use super::Fake;
use grind_worker::{run_with, WorkerConfig, WorkerError, WorkerSummary};
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// How long any wait in these tests may take before it fails.
pub const WAIT: Duration = Duration::from_secs(60);

/// A running agent and the switch that stops it.
pub struct Agent {
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<Result<WorkerSummary, WorkerError>>,
}

impl Agent {
    /// Starts an agent on 2 threads that asks again for leases at once, with the test's
    /// changes to its configuration.
    pub fn start(fake: &Fake, configure: impl FnOnce(&mut WorkerConfig)) -> Agent {
        let mut config = WorkerConfig::new("http://fake.invalid");
        config.threads = 2;
        config.name = "fake-driven-agent".into();
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

    /// Asks the agent to stop (as SIGTERM does) and waits for it.
    pub async fn stop(mut self) -> Result<WorkerSummary, WorkerError> {
        let _ = self.stop.take().unwrap().send(());
        self.exit().await
    }

    /// Waits for the agent to end by itself.
    pub async fn exit(self) -> Result<WorkerSummary, WorkerError> {
        tokio::time::timeout(WAIT, self.task)
            .await
            .expect("the agent ends within the timeout")
            .expect("the agent does not panic")
    }
}
