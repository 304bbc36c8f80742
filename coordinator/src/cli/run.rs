//! `grind run` (embedded coordinator + local workers, prints the verified result) and
//! `grind serve` (a coordinator for remote workers).

use anyhow::Context;
use grind_proto::v1 as pb;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;
use tokio::net::TcpListener;
use tokio::sync::watch;

use super::problem_args;
use super::render;
use super::{CliError, ServeArgs};
use crate::clock::SystemClock;
use crate::config::Config;
use crate::core::Coordinator;
use crate::store::Store;

/// `grind run` positional arguments: the problem and everything after it.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// The problem to run (see `grind problems`).
    #[arg(allow_hyphen_values = true)]
    pub problem: String,
    /// The problem's flags and the run flags (`--workers`, `--threads`, `--db`, `--json`, ...).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

/// Flags of `grind run` itself, parsed together with the problem's flags.
#[derive(clap::Args, Debug)]
pub struct RunOptions {
    /// Local worker processes' worth of workers to start (each with its own identity).
    #[arg(long, default_value_t = 1)]
    pub workers: usize,
    /// CPU threads per worker (default: all cores shared among the workers).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Database to keep the campaign in (default: a temporary one). Running again with the
    /// same database and parameters resumes the campaign.
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// Print the result as one JSON object on the last line of stdout.
    #[arg(long)]
    pub json: bool,
    /// Fraction of count units re-run for verification.
    #[arg(long, default_value_t = 0.05)]
    pub verify_rate: f64,
    /// Also write the result in its export format (submission, table, samples) to this file,
    /// and its provenance record to FILE.provenance.json.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// Runs one problem locally and prints the verified result.
pub async fn run(args: RunArgs) -> Result<(), CliError> {
    let parsed = problem_args::parse::<RunOptions>("grind run", &args.problem, &args.args)?;
    let opts = parsed.options;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if opts.workers == 0 || opts.workers > 256 {
        return Err(CliError::Usage(
            "--workers must be between 1 and 256".into(),
        ));
    }
    let threads = opts.threads.unwrap_or((cores / opts.workers).max(1));
    if threads == 0 || threads > 4096 {
        return Err(CliError::Usage(
            "--threads must be between 1 and 4096".into(),
        ));
    }
    if !(0.0..=1.0).contains(&opts.verify_rate) {
        return Err(CliError::Usage(
            "--verify-rate must be between 0 and 1".into(),
        ));
    }
    let started = Instant::now();
    let (db_path, temporary) = match &opts.db {
        Some(path) => (path.clone(), false),
        None => (
            std::env::temp_dir().join(format!("grind-run-{}.db", std::process::id())),
            true,
        ),
    };
    let store = Store::open(&db_path)
        .with_context(|| format!("cannot open the database {}", db_path.display()))?;
    let config = Config {
        verify_rate: opts.verify_rate,
        allow_self_replication: opts.workers == 1,
        heartbeat_interval_ms: 500,
        ..Config::default()
    };
    let coordinator = Coordinator::new(store, Arc::new(SystemClock), config);
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .context("cannot bind a loopback port")?;
    let url = format!("http://{}", listener.local_addr().context("local address")?);
    // Workers stop first (delivering what they hold), then the server.
    let (stop_workers, workers_stop) = watch::channel(false);
    let (stop_server, server_stop) = watch::channel(false);
    let server = tokio::spawn(crate::server::serve(
        coordinator.clone(),
        listener,
        wait_for(server_stop),
    ));

    let params_json = parsed.params.to_string();
    let campaign_id = match find_resumable(&coordinator, parsed.entry.name, &params_json).await? {
        Some(id) => {
            tracing::info!("resuming campaign {id} from {}", db_path.display());
            id
        }
        None => coordinator
            .create_campaign(pb::CreateCampaignRequest {
                problem: parsed.entry.name.to_string(),
                params_json: params_json.clone(),
                name: String::new(),
                verify_rate: opts.verify_rate,
                max_attempts: 0,
            })
            .await
            .map_err(|e| CliError::Usage(e.to_string()))?,
    };

    let mut workers = Vec::new();
    for index in 0..opts.workers {
        let mut config = grind_worker::WorkerConfig::new(&url);
        config.threads = threads;
        config.name = format!("{}-local-{index}", config.host);
        workers.push(tokio::spawn(grind_worker::run(
            config,
            wait_for(workers_stop.clone()),
        )));
    }

    let status = wait_until_finished(&coordinator, campaign_id).await?;
    if let Some(path) = &opts.out {
        let export = coordinator
            .export(campaign_id)
            .await
            .map_err(anyhow::Error::from)?;
        std::fs::write(path, &export.submission)
            .with_context(|| format!("cannot write {}", path.display()))?;
        let provenance = format!("{}.provenance.json", path.display());
        std::fs::write(&provenance, &export.provenance_json)
            .with_context(|| format!("cannot write {provenance}"))?;
    }
    let _ = stop_workers.send(true);
    for worker in workers {
        let _ = worker.await;
    }
    let _ = stop_server.send(true);
    let _ = server.await;
    let wall_seconds = started.elapsed().as_secs_f64();
    if temporary {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", db_path.display()));
        }
    }
    let summary = render::run_summary(&status, wall_seconds);
    if opts.json {
        println!("{summary}");
    } else {
        print!("{}", render::run_human(&status, wall_seconds));
    }
    if status.state == "done" {
        Ok(())
    } else {
        Err(CliError::Other(anyhow::anyhow!(
            "campaign {campaign_id} ended {}",
            status.state
        )))
    }
}

async fn wait_for(mut stop: watch::Receiver<bool>) {
    let _ = stop.wait_for(|stopped| *stopped).await;
}

/// An unfinished (or finished) campaign of the same problem and parameters in the database.
async fn find_resumable(
    coordinator: &Coordinator,
    problem: &str,
    params_json: &str,
) -> Result<Option<i64>, CliError> {
    let campaigns = coordinator.campaigns().await.map_err(anyhow::Error::from)?;
    let found = campaigns
        .into_iter()
        .filter(|c| c.problem == problem && c.params_json == params_json && c.state != "cancelled")
        .map(|c| (c.campaign_id, c.state))
        .next_back();
    if let Some((id, state)) = &found {
        if state == "paused" {
            coordinator
                .change_state(*id, crate::scheduler::Action::Resume)
                .await
                .map_err(anyhow::Error::from)?;
        }
    }
    Ok(found.map(|(id, _)| id))
}

async fn wait_until_finished(
    coordinator: &Coordinator,
    campaign_id: i64,
) -> Result<pb::CampaignStatus, CliError> {
    let mut changes = coordinator.subscribe();
    loop {
        let status = coordinator
            .campaign(campaign_id)
            .await
            .map_err(anyhow::Error::from)?;
        if matches!(status.state.as_str(), "done" | "failed" | "cancelled") {
            return Ok(status);
        }
        // Wake on any change, and at least every second (lease expiry runs on its own).
        let _ = tokio::time::timeout(std::time::Duration::from_secs(1), changes.changed()).await;
    }
}

/// Serves a coordinator until SIGINT or SIGTERM.
pub async fn serve(args: ServeArgs) -> Result<(), CliError> {
    if args.lease_ttl_ms < 100 {
        return Err(CliError::Usage(
            "--lease-ttl-ms must be at least 100".into(),
        ));
    }
    if args.heartbeat_ms < 10 || args.heartbeat_ms >= args.lease_ttl_ms {
        return Err(CliError::Usage(
            "--heartbeat-ms must be at least 10 and below --lease-ttl-ms".into(),
        ));
    }
    if !(0.0..=1.0).contains(&args.verify_rate) {
        return Err(CliError::Usage(
            "--verify-rate must be between 0 and 1".into(),
        ));
    }
    if args.max_attempts == 0 {
        return Err(CliError::Usage("--max-attempts must be at least 1".into()));
    }
    let store = Store::open(&args.db)
        .with_context(|| format!("cannot open the database {}", args.db.display()))?;
    let config = Config {
        lease_ttl_ms: args.lease_ttl_ms,
        heartbeat_interval_ms: args.heartbeat_ms,
        verify_rate: args.verify_rate,
        max_attempts: args.max_attempts,
        sweep_interval_ms: (args.lease_ttl_ms / 10).clamp(10, 1000) as u64,
        ..Config::default()
    };
    let listener = TcpListener::bind(&args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let local = listener.local_addr().context("local address")?;
    // The line tools and tests wait for: the address actually bound (port 0 resolves here).
    println!("grind coordinator listening on {local}");
    tracing::info!("serving {} on {local}", args.db.display());
    let coordinator = Coordinator::new(store, Arc::new(SystemClock), config);
    crate::server::serve(coordinator, listener, shutdown_signal())
        .await
        .map_err(anyhow::Error::from)?;
    Ok(())
}

async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {},
        _ = int.recv() => {},
    }
}
