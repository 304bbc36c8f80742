//! Coordinator settings (the `grind serve` flags).

/// How the coordinator schedules and verifies work.
#[derive(Clone, Debug)]
pub struct Config {
    /// How long a lease lives without a heartbeat.
    pub lease_ttl_ms: i64,
    /// How often workers should heartbeat.
    pub heartbeat_interval_ms: i64,
    /// Default fraction of count and search units re-run on a second worker.
    pub verify_rate: f64,
    /// Default failed attempts after which a unit is marked failed.
    pub max_attempts: u32,
    /// Whether a replica run may go to the worker that produced the first result (only
    /// sensible with a single trusted local worker, as in `grind run --workers 1`).
    pub allow_self_replication: bool,
    /// How often the expiry sweep runs.
    pub sweep_interval_ms: u64,
    /// Units the splitter produces at a time when a campaign runs low.
    pub split_batch: usize,
    /// Most leases handed out in one Lease call.
    pub max_capacity: u32,
    /// Most active leases one worker may hold.
    pub max_leases_per_worker: u32,
    /// Calls a second each worker identity may make (bursts of as many); 0 means no limit
    /// (the embedded `grind run`, whose workers are its own).
    pub worker_calls_per_second: u32,
    /// Registrations a second accepted from one network address (bursts of as many).
    pub registrations_per_second: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            lease_ttl_ms: 60_000,
            heartbeat_interval_ms: 2_000,
            verify_rate: 0.05,
            max_attempts: 3,
            allow_self_replication: false,
            sweep_interval_ms: 500,
            split_batch: 256,
            max_capacity: 256,
            max_leases_per_worker: 1024,
            worker_calls_per_second: 200,
            registrations_per_second: 1000,
        }
    }
}
