//! `grind-worker`: joins a coordinator and computes until stopped (SIGTERM / SIGINT make it
//! checkpoint, hand its leases back and exit within seconds).

use anyhow::Context;
use clap::Parser;
use grind_worker::WorkerConfig;

/// Run grind units from a coordinator on this machine's cores.
#[derive(Parser, Debug)]
#[command(name = "grind-worker", version, about)]
struct Args {
    /// Coordinator URL, e.g. http://coordinator.example:7878.
    #[arg(long, env = "GRIND_COORDINATOR")]
    coordinator: String,
    /// CPU threads to use (default: all cores).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=4096))]
    threads: Option<u16>,
    /// Name shown in status and provenance (default: the host name).
    #[arg(long)]
    name: Option<String>,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let mut config = WorkerConfig::new(&args.coordinator);
    if let Some(threads) = args.threads {
        config.threads = usize::from(threads);
    }
    if let Some(name) = args.name {
        config.name = name;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("cannot start the IO runtime")?;
    let summary = runtime.block_on(grind_worker::run(config, shutdown_signal()))?;
    tracing::info!(
        "worker {} stopped: {} unit(s) done, {} refused, {} undelivered",
        summary.worker_id,
        summary.units_done,
        summary.refused,
        summary.undelivered
    );
    Ok(())
}

async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    let mut int = signal(SignalKind::interrupt()).expect("SIGINT handler");
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM received"),
        _ = int.recv() => tracing::info!("SIGINT received"),
    }
}
