//! The run's figures: one JSON line (`--json`) or a human table.

use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::stats::LatencySummary;

/// The pairs per second the coordinator is expected to sustain.
pub const TARGET_PAIRS_PER_SEC: f64 = 2000.0;

/// Everything a run measured.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// `in-process` (coordinator started by the load generator) or `external`.
    pub mode: String,
    /// The coordinator's URL.
    pub coordinator: String,
    /// Simulated workers.
    pub workers: usize,
    /// gRPC channels (HTTP/2 connections) the workers share.
    pub channels: usize,
    /// Units asked for per Lease call.
    pub capacity: u32,
    /// Heartbeat interval per worker, 0 when off.
    pub heartbeat_ms: u64,
    /// Warm-up before the measured window.
    pub warmup_seconds: f64,
    /// How long each worker kept a unit before completing it (0: at once).
    pub unit_ms: u64,
    /// Seconds over which the workers were started.
    pub ramp_seconds: f64,
    /// The campaign the workers ran.
    pub campaign_id: i64,
    /// Lease + Complete + Heartbeat calls per second in the window.
    pub ops_per_sec: f64,
    /// Leases the workers lost: cancelled by a heartbeat verdict, or completed too late
    /// (answered as duplicates) or refused.
    pub leases_lost: u64,
    /// Leases of the campaign that expired in the store (when its database could be read).
    pub leases_expired: Option<u64>,
    /// Length of the measured window.
    pub seconds: f64,
    /// Lease grants completed and accepted in the window.
    pub pairs: u64,
    /// Sustained lease-grant + completion pairs per second.
    pub pairs_per_sec: f64,
    /// Lease calls per second.
    pub lease_calls_per_sec: f64,
    /// Heartbeat calls per second.
    pub heartbeats_per_sec: f64,
    /// Lease call latency.
    pub lease: LatencySummary,
    /// Complete call latency.
    pub complete: LatencySummary,
    /// Heartbeat call latency.
    pub heartbeat: LatencySummary,
    /// CPU used in the window, when it could be measured.
    pub cpu: Option<CpuReport>,
    /// Peak resident memory in MiB, when it could be measured.
    pub max_rss_mib: Option<f64>,
    /// What [`Report::max_rss_mib`] covers.
    pub rss_scope: String,
    /// Failed calls.
    pub errors: u64,
    /// Completions answered as duplicates.
    pub duplicates: u64,
    /// Completions neither accepted nor duplicate.
    pub rejected: u64,
    /// Leases a heartbeat cancelled.
    pub cancelled: u64,
    /// Lease calls that granted nothing.
    pub empty_leases: u64,
    /// Other campaigns' leases handed back.
    pub foreign_released: u64,
    /// The first error seen.
    pub first_error: Option<String>,
    /// The end-of-run consistency check.
    pub verify: Verification,
    /// The target rate.
    pub target_pairs_per_sec: f64,
    /// Whether the target rate was reached.
    pub meets_target: bool,
}

/// CPU used during the measured window, in cores (CPU seconds per wall second).
#[derive(Clone, Debug, Serialize)]
pub struct CpuReport {
    /// Which process the figures are for.
    pub scope: String,
    /// Cores the process used on average.
    pub process_cores: f64,
    /// Cores used by the coordinator's own threads (in-process: the store writer plus the
    /// coordinator's runtime), when they can be told apart.
    pub coordinator_cores: Option<f64>,
    /// CPU microseconds per pair.
    pub cpu_us_per_pair: f64,
    /// Cores used per thread name (live threads only).
    pub threads: BTreeMap<String, f64>,
    /// Cores the whole machine was busy (every process), when known.
    pub machine_busy_cores: Option<f64>,
    /// Cores busy outside the measured process (other processes, kernel threads, interrupt
    /// handling such as loopback networking and block I/O), when known. Much more than a few
    /// tenths of a core means something else competed for the CPUs during the run.
    pub outside_process_cores: Option<f64>,
    /// Cores stolen by the hypervisor, when known.
    pub steal_cores: Option<f64>,
    /// The measured process's threads waiting, runnable, for a CPU (thread-seconds per
    /// second): CPU contention, from its own threads or from anything else on the machine.
    pub runqueue_wait_cores: f64,
}

/// The end-of-run consistency check: nothing lost, nothing counted twice.
#[derive(Clone, Debug, Serialize)]
pub struct Verification {
    /// The campaign's total as stored by the coordinator.
    pub stored_total: String,
    /// The sum of the counts the coordinator accepted from the simulated workers.
    pub submitted_total: String,
    /// Units the coordinator records as done.
    pub units_done: u64,
    /// Completions the coordinator accepted.
    pub accepted_completions: u64,
    /// Units still leased after every worker stopped (should be 0).
    pub units_leased_left: u64,
    /// Whether totals and unit counts agree and no lease was left open.
    pub ok: bool,
}

impl Report {
    /// The report as one JSON line.
    pub fn json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }

    /// The report as a human-readable table.
    pub fn human(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "grind-loadgen: {} coordinator at {}",
            self.mode, self.coordinator
        );
        let _ = writeln!(
            out,
            "  {} workers over {} channels, capacity {}, heartbeat {}, warm-up {:.0} s, window {:.1} s",
            self.workers,
            self.channels,
            self.capacity,
            if self.heartbeat_ms > 0 {
                format!("every {} ms", self.heartbeat_ms)
            } else {
                "off".into()
            },
            self.warmup_seconds,
            self.seconds
        );
        let _ = writeln!(
            out,
            "  pairs (grant + complete): {} = {:.0}/s  (target {:.0}/s: {})",
            self.pairs,
            self.pairs_per_sec,
            self.target_pairs_per_sec,
            if self.meets_target { "met" } else { "NOT met" }
        );
        let _ = writeln!(
            out,
            "  lease calls {:.0}/s, heartbeats {:.0}/s, all calls {:.0}/s{}",
            self.lease_calls_per_sec,
            self.heartbeats_per_sec,
            self.ops_per_sec,
            if self.unit_ms > 0 {
                format!(
                    ", units held {} ms, ramp {:.0} s",
                    self.unit_ms, self.ramp_seconds
                )
            } else {
                String::new()
            }
        );
        let _ = writeln!(
            out,
            "  leases lost: {} seen by the workers, {} expired in the store",
            self.leases_lost,
            self.leases_expired
                .map_or("unknown".to_string(), |n| n.to_string())
        );
        let _ = writeln!(
            out,
            "  {:<10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
            "latency", "calls", "mean ms", "p50 ms", "p90 ms", "p99 ms", "max ms"
        );
        for (name, s) in [
            ("Lease", &self.lease),
            ("Complete", &self.complete),
            ("Heartbeat", &self.heartbeat),
        ] {
            if s.count == 0 {
                continue;
            }
            let _ = writeln!(
                out,
                "  {:<10} {:>9} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>9.2}",
                name, s.count, s.mean_ms, s.p50_ms, s.p90_ms, s.p99_ms, s.max_ms
            );
        }
        match &self.cpu {
            Some(cpu) => {
                let _ = writeln!(
                    out,
                    "  CPU ({}): {:.2} cores, {:.0} us per pair",
                    cpu.scope, cpu.process_cores, cpu.cpu_us_per_pair
                );
                if let Some(cores) = cpu.coordinator_cores {
                    let _ = writeln!(out, "    coordinator threads: {cores:.2} cores");
                }
                if let (Some(busy), Some(others)) =
                    (cpu.machine_busy_cores, cpu.outside_process_cores)
                {
                    let _ = writeln!(
                        out,
                        "    machine: {busy:.2} cores busy, {others:.2} of them outside this process, {:.2} stolen",
                        cpu.steal_cores.unwrap_or(0.0)
                    );
                }
                let _ = writeln!(
                    out,
                    "    run-queue wait: {:.2} thread-seconds per second",
                    cpu.runqueue_wait_cores
                );
                let mut threads: Vec<_> = cpu.threads.iter().collect();
                threads.sort_by(|a, b| b.1.total_cmp(a.1));
                for (name, cores) in threads.into_iter().filter(|(_, c)| **c >= 0.005) {
                    let _ = writeln!(out, "    {name:<16} {cores:.2} cores");
                }
            }
            None => {
                let _ = writeln!(out, "  CPU: not measured");
            }
        }
        if let Some(rss) = self.max_rss_mib {
            let _ = writeln!(out, "  max RSS ({}): {rss:.1} MiB", self.rss_scope);
        }
        let _ = writeln!(
            out,
            "  errors {}, duplicates {}, rejected {}, cancelled {}, empty leases {}, foreign released {}",
            self.errors,
            self.duplicates,
            self.rejected,
            self.cancelled,
            self.empty_leases,
            self.foreign_released
        );
        if let Some(e) = &self.first_error {
            let _ = writeln!(out, "  first error: {e}");
        }
        let v = &self.verify;
        let _ = writeln!(
            out,
            "  verify: stored total {} vs submitted {}; units done {} vs accepted {}; leased left {}: {}",
            v.stored_total,
            v.submitted_total,
            v.units_done,
            v.accepted_completions,
            v.units_leased_left,
            if v.ok { "OK" } else { "MISMATCH" }
        );
        out
    }
}
