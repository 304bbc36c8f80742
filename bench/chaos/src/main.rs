//! `grind-chaos --seed S --duration SECONDS`: a coordinator and workers on loopback under
//! seeded random faults, then every invariant checked. Exit status 0 when every run held
//! every invariant, 1 when a violation was found, 3 when the harness itself failed.
//! See RELIABILITY.md.

use anyhow::{bail, Context, Result};
use clap::Parser;
use grind_chaos::faults::FaultKind;
use grind_chaos::procs::CoordinatorSettings;
use grind_chaos::run::{self, RunSettings};
use grind_chaos::workload::WorkloadSettings;
use grind_kit::binaries::Binaries;
use grind_kit::launch::work_dir;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Chaos test of grind: real `grind serve` and `grind-worker` processes on loopback under
/// seeded random faults (process kills and restarts, network cuts, stalls, delays and lost
/// replies, an unwritable database), with every invariant checked at the end.
#[derive(Parser, Debug)]
#[command(name = "grind-chaos", version)]
struct Args {
    /// Seed of the fault plan and the workload (round r uses seed + r).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Length of the fault window in seconds (campaigns are created during it; faults are
    /// all undone by its end).
    #[arg(long, default_value_t = 60.0)]
    duration: f64,
    /// Seconds the campaigns get to finish after the window.
    #[arg(long, default_value_t = 180.0)]
    drain: f64,
    /// Independent runs, one after another, each with a fresh cluster and database.
    #[arg(long, default_value_t = 1)]
    rounds: u64,
    /// Worker processes.
    #[arg(long, default_value_t = 3)]
    workers: usize,
    /// Solver threads per worker.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Mean time between faults, in milliseconds.
    #[arg(long, default_value_t = 1500)]
    fault_every_ms: u64,
    /// Fault kinds to inject, comma separated (default: all of kill-worker, stop-worker,
    /// kill-coordinator, cut-network, stall-network, delay-network, lose-replies,
    /// db-unwritable, duplicate-requests).
    #[arg(long, value_delimiter = ',')]
    faults: Option<Vec<String>>,
    /// The coordinator's --lease-ttl-ms.
    #[arg(long, default_value_t = 3000)]
    lease_ttl_ms: u64,
    /// The coordinator's --heartbeat-ms.
    #[arg(long, default_value_t = 500)]
    heartbeat_ms: u64,
    /// The coordinator's --max-attempts (high: faults expire leases often).
    #[arg(long, default_value_t = 100)]
    max_attempts: u32,
    /// Campaigns running at once.
    #[arg(long, default_value_t = 3)]
    concurrent: usize,
    /// Largest Topswops n (the harness checks it over all n! decks).
    #[arg(long, default_value_t = 9)]
    topswops_max_n: u8,
    /// Shortest and longest primes unit, in milliseconds (`min_unit_ms`).
    #[arg(long, value_delimiter = ',', default_value = "100,500")]
    unit_ms: Vec<u64>,
    /// Directory for the databases, logs and reports (default: a new directory under the
    /// system's temporary directory, removed after a passing run).
    #[arg(long)]
    out: Option<PathBuf>,
    /// The `grind` binary (default: beside this one).
    #[arg(long)]
    grind_bin: Option<PathBuf>,
    /// The `grind-worker` binary (default: beside this one).
    #[arg(long)]
    worker_bin: Option<PathBuf>,
    /// Print each run's report as one JSON line instead of the summary.
    #[arg(long)]
    json: bool,
    /// Print the fault plan of each round (one JSON line per fault) and exit.
    #[arg(long)]
    plan_only: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match main_with(args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("grind-chaos: {e:#}");
            ExitCode::from(3)
        }
    }
}

fn enabled_faults(names: &Option<Vec<String>>) -> Result<Vec<FaultKind>> {
    let Some(names) = names else {
        return Ok(FaultKind::ALL.to_vec());
    };
    names
        .iter()
        .map(|name| {
            FaultKind::parse(name.trim()).with_context(|| {
                format!(
                    "unknown fault {name:?}; known: {}",
                    FaultKind::ALL.map(FaultKind::name).join(", ")
                )
            })
        })
        .collect()
}

fn main_with(args: Args) -> Result<bool> {
    if !(args.duration > 0.0 && args.duration <= 7.0 * 86_400.0) || args.drain < 0.0 {
        bail!("--duration must be positive (at most a week) and --drain non-negative");
    }
    if args.workers == 0 || args.threads == 0 || args.concurrent == 0 {
        bail!("--workers, --threads and --concurrent must be at least 1");
    }
    if args.unit_ms.len() != 2 || args.unit_ms[0] > args.unit_ms[1] {
        bail!("--unit-ms takes MIN,MAX");
    }
    if !(5..=10).contains(&args.topswops_max_n) {
        bail!("--topswops-max-n must be between 5 and 10");
    }
    let enabled = enabled_faults(&args.faults)?;
    if args.plan_only {
        for round in 0..args.rounds {
            let seed = args.seed + round;
            let plan = grind_chaos::faults::plan(
                &mut grind_chaos::rng::fork(&grind_chaos::rng::seeded(seed), 1),
                Duration::from_secs_f64(args.duration),
                args.workers,
                Duration::from_millis(args.fault_every_ms.max(50)),
                &enabled,
            );
            for fault in plan {
                println!(
                    "{{\"seed\":{seed},\"fault\":{}}}",
                    serde_json::to_string(&fault)?
                );
            }
        }
        return Ok(true);
    }
    let binaries =
        Binaries::locate(args.grind_bin.clone(), args.worker_bin.clone()).context("setup")?;
    let (root, temporary) = work_dir(args.out.as_deref(), "grind-chaos-")
        .context("cannot create a temporary directory")?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    let started = Instant::now();
    let mut all_ok = true;
    let mut failed_dirs = Vec::new();
    for round in 0..args.rounds {
        let seed = args.seed + round;
        let dir = root.join(format!("seed-{seed}"));
        let settings = RunSettings {
            seed,
            window: Duration::from_secs_f64(args.duration),
            drain: Duration::from_secs_f64(args.drain),
            workers: args.workers,
            threads: args.threads,
            mean_gap: Duration::from_millis(args.fault_every_ms.max(50)),
            enabled: enabled.clone(),
            coordinator: CoordinatorSettings {
                lease_ttl_ms: args.lease_ttl_ms,
                heartbeat_ms: args.heartbeat_ms,
                max_attempts: args.max_attempts,
            },
            workload: WorkloadSettings {
                topswops_max_n: args.topswops_max_n,
                concurrent: args.concurrent,
                unit_ms: (args.unit_ms[0], args.unit_ms[1]),
            },
            dir: dir.clone(),
            binaries: binaries.clone(),
        };
        let report = runtime
            .block_on(run::run(settings))
            .with_context(|| format!("run with seed {seed}"))?;
        if args.json {
            println!("{}", serde_json::to_string(&report)?);
        } else {
            print!("{}", report.human());
        }
        if !report.ok {
            all_ok = false;
            failed_dirs.push(dir);
        }
    }
    if !args.json {
        println!(
            "{} run(s) in {:.0} s: {}",
            args.rounds,
            started.elapsed().as_secs_f64(),
            if all_ok {
                "every invariant held"
            } else {
                "VIOLATIONS FOUND"
            }
        );
    }
    if let Some(dir) = temporary {
        if all_ok {
            drop(dir);
        } else {
            let kept = dir.keep();
            eprintln!(
                "grind-chaos: databases and logs kept in {} ({})",
                kept.display(),
                failed_dirs
                    .iter()
                    .map(|d| d.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    Ok(all_ok)
}
