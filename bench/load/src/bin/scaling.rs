//! `grind-scaling`: simulated wall time of a campaign on 10, 100, 1,000 workers, with unit
//! durations from a recorded campaign's unit times, against an in-process coordinator.
//! See BENCHMARKS.md ("Reliability suites: load and scaling").

use anyhow::{bail, Context, Result};
use clap::Parser;
use grind_bench::embedded::{self, Embedded};
use grind_bench::scaling::{self, ScalingRun};
use grind_coordinator::config::Config;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Simulates a campaign's wall time on many workers: unit durations come from a recorded
/// campaign (one seconds value per line, e.g. a Topswops campaign's `results.wall_seconds`),
/// workers hold each unit that long and complete it over real gRPC.
#[derive(Parser, Debug)]
#[command(name = "grind-scaling", version)]
struct Args {
    /// Recorded unit times, seconds, one per line.
    #[arg(long)]
    unit_times: PathBuf,
    /// Worker counts to simulate.
    #[arg(long, value_delimiter = ',', default_value = "10,100,1000")]
    workers: Vec<usize>,
    /// Rescale the recorded times so that the mean unit takes this many seconds (the
    /// distribution's shape is kept).
    #[arg(long, default_value_t = 1.0)]
    mean_unit_seconds: f64,
    /// Campaign shapes: `recorded` (the recorded units themselves, strong scaling) and/or
    /// `per-worker` (units drawn from the recorded times, `--units-per-worker` per worker).
    #[arg(long, value_delimiter = ',', default_value = "recorded,per-worker")]
    shapes: Vec<String>,
    /// Units per worker for the `per-worker` shape.
    #[arg(long, default_value_t = 20)]
    units_per_worker: usize,
    /// Heartbeat interval of the simulated workers, in seconds.
    #[arg(long, default_value_t = 10.0)]
    heartbeat_seconds: f64,
    /// gRPC channels the workers share.
    #[arg(long, default_value_t = 8)]
    channels: usize,
    /// Seed of the per-worker draws.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print one JSON line per run instead of the table.
    #[arg(long)]
    json: bool,
}

fn main() -> Result<()> {
    let args = Args::parse();
    if args.workers.is_empty() || args.workers.contains(&0) || args.mean_unit_seconds <= 0.0 {
        bail!("--workers must list positive counts and --mean-unit-seconds be positive");
    }
    let text = std::fs::read_to_string(&args.unit_times)
        .with_context(|| format!("cannot read {}", args.unit_times.display()))?;
    let recorded = scaling::scaled(&scaling::parse_unit_times(&text)?, args.mean_unit_seconds);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .thread_name("loadgen-rt")
        .enable_all()
        .build()?;
    if !args.json {
        println!(
            "{:<14} {:>7} {:>6} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8} {:>6} {:>6} {:>13} {:>13} {:>9}",
            "shape",
            "workers",
            "units",
            "work s",
            "longest",
            "ideal s",
            "bound s",
            "greedy s",
            "actual s",
            "eff",
            "gr/act",
            "lease p50/99",
            "compl p50/99",
            "rt/unit"
        );
    }
    for shape in &args.shapes {
        for &workers in &args.workers {
            let (label, durations) = match shape.as_str() {
                "recorded" => ("recorded".to_string(), recorded.clone()),
                "per-worker" => (
                    format!("{} per worker", args.units_per_worker),
                    scaling::draw(&recorded, workers * args.units_per_worker, args.seed),
                ),
                other => bail!("unknown shape {other:?} (recorded, per-worker)"),
            };
            let embedded = Embedded::start(
                2,
                None,
                Config {
                    verify_rate: 0.0,
                    // Every worker registers at once from one address.
                    registrations_per_second: 100_000,
                    ..Config::default()
                },
            )?;
            let url = embedded.url.clone();
            let run = runtime.block_on(async {
                let channels = embedded::channels(&url, args.channels).await?;
                scaling::simulate(
                    &channels,
                    &label,
                    Arc::new(durations),
                    workers,
                    Duration::from_secs_f64(args.heartbeat_seconds),
                )
                .await
            })?;
            embedded.stop()?;
            print_run(&run, args.json)?;
        }
    }
    Ok(())
}

fn print_run(run: &ScalingRun, json: bool) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string(run)?);
        return Ok(());
    }
    println!(
        "{:<14} {:>7} {:>6} {:>9.1} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>6.3} {:>6.3} {:>6.1}/{:<6.1} {:>6.1}/{:<6.1} {:>6.1} ms{}",
        run.shape,
        run.workers,
        run.units,
        run.work_seconds,
        run.longest_unit_seconds,
        run.ideal_seconds,
        run.bound_seconds,
        run.greedy_seconds,
        run.actual_seconds,
        run.efficiency,
        run.greedy_seconds / run.actual_seconds,
        run.lease_p50_ms,
        run.lease_p99_ms,
        run.complete_p50_ms,
        run.complete_p99_ms,
        run.round_trip_per_unit_ms,
        if run.errors > 0 {
            format!("  ({} errors)", run.errors)
        } else {
            String::new()
        }
    );
    Ok(())
}
