//! `grind-latency --round-trip-ms 10,50,200`: one case per round trip (a coordinator, a delay
//! line, workers behind resetting proxies, one campaign of stretched `primes` units), each
//! reporting the workers' busy fraction and checking that nothing was lost or counted
//! twice. Exit status 0 when every case finished right (and, with `--min-busy`, was busy
//! enough), 1 otherwise, 3 when the benchmark itself failed.

use anyhow::{bail, Context, Result};
use clap::Parser;
use grind_kit::binaries::Binaries;
use grind_kit::launch::work_dir;
use grind_latency::case::{self, CaseReport, CaseSettings};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Latency hiding: workers behind delaying, resetting TCP proxies on loopback.
#[derive(Parser, Debug)]
#[command(name = "grind-latency", version)]
struct Args {
    /// Round trips to add between workers and the coordinator, ms (one case each).
    #[arg(long, value_delimiter = ',', default_value = "10,50,200")]
    round_trip_ms: Vec<u64>,
    /// Worker processes.
    #[arg(long, default_value_t = 3)]
    workers: usize,
    /// Solver threads per worker.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Units per solver thread (the campaign has workers x threads x this many units).
    #[arg(long, default_value_t = 20)]
    units_per_thread: u64,
    /// Wall time of each unit, ms (`primes --min-unit-ms`).
    #[arg(long, default_value_t = 1000)]
    unit_ms: u64,
    /// Numbers sieved per unit.
    #[arg(long, default_value_t = 100_000)]
    unit_numbers: u64,
    /// Connection resets per minute (the workers' proxies take turns).
    #[arg(long, default_value_t = 6.0)]
    resets_per_minute: f64,
    /// The coordinator's --heartbeat-ms (grind serve's default).
    #[arg(long, default_value_t = 2000)]
    heartbeat_ms: u64,
    /// The coordinator's --lease-ttl-ms (grind serve's default).
    #[arg(long, default_value_t = 60_000)]
    lease_ttl_ms: u64,
    /// A case fails when its campaign has not finished within this many seconds.
    #[arg(long, default_value_t = 300)]
    time_limit_seconds: u64,
    /// Fail (exit 1) when a case's busy fraction is below this.
    #[arg(long, default_value_t = 0.0)]
    min_busy: f64,
    /// Directory for databases and logs (default: a temporary one, removed unless a case
    /// failed).
    #[arg(long)]
    out: Option<PathBuf>,
    /// The `grind` binary (default: beside this one).
    #[arg(long)]
    grind_bin: Option<PathBuf>,
    /// The `grind-worker` binary (default: beside this one).
    #[arg(long)]
    worker_bin: Option<PathBuf>,
    /// Print each case's report as one JSON line instead of a table row.
    #[arg(long)]
    json: bool,
}

fn main() -> ExitCode {
    match main_with(Args::parse()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("grind-latency: {e:#}");
            ExitCode::from(3)
        }
    }
}

fn main_with(args: Args) -> Result<bool> {
    if args.round_trip_ms.is_empty() || args.round_trip_ms.iter().any(|&ms| ms > 10_000) {
        bail!("--round-trip-ms takes one or more round trips of at most 10000 ms");
    }
    if args.workers == 0 || args.threads == 0 || args.units_per_thread == 0 {
        bail!("--workers, --threads and --units-per-thread must be at least 1");
    }
    if args.unit_numbers == 0 || args.unit_ms > 3_600_000 {
        bail!("--unit-numbers must be at least 1 and --unit-ms at most an hour");
    }
    if !(0.0..=600.0).contains(&args.resets_per_minute) {
        bail!("--resets-per-minute must be between 0 and 600");
    }
    let binaries =
        Binaries::locate(args.grind_bin.clone(), args.worker_bin.clone()).context("setup")?;
    let (root, temporary) = work_dir(args.out.as_deref(), "grind-latency-")
        .context("cannot create a temporary directory")?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    let units = (args.workers * args.threads) as u64 * args.units_per_thread;
    if !args.json {
        println!(
            "{} workers x {} threads, {units} units of {} ms, {} resets/min",
            args.workers, args.threads, args.unit_ms, args.resets_per_minute
        );
        println!(
            "rtt_ms  busy    steady  from_creation  working_s  tail_s  campaign_s  unit_wall_s  leases  resets  value     ok"
        );
    }
    let mut all_ok = true;
    for &round_trip_ms in &args.round_trip_ms {
        let settings = CaseSettings {
            binaries: binaries.clone(),
            dir: root.join(format!("rtt-{round_trip_ms}ms")),
            round_trip: Duration::from_millis(round_trip_ms),
            workers: args.workers,
            threads: args.threads,
            units,
            unit_ms: args.unit_ms,
            unit_numbers: args.unit_numbers,
            resets_per_minute: args.resets_per_minute,
            heartbeat_ms: args.heartbeat_ms,
            lease_ttl_ms: args.lease_ttl_ms,
            time_limit: Duration::from_secs(args.time_limit_seconds),
        };
        let report = runtime
            .block_on(case::run(&settings))
            .with_context(|| format!("case with a {round_trip_ms} ms round trip"))?;
        let ok = report.ok() && report.busy_fraction >= args.min_busy;
        all_ok &= ok;
        if args.json {
            println!("{}", serde_json::to_string(&report)?);
        } else {
            print_row(&report, ok);
        }
    }
    if let Some(dir) = temporary {
        if all_ok {
            drop(dir);
        } else {
            eprintln!(
                "grind-latency: databases and logs kept in {}",
                dir.keep().display()
            );
        }
    }
    Ok(all_ok)
}

fn print_row(report: &CaseReport, ok: bool) {
    println!(
        "{:>6}  {:>5.1}%  {:>5.1}%  {:>12.1}%  {:>9.2}  {:>6.2}  {:>10.2}  {:>11.2}  {:>6}  {:>6}  {:<8}  {}",
        report.round_trip_ms,
        100.0 * report.busy_fraction,
        100.0 * report.busy_fraction_steady,
        100.0 * report.busy_fraction_from_creation,
        report.working_seconds,
        report.tail_seconds,
        report.campaign_seconds,
        report.unit_wall_seconds,
        report.leases,
        report.resets,
        report.value,
        if ok { "ok" } else { "FAILED" }
    );
    for violation in &report.violations {
        println!("        {violation}");
    }
}
