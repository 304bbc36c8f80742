//! A coordinator started inside the benchmark process, on its own runtime (so that its
//! threads, named `coord-rt`, can be told apart from the load generator's), over a temporary
//! SQLite database unless one is given; and the gRPC channels the simulated workers share.

use grind_coordinator::clock::SystemClock;
use grind_coordinator::config::Config;
use grind_coordinator::store::Store;
use grind_coordinator::Coordinator;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::runtime::Runtime;
use tokio::sync::oneshot;
use tonic::transport::{Channel, Endpoint};

/// Thread name of the in-process coordinator's runtime (gRPC server, handlers, store reads).
pub const COORDINATOR_THREADS: &str = "coord-rt";

/// Failures of the benchmark's own set-up.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// Could not start or reach the coordinator.
    #[error("{0}")]
    Setup(String),
}

/// A coordinator running in this process.
pub struct Embedded {
    runtime: Runtime,
    /// Where it listens.
    pub url: String,
    /// Its database.
    pub db: PathBuf,
    shutdown: oneshot::Sender<()>,
    server: tokio::task::JoinHandle<Result<(), grind_coordinator::Error>>,
    _dir: Option<tempfile::TempDir>,
}

impl Embedded {
    /// Starts a coordinator with `config` on `server_threads` runtime threads, over `db` or
    /// a temporary database, listening on a free loopback port.
    pub fn start(
        server_threads: usize,
        db: Option<PathBuf>,
        config: Config,
    ) -> Result<Embedded, BenchError> {
        let setup =
            |what: &str, e: &dyn std::fmt::Display| BenchError::Setup(format!("{what}: {e}"));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(server_threads.max(1))
            .thread_name(COORDINATOR_THREADS)
            // Blocking-pool threads (store reads) stay alive, so per-thread CPU adds up.
            .thread_keep_alive(Duration::from_secs(3600))
            .enable_all()
            .build()
            .map_err(|e| setup("cannot start the coordinator's runtime", &e))?;
        let (dir, path) = match db {
            Some(path) => (None, path),
            None => {
                let dir = tempfile::Builder::new()
                    .prefix("grind-loadgen-")
                    .tempdir()
                    .map_err(|e| setup("cannot create a temporary directory", &e))?;
                let path = dir.path().join("grind.db");
                (Some(dir), path)
            }
        };
        let store = Store::open(&path)
            .map_err(|e| setup(&format!("cannot open the database {}", path.display()), &e))?;
        let coordinator = Coordinator::new(store, Arc::new(SystemClock), config);
        let listener = runtime
            .block_on(TcpListener::bind("127.0.0.1:0"))
            .map_err(|e| setup("cannot bind a loopback port", &e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| setup("no local address", &e))?;
        let (shutdown, stop) = oneshot::channel::<()>();
        let server = runtime.spawn(grind_coordinator::serve(
            coordinator,
            listener,
            async move {
                let _ = stop.await;
            },
        ));
        Ok(Embedded {
            runtime,
            url: format!("http://{addr}"),
            db: path,
            shutdown,
            server,
            _dir: dir,
        })
    }

    /// Stops the server (waiting up to 10 s) and its runtime.
    pub fn stop(self) -> Result<(), BenchError> {
        let _ = self.shutdown.send(());
        let server = self.server;
        let served = self
            .runtime
            .block_on(async { tokio::time::timeout(Duration::from_secs(10), server).await });
        self.runtime.shutdown_timeout(Duration::from_secs(5));
        let failed = |why: String| Err(BenchError::Setup(why));
        match served {
            Err(_) => failed("no stop within 10 s".into()),
            Ok(Err(e)) => failed(format!("server task failed: {e}")),
            Ok(Ok(Err(e))) => failed(format!("server failed: {e}")),
            Ok(Ok(Ok(()))) => Ok(()),
        }
    }
}

/// `count` gRPC channels (HTTP/2 connections) to `url`.
pub async fn channels(url: &str, count: usize) -> Result<Vec<Channel>, BenchError> {
    let endpoint = Endpoint::from_shared(url.to_string())
        .map_err(|e| BenchError::Setup(format!("bad coordinator URL {url:?}: {e}")))?
        .tcp_nodelay(true)
        .connect_timeout(Duration::from_secs(5))
        .timeout(Duration::from_secs(60));
    let mut channels = Vec::with_capacity(count);
    for _ in 0..count {
        channels.push(
            endpoint
                .connect()
                .await
                .map_err(|e| BenchError::Setup(format!("cannot connect to {url}: {e}")))?,
        );
    }
    Ok(channels)
}
