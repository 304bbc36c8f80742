//! The grind worker: connects to a coordinator, leases units, solves them on a rayon pool
//! (never on the async runtime's threads), heartbeats, reports improvements, and delivers
//! results — holding them while the coordinator is unreachable.
//!
//! [`agent`] is the worker itself, written against [`coordinator::Coordinator`] (the calls
//! it makes); [`client`] is the gRPC implementation, [`connect`] the channel and
//! credentials, [`context`] what a running unit shares with the agent, [`events`] the
//! machine-readable event stream (`--events`), [`bundles`] the local cache of solver
//! bundles fetched from the coordinator.

pub mod agent;
pub mod bundles;
pub mod client;
pub mod connect;
pub mod context;
pub mod coordinator;
pub mod cpu;
pub mod events;
pub mod idle;

pub use agent::{run, run_with};

/// How a worker is set up.
#[derive(Clone, Debug)]
pub struct WorkerConfig {
    /// Coordinator URL, e.g. `http://127.0.0.1:7878`.
    pub coordinator: String,
    /// CPU threads (and at most this many units at once).
    pub threads: usize,
    /// Display name.
    pub name: String,
    /// Host name reported for provenance.
    pub host: String,
    /// Token and TLS trust for the coordinator.
    pub access: connect::Access,
    /// Stop (as on SIGTERM) after this long.
    pub max_runtime: Option<std::time::Duration>,
    /// Work only while the rest of the machine is idle (see [`idle`]).
    pub idle_only: bool,
    /// How long, in ms, a worker with nothing to do lets the coordinator hold its lease call
    /// open until work appears (0: poll at the coordinator's interval instead). A held call
    /// is waited out before a stop takes effect, so a stop of an idle worker may take this
    /// long.
    pub idle_lease_wait_ms: u32,
    /// Where to append the event stream, one JSON object per line (see [`events`]).
    pub events: Option<std::path::PathBuf>,
    /// Its owner allows it to run users' native code from the coordinator (`exec`
    /// campaigns: `grind-worker --allow-exec`; `grind run` sets it for its own workers).
    /// Without it the coordinator grants no such units, and the worker refuses any it gets.
    pub allow_exec: bool,
}

impl WorkerConfig {
    /// A configuration with this machine's host name and all its cores.
    pub fn new(coordinator: &str) -> WorkerConfig {
        let host = gethostname::gethostname().to_string_lossy().into_owned();
        WorkerConfig {
            coordinator: coordinator.to_string(),
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            name: host.clone(),
            host,
            access: connect::Access::default(),
            max_runtime: None,
            idle_only: false,
            idle_lease_wait_ms: 2_000,
            events: None,
            allow_exec: false,
        }
    }

    /// What this worker states about itself when it registers, and checks units against.
    pub fn host_facts(&self) -> grind_shared::placement::HostFacts {
        grind_shared::placement::HostFacts {
            native_code_allowed: self.allow_exec,
            platform: grind_shared::placement::PLATFORM.to_string(),
        }
    }
}

/// What a worker did, reported when it stops.
#[derive(Clone, Debug, Default)]
pub struct WorkerSummary {
    /// The identity the coordinator gave it (0 if it never registered).
    pub worker_id: i64,
    /// Results accepted by the coordinator.
    pub units_done: u64,
    /// Deliveries the coordinator refused.
    pub refused: u64,
    /// Messages still undelivered at exit.
    pub undelivered: usize,
}

/// Worker failures that stop it.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// Bad configuration or an unusable environment.
    #[error("{0}")]
    Setup(String),
    /// The coordinator refuses this worker for good: its token is missing, wrong or revoked,
    /// or it is banned. Starting it again cannot help.
    #[error("the coordinator refuses this worker: {0}")]
    Refused(String),
}

/// `grind-worker`'s exit code when the coordinator refuses it for good (bad or revoked
/// token, banned): 77, `EX_NOPERM` of sysexits.h. Service managers should not restart it
/// (systemd: `RestartPreventExitStatus=77 78`).
pub const EXIT_REFUSED: i32 = 77;

/// `grind-worker`'s exit code when its own configuration is unusable (an unreadable or empty
/// token file, a CA file that is not PEM, a bad flag value): 78, `EX_CONFIG` of sysexits.h.
pub const EXIT_CONFIG: i32 = 78;

impl WorkerError {
    /// The process exit code for this failure.
    pub fn exit_code(&self) -> i32 {
        match self {
            WorkerError::Setup(_) => EXIT_CONFIG,
            WorkerError::Refused(_) => EXIT_REFUSED,
        }
    }
}
