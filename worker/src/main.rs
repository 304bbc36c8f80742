//! `grind-worker`: joins a coordinator and computes until stopped (SIGTERM / SIGINT make it
//! checkpoint, hand its leases back and exit within seconds). Its exit code tells a service
//! manager whether starting it again can help (see `EXIT_CODES`).

use anyhow::Context;
use clap::Parser;
use grind_worker::connect::Access;
use grind_worker::{WorkerConfig, WorkerError, EXIT_CONFIG, EXIT_REFUSED};
use std::path::PathBuf;

/// The exit codes, as `--help` shows them.
const EXIT_CODES: &str = "Exit codes:
  0   stopped as asked (SIGTERM, SIGINT, --max-hours)
  1   failed in a way a restart may cure
  2   bad command line
  77  refused for good by the coordinator: missing, wrong or revoked token, or banned
      (do not restart: systemd RestartPreventExitStatus=77 78)
  78  unusable configuration: token file unreadable or empty, CA file not PEM";

/// `--version`: the version and what the binary was built for (target, glibc floor; see
/// build.rs).
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("GRIND_WORKER_BUILT_FOR"),
    ")"
);

/// Run grind units from a coordinator on this machine's cores.
#[derive(Parser, Debug)]
#[command(name = "grind-worker", version = VERSION, about, after_help = EXIT_CODES)]
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
    /// The worker token, given directly (prefer --token-file: environments leak).
    #[arg(long, env = "GRIND_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// File holding the worker token (`grind token create` prints one).
    #[arg(long, env = "GRIND_TOKEN_FILE")]
    token_file: Option<PathBuf>,
    /// CA certificate (PEM) the coordinator's certificate must chain to (https:// URLs).
    #[arg(long, env = "GRIND_CA_FILE")]
    ca_file: Option<PathBuf>,
    /// Work only while the rest of the machine is idle; hand work back when it gets busy.
    #[arg(long)]
    idle_only: bool,
    /// Stop (checkpointing and handing work back, as on SIGTERM) after this many hours.
    #[arg(long, value_parser = parse_hours)]
    max_hours: Option<f64>,
    /// Append a machine-readable event stream to FILE: one JSON object per line for each
    /// registration, lease, acknowledged or refused result, release and stop (for harnesses;
    /// the format is stable, see the `grind_worker::events` docs).
    #[arg(long, value_name = "FILE")]
    events: Option<PathBuf>,
    /// Where solver bundles fetched from the coordinator are kept, by digest (default:
    /// $XDG_CACHE_HOME/grind/bundles or ~/.cache/grind/bundles).
    #[arg(long, env = "GRIND_BUNDLE_CACHE", value_name = "DIR")]
    bundle_cache: Option<PathBuf>,
    /// Allow this worker to run users' own programs (exec campaigns): native code sent by
    /// the coordinator, run sandboxed but with this worker's user rights. Only for machines
    /// whose owner trusts the coordinator's campaigns; without it such units are never
    /// granted here, and the worker refuses any it gets.
    #[arg(long)]
    allow_exec: bool,
}

fn parse_hours(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(hours) if hours > 0.0 && hours <= 24.0 * 365.0 * 10.0 => Ok(hours),
        _ => Err("must be a positive number of hours (at most ten years)".into()),
    }
}

fn main() {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        // A log write that fails (full disk) must not panic the thread that logged.
        .log_internal_errors(false)
        .init();
    if let Err(e) = run(args) {
        eprintln!("grind-worker: {e:#}");
        let code = match e.downcast_ref::<WorkerError>() {
            Some(e) => e.exit_code(),
            None => 1,
        };
        if code == EXIT_REFUSED || code == EXIT_CONFIG {
            eprintln!("grind-worker: exit code {code}: starting again will not help");
        }
        std::process::exit(code);
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("cannot start the IO runtime")?;
    let shutdown = {
        let _runtime = runtime.enter();
        shutdown_signal().context("cannot listen for SIGTERM and SIGINT")?
    };
    let mut config = WorkerConfig::new(&args.coordinator);
    config.access = Access::from_sources(
        args.token.clone(),
        args.token_file.as_deref(),
        args.ca_file.as_deref(),
    )?;
    config.idle_only = args.idle_only;
    config.events = args.events;
    config.allow_exec = args.allow_exec;
    if let Some(hours) = args.max_hours {
        config.max_runtime = Some(std::time::Duration::from_secs_f64(hours * 3600.0));
    }
    if let Some(threads) = args.threads {
        config.threads = usize::from(threads);
    }
    if let Some(name) = args.name {
        config.name = name;
    }
    // Bundles (a user's solver, checker, instance) come from the coordinator on first use.
    grind_worker::bundles::WorkerBundles::new(
        args.bundle_cache
            .unwrap_or_else(grind_worker::bundles::default_cache_dir),
        &config.coordinator,
        &config.access,
        runtime.handle().clone(),
    )?
    .install();
    let summary = runtime.block_on(grind_worker::run(config, shutdown))?;
    tracing::info!(
        "worker {} stopped: {} unit(s) done, {} refused, {} undelivered",
        summary.worker_id,
        summary.units_done,
        summary.refused,
        summary.undelivered
    );
    Ok(())
}

/// Resolves on the first SIGTERM or SIGINT. The handlers are installed here, at start-up
/// (inside the runtime), not when the future is first polled: a signal that arrives while the
/// worker is still starting (its first call to the coordinator can take a minute) then stops
/// it gracefully instead of killing it with status 143.
fn shutdown_signal() -> std::io::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM received"),
            _ = int.recv() => tracing::info!("SIGINT received"),
        }
    })
}
