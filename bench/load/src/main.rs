//! `grind-loadgen`: drives a grind coordinator with many simulated workers over real gRPC and
//! reports sustained lease-grant + completion pairs per second, call latencies, CPU and
//! memory, then checks that nothing was lost or counted twice. See `--help` and
//! BENCHMARKS.md ("Coordinator load").

use anyhow::{bail, Context, Result};
use clap::Parser;
use grind_bench::embedded::{self, Embedded, COORDINATOR_THREADS};
use grind_bench::procfs::{self, CpuSnapshot, CpuUsage, Target};
use grind_bench::report::{CpuReport, Report, Verification, TARGET_PAIRS_PER_SEC};
use grind_bench::sim::{self, Phase, Shared, Tally};
use grind_coordinator::config::Config;
use grind_proto::v1 as pb;
use grind_proto::v1::admin_client::AdminClient;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinSet;

/// Thread name of the load generator's runtime (simulated workers and their gRPC clients).
const LOADGEN_THREADS: &str = "loadgen-rt";
/// Thread name of the store's writer (set by grind-coordinator).
const STORE_THREAD: &str = "grind-store";

/// Load benchmark of the grind coordinator: simulated workers lease and complete tiny
/// `primes` units over gRPC; reports pairs per second, latencies, CPU and memory, and checks
/// that the stored total matches what was accepted. A later flag overrides an earlier one.
#[derive(Parser, Debug)]
#[command(name = "grind-loadgen", version, args_override_self = true)]
struct Args {
    /// Coordinator to load, e.g. http://127.0.0.1:7878 (default: start one in this process
    /// on a temporary database). It should have no other workers attached.
    #[arg(long)]
    coordinator: Option<String>,
    /// Process id of the external coordinator, to report its CPU and peak memory.
    #[arg(long, requires = "coordinator")]
    coordinator_pid: Option<u32>,
    /// Database of the in-process coordinator (default: a temporary file, removed after).
    #[arg(long, conflicts_with = "coordinator")]
    db: Option<PathBuf>,
    /// Simulated workers (tokio tasks).
    #[arg(long, default_value_t = 200)]
    workers: usize,
    /// gRPC channels (HTTP/2 connections) the workers share.
    #[arg(long, default_value_t = 8)]
    channels: usize,
    /// Length of the measured window, in seconds.
    #[arg(long, default_value_t = 20.0)]
    seconds: f64,
    /// Warm-up before the window, in seconds (workers register and run; nothing is counted).
    #[arg(long, default_value_t = 3.0)]
    warmup: f64,
    /// Each worker also heartbeats its lease at this interval (0: no heartbeats).
    #[arg(long, default_value_t = 0)]
    heartbeat_ms: u64,
    /// Units asked for per Lease call.
    #[arg(long, default_value_t = 1)]
    capacity: u32,
    /// Each worker keeps every unit this long before completing it, as if computing (0:
    /// complete at once, the closed-loop throughput test). With `--heartbeat-ms` it
    /// heartbeats on its own schedule meanwhile.
    #[arg(long, default_value_t = 0)]
    unit_ms: u64,
    /// Start the workers evenly over this many seconds (many workers registering at once
    /// would meet the per-address registration limit). The warm-up is stretched to cover it.
    #[arg(long, default_value_t = 0.0)]
    ramp: f64,
    /// Lease time of the in-process coordinator, in milliseconds (`grind serve` default).
    #[arg(long, default_value_t = 60_000, conflicts_with = "coordinator")]
    lease_ttl_ms: i64,
    /// Database of the external coordinator, read (read-only) afterwards to count the
    /// leases that expired.
    #[arg(long, requires = "coordinator")]
    coordinator_db: Option<PathBuf>,
    /// Start of the primes range.
    #[arg(long, default_value = "0", value_parser = parse_number)]
    from: u64,
    /// End of the primes range (exclusive); `1e9` style accepted.
    #[arg(long, default_value = "1e9", value_parser = parse_number)]
    to: u64,
    /// Numbers per unit (small: solving must stay trivial next to the coordinator's work).
    #[arg(long, default_value = "1000", value_parser = parse_number)]
    unit: u64,
    /// Worker threads of the in-process coordinator's runtime (`grind serve` uses 2).
    #[arg(long, default_value_t = 2)]
    server_threads: usize,
    /// Worker threads of the load generator's runtime (default: the number of cores).
    #[arg(long)]
    client_threads: Option<usize>,
    /// Print one JSON line instead of the table.
    #[arg(long)]
    json: bool,
    /// Exit with status 3 when fewer pairs per second than this were sustained.
    #[arg(long)]
    min_pairs_per_sec: Option<f64>,
    /// Leave the campaign running afterwards (default: cancel it).
    #[arg(long)]
    keep_campaign: bool,
}

/// Parses `1000`, `1_000_000` or `1e9`.
fn parse_number(text: &str) -> Result<u64, String> {
    let clean: String = text.chars().filter(|&c| c != '_').collect();
    let parsed = match clean.split_once(['e', 'E']) {
        Some((mantissa, exponent)) => {
            let mantissa: u64 = mantissa.parse().map_err(|e| format!("{text:?}: {e}"))?;
            let exponent: u32 = exponent.parse().map_err(|e| format!("{text:?}: {e}"))?;
            10u64
                .checked_pow(exponent)
                .and_then(|power| power.checked_mul(mantissa))
        }
        None => clean.parse().ok(),
    };
    parsed.ok_or_else(|| format!("{text:?} is not a whole number that fits in 64 bits"))
}

fn main() -> ExitCode {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    match run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("grind-loadgen: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> Result<ExitCode> {
    if args.workers == 0 || args.workers > 100_000 {
        bail!("--workers must be between 1 and 100000");
    }
    if args.channels == 0 || args.channels > 1024 {
        bail!("--channels must be between 1 and 1024");
    }
    let seconds_ok = args.seconds > 0.0 && args.seconds <= 86_400.0;
    if !seconds_ok || !(0.0..=3600.0).contains(&args.warmup) {
        bail!("--seconds must be in (0, 86400] and --warmup in [0, 3600]");
    }
    if !(0.0..=3600.0).contains(&args.ramp) || args.lease_ttl_ms < 100 {
        bail!("--ramp must be in [0, 3600] and --lease-ttl-ms at least 100");
    }
    if args.server_threads == 0 || args.client_threads == Some(0) {
        bail!("thread counts must be at least 1");
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut db = args.coordinator_db.clone();
    let load_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.client_threads.unwrap_or(cores))
        .thread_name(LOADGEN_THREADS)
        .enable_all()
        .build()
        .context("cannot start the load generator's runtime")?;
    let (embedded, url, measure) = match &args.coordinator {
        None => {
            let embedded = Embedded::start(
                args.server_threads,
                args.db.clone(),
                Config {
                    verify_rate: 0.0,
                    lease_ttl_ms: args.lease_ttl_ms,
                    ..Config::default()
                },
            )?;
            let url = embedded.url.clone();
            db = Some(embedded.db.clone());
            let measure = Measure {
                target: Some(Target::Current),
                scope: "whole process: in-process coordinator + load generator".into(),
                in_process: true,
            };
            (Some(embedded), url, measure)
        }
        Some(url) => {
            let measure = match args.coordinator_pid {
                Some(pid) => Measure {
                    target: Some(Target::Pid(pid)),
                    scope: format!("coordinator process {pid}"),
                    in_process: false,
                },
                None => Measure {
                    target: Some(Target::Current),
                    scope: "load generator only (external coordinator)".into(),
                    in_process: false,
                },
            };
            (None, url.clone(), measure)
        }
    };
    let outcome = load_runtime
        .block_on(drive(&args, &url, &measure))
        .map(|mut report| {
            report.leases_expired = db.as_deref().and_then(|db| {
                expired_leases(db, report.campaign_id)
                    .map_err(|e| eprintln!("grind-loadgen: cannot count expired leases: {e}"))
                    .ok()
            });
            report
        });
    load_runtime.shutdown_timeout(Duration::from_secs(5));
    if let Some(embedded) = embedded {
        if let Err(e) = embedded.stop() {
            eprintln!("grind-loadgen: the in-process coordinator did not stop cleanly: {e:#}");
        }
    }
    let report = outcome?;
    if args.json {
        println!("{}", report.json());
    } else {
        print!("{}", report.human());
    }
    if !report.verify.ok {
        eprintln!("grind-loadgen: verification FAILED: results were lost or counted twice");
        return Ok(ExitCode::from(2));
    }
    if let Some(min) = args.min_pairs_per_sec {
        if report.pairs_per_sec < min {
            eprintln!(
                "grind-loadgen: {:.0} pairs/s is below the required {min:.0}",
                report.pairs_per_sec
            );
            return Ok(ExitCode::from(3));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Whose CPU and memory are measured, and how to describe it.
struct Measure {
    target: Option<Target>,
    scope: String,
    in_process: bool,
}

async fn drive(args: &Args, url: &str, measure: &Measure) -> Result<Report> {
    let channels = embedded::channels(url, args.channels).await?;
    let mut admin = AdminClient::new(channels[0].clone());
    let params = serde_json::json!({"from": args.from, "to": args.to, "unit": args.unit});
    let campaign_id = admin
        .create_campaign(pb::CreateCampaignRequest {
            problem: "primes".into(),
            params_json: params.to_string(),
            name: format!("grind-loadgen {}", std::process::id()),
            verify_rate: 0.0,
            max_attempts: 0,
            family: String::new(),
            // Units as split, one per slot: the benchmark measures the cost per unit.
            target_lease_ms: -1,
        })
        .await
        .context("cannot create the primes campaign")?
        .into_inner()
        .campaign_id;

    let heartbeat = (args.heartbeat_ms > 0).then(|| Duration::from_millis(args.heartbeat_ms));
    let shared = Arc::new(
        Shared::new(campaign_id, args.from, args.to, heartbeat, args.capacity)
            .with_hold(Duration::from_millis(args.unit_ms)),
    );
    let mut workers = JoinSet::new();
    let ramp = Duration::from_secs_f64(args.ramp);
    for index in 0..args.workers {
        let channel = channels[index % channels.len()].clone();
        let share = index as f64 / args.workers as f64;
        workers.spawn(sim::run_worker(
            index,
            channel,
            shared.clone(),
            ramp.mul_f64(share),
            share,
        ));
    }

    // The window starts once every worker runs and has been through a unit or two.
    let warmup = args
        .warmup
        .max(args.ramp + 2.0 * args.unit_ms as f64 / 1000.0);
    tokio::time::sleep(Duration::from_secs_f64(warmup)).await;
    let before = snapshot(measure.target);
    let started = Instant::now();
    shared.set_phase(Phase::Measure);
    tokio::time::sleep(Duration::from_secs_f64(args.seconds)).await;
    shared.set_phase(Phase::Stop);
    let window = started.elapsed().as_secs_f64();
    let after = snapshot(measure.target);
    let max_rss_mib = measure
        .target
        .and_then(|target| procfs::max_rss_kib(target).ok())
        .map(|kib| kib as f64 / 1024.0);

    let mut tally = Tally::default();
    loop {
        match tokio::time::timeout(Duration::from_secs(120), workers.join_next()).await {
            Err(_) => bail!("simulated workers did not stop within 120 s"),
            Ok(None) => break,
            Ok(Some(joined)) => tally.merge(joined.context("a simulated worker crashed")?),
        }
    }

    let status = admin
        .show_campaign(pb::CampaignRef { campaign_id })
        .await
        .context("cannot read the campaign back")?
        .into_inner();
    let units = status.units.unwrap_or_default();
    let stored_total = if status.value.is_empty() {
        "0".to_string()
    } else {
        status.value.clone()
    };
    let submitted_total = tally.accepted_sum.to_string();
    let verify = Verification {
        ok: stored_total == submitted_total && units.done == tally.accepted && units.leased == 0,
        stored_total,
        submitted_total,
        units_done: units.done,
        accepted_completions: tally.accepted,
        units_leased_left: units.leased,
    };
    if !args.keep_campaign {
        if let Err(status) = admin.cancel_campaign(pb::CampaignRef { campaign_id }).await {
            eprintln!("grind-loadgen: could not cancel campaign {campaign_id}: {status}");
        }
    }
    drop(admin);
    drop(channels);

    let pairs = tally.pairs_in_window;
    let cpu = match (before, after) {
        (Some(before), Some(after)) => Some(cpu_report(
            &after.since(&before),
            pairs,
            &measure.scope,
            measure.in_process,
        )),
        _ => None,
    };
    let pairs_per_sec = pairs as f64 / window;
    Ok(Report {
        mode: if measure.in_process {
            "in-process"
        } else {
            "external"
        }
        .into(),
        coordinator: url.to_string(),
        workers: args.workers,
        channels: args.channels,
        capacity: args.capacity,
        heartbeat_ms: args.heartbeat_ms,
        warmup_seconds: warmup,
        unit_ms: args.unit_ms,
        ramp_seconds: args.ramp,
        campaign_id,
        ops_per_sec: (tally.lease_calls_in_window
            + tally.complete.len() as u64
            + tally.heartbeats_in_window) as f64
            / window,
        leases_lost: tally.cancelled + tally.duplicates + tally.rejected,
        leases_expired: None,
        seconds: window,
        pairs,
        pairs_per_sec,
        lease_calls_per_sec: tally.lease_calls_in_window as f64 / window,
        heartbeats_per_sec: tally.heartbeats_in_window as f64 / window,
        lease: tally.lease.summary(),
        complete: tally.complete.summary(),
        heartbeat: tally.heartbeat.summary(),
        cpu,
        max_rss_mib,
        rss_scope: measure.scope.clone(),
        errors: tally.errors,
        duplicates: tally.duplicates,
        rejected: tally.rejected,
        cancelled: tally.cancelled,
        empty_leases: tally.empty_leases,
        foreign_released: tally.foreign_released,
        first_error: tally.first_error,
        verify,
        target_pairs_per_sec: TARGET_PAIRS_PER_SEC,
        meets_target: pairs_per_sec >= TARGET_PAIRS_PER_SEC,
    })
}

/// Leases of `campaign` that expired, from the coordinator's database (read-only).
fn expired_leases(db: &std::path::Path, campaign: i64) -> Result<u64> {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .with_context(|| format!("cannot open {}", db.display()))?;
    let expired: i64 = conn.query_row(
        "SELECT count(*) FROM events WHERE kind = 'lease_expired' AND campaign_id = ?1",
        [campaign],
        |r| r.get(0),
    )?;
    Ok(expired as u64)
}

fn snapshot(target: Option<Target>) -> Option<CpuSnapshot> {
    let target = target?;
    match CpuSnapshot::take(target) {
        Ok(snapshot) => Some(snapshot),
        Err(e) => {
            eprintln!("grind-loadgen: cannot read CPU counters of {target:?}: {e}");
            None
        }
    }
}

fn cpu_report(usage: &CpuUsage, pairs: u64, scope: &str, in_process: bool) -> CpuReport {
    let wall = usage.wall_seconds.max(1e-9);
    let threads = usage
        .threads
        .iter()
        .map(|(name, seconds)| (name.clone(), seconds / wall))
        .collect::<std::collections::BTreeMap<_, _>>();
    let coordinator_cores = in_process.then(|| {
        [STORE_THREAD, COORDINATOR_THREADS]
            .iter()
            .filter_map(|name| threads.get(*name))
            .sum()
    });
    let machine_busy_cores = usage.machine_busy_seconds.map(|busy| busy / wall);
    // Only meaningful when the measured process is this one or the coordinator's.
    let outside_process_cores =
        machine_busy_cores.map(|busy| (busy - usage.process_seconds / wall).max(0.0));
    CpuReport {
        machine_busy_cores,
        outside_process_cores,
        steal_cores: usage.steal_seconds.map(|steal| steal / wall),
        runqueue_wait_cores: usage.runqueue_wait_seconds / wall,
        scope: scope.to_string(),
        process_cores: usage.process_seconds / wall,
        coordinator_cores,
        cpu_us_per_pair: if pairs > 0 {
            usage.process_seconds * 1e6 / pairs as f64
        } else {
            0.0
        },
        threads,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_numbers() {
        assert_eq!(parse_number("1e9"), Ok(1_000_000_000));
        assert_eq!(parse_number("5E3"), Ok(5000));
        assert_eq!(parse_number("1_000"), Ok(1000));
        assert_eq!(parse_number("42"), Ok(42));
        assert!(parse_number("1e30").is_err());
        assert!(parse_number("-1").is_err());
        assert!(parse_number("x").is_err());
    }
}
