//! `grind run` (embedded coordinator + local workers, prints the verified result) and
//! `grind serve` (a coordinator for remote workers).

use anyhow::Context;
use grind_proto::v1 as pb;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;
use tokio::net::TcpListener;
use tokio::sync::watch;

use super::attachments::{self, Destination};
use super::db_lock::DbLock;
use super::problem_args;
use super::render;
use super::{CliError, ServeArgs};
use crate::auth::Authenticator;
use crate::bundles::source::StoreBundles;
use crate::bundles::BundleStore;
use crate::clock::SystemClock;
use crate::config::Config;
use crate::core::Coordinator;
use crate::server::ServeOptions;
use crate::store::{Durability, Store};
use crate::tls::ServerIdentity;

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
    /// Fraction of count and search units re-run for verification.
    #[arg(long, default_value_t = 0.05)]
    pub verify_rate: f64,
    /// Also write the result in its export format (submission, table, samples) to this file,
    /// and its provenance record to FILE.provenance.json.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Stop after this many seconds even if the campaign is not finished (anytime searches
    /// run until stopped); the result so far is printed, and `--db` keeps it resumable.
    #[arg(long)]
    pub seconds: Option<f64>,
}

/// Runs one problem locally and prints the verified result.
pub async fn run(args: RunArgs) -> Result<(), CliError> {
    let mut raw = problem_args::parse_raw::<RunOptions>("grind run", &args.problem, &args.args)?;
    let opts = &raw.options;
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
    // From here on, Ctrl-C (or SIGTERM) stops the run cleanly instead of killing it.
    let interrupted = Interrupt::listen(temporary.then(|| db_path.clone()))?;
    let lock = DbLock::acquire(&db_path).map_err(anyhow::Error::from)?;
    // A temporary database is deleted when the run ends and cannot be resumed from, so its
    // commits need not wait for the disk.
    let durability = if temporary {
        Durability::Scratch
    } else {
        Durability::Full
    };
    let store = Store::open_with(&db_path, durability)
        .with_context(|| format!("cannot open the database {}", db_path.display()))?;
    // The files the parameters name go into the embedded coordinator's bundle store, which
    // also serves them to the local workers (they share this machine).
    let bundles = BundleStore::open(
        BundleStore::beside(&db_path),
        store.clone(),
        crate::bundles::DEFAULT_MAX_BUNDLE_MIB << 20,
    )
    .map_err(anyhow::Error::from)?;
    StoreBundles::install(bundles.clone());
    let attached = attachments::attach(
        raw.entry.attachments,
        &mut raw.raw,
        &mut Destination::Local(&bundles),
    )
    .await
    .inspect_err(|_| {
        if temporary {
            remove_database(&db_path);
        }
    })?;
    attachments::report(&attached);
    let parsed = raw.build().inspect_err(|_| {
        if temporary {
            remove_database(&db_path);
        }
    })?;
    let opts = parsed.options;
    let config = Config {
        verify_rate: opts.verify_rate,
        allow_self_replication: opts.workers == 1,
        heartbeat_interval_ms: 500,
        // The workers are this process's own: never throttle them.
        worker_calls_per_second: 0,
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
    let server = tokio::spawn(crate::server::serve_with(
        coordinator.clone(),
        listener,
        wait_for(server_stop),
        ServeOptions {
            bundles: Some(bundles),
            ..ServeOptions::default()
        },
    ));

    let mut campaign_ids = Vec::with_capacity(parsed.members.len());
    let family = if parsed.members.len() > 1 {
        format!("{} {}", parsed.entry.name, parsed.params)
    } else {
        String::new()
    };
    for member in &parsed.members {
        let params_json = member.to_string();
        let id = match find_resumable(&coordinator, parsed.entry.name, &params_json).await? {
            Some(id) => {
                tracing::info!("resuming campaign {id} from {}", db_path.display());
                id
            }
            None => coordinator
                .create_campaigns(pb::CreateCampaignRequest {
                    problem: parsed.entry.name.to_string(),
                    params_json,
                    name: String::new(),
                    verify_rate: opts.verify_rate,
                    max_attempts: 0,
                    target_lease_ms: 0,
                    family: family.clone(),
                })
                .await
                .map_err(|e| CliError::Usage(e.to_string()))?[0],
        };
        campaign_ids.push(id);
    }

    let mut workers = Vec::new();
    for index in 0..opts.workers {
        let mut config = grind_worker::WorkerConfig::new(&url);
        config.threads = threads;
        config.name = format!("{}-local-{index}", config.host);
        // The run ends when its campaigns do: an idle worker must see the stop at once, not
        // after a held lease call (the campaigns exist before the workers start).
        config.idle_lease_wait_ms = 0;
        // One's own machine, one's own campaigns: users' solvers run without the opt-in
        // a spare machine's worker needs (`grind-worker --allow-exec`).
        config.allow_exec = true;
        workers.push(tokio::spawn(grind_worker::run(
            config,
            wait_for(workers_stop.clone()),
        )));
    }

    let deadline = opts
        .seconds
        .map(|s| started + std::time::Duration::from_secs_f64(s.clamp(0.0, 1e9)));
    let bars = super::watch::LocalBars::start(&coordinator, &campaign_ids, opts.seconds);
    wait_until_finished(&coordinator, &campaign_ids, deadline, Some(&interrupted)).await?;
    bars.finish().await;
    let signal = interrupted.signal();
    // Workers hand back (or deliver) what they hold before the result is read.
    let _ = stop_workers.send(true);
    for worker in workers {
        let _ = worker.await;
    }
    let statuses =
        wait_until_finished(&coordinator, &campaign_ids, Some(Instant::now()), None).await?;
    if let Some(path) = &opts.out {
        write_exports(&coordinator, &campaign_ids, path).await?;
    }
    let _ = stop_server.send(true);
    let _ = server.await;
    let wall_seconds = started.elapsed().as_secs_f64();
    drop(lock);
    if temporary {
        remove_database(&db_path);
    }
    if opts.json {
        let summary = match statuses.as_slice() {
            [single] => render::run_summary(single, wall_seconds),
            many => serde_json::json!({
                "campaigns": many.iter().map(|s| render::run_summary(s, wall_seconds))
                    .collect::<Vec<_>>(),
                "wall_seconds": wall_seconds,
            }),
        };
        println!("{summary}");
    } else {
        for status in &statuses {
            print!("{}", render::run_human(status, wall_seconds));
        }
    }
    if let Some(signal) = signal {
        let all_done = statuses.iter().all(|s| s.state == "done");
        let hint = if all_done {
            "every campaign had finished".to_string()
        } else if temporary {
            "the partial result above was not kept: run with --db FILE to be able to resume"
                .to_string()
        } else {
            format!(
                "progress is kept in {}: run the same command again to resume",
                db_path.display()
            )
        };
        return Err(CliError::Interrupted { signal, hint });
    }
    let timed_out = opts.seconds.is_some();
    match statuses
        .iter()
        .find(|s| s.state != "done" && !(timed_out && s.state == "running"))
    {
        None => Ok(()),
        Some(bad) => Err(CliError::Other(anyhow::anyhow!(
            "campaign {} ended {}",
            bad.campaign_id,
            bad.state
        ))),
    }
}

/// Removes a temporary database and the files SQLite, the lock and the bundle store keep
/// beside it.
fn remove_database(db_path: &std::path::Path) {
    for suffix in ["", "-wal", "-shm", "-journal", ".lock"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db_path.display()));
    }
    let _ = std::fs::remove_dir_all(BundleStore::beside(db_path));
}

/// SIGINT (Ctrl-C) and SIGTERM during `grind run`: the first asks the run to stop cleanly
/// (workers hand back their units, the result so far is printed); a second one ends the
/// process at once (removing a temporary database first).
struct Interrupt {
    received: watch::Receiver<Option<i32>>,
}

impl Interrupt {
    /// Starts listening; `temporary` is the database to remove if a second signal comes.
    fn listen(temporary: Option<PathBuf>) -> Result<Interrupt, CliError> {
        use tokio::signal::unix::{signal, SignalKind};
        let mut int = signal(SignalKind::interrupt()).context("cannot handle SIGINT")?;
        let mut term = signal(SignalKind::terminate()).context("cannot handle SIGTERM")?;
        let (tx, received) = watch::channel(None);
        tokio::spawn(async move {
            let first = tokio::select! {
                _ = int.recv() => libc_signal::SIGINT,
                _ = term.recv() => libc_signal::SIGTERM,
            };
            eprintln!(
                "grind: stopping (workers hand back their units; press Ctrl-C again to quit \
                 at once)"
            );
            let _ = tx.send(Some(first));
            let second = tokio::select! {
                _ = int.recv() => libc_signal::SIGINT,
                _ = term.recv() => libc_signal::SIGTERM,
            };
            if let Some(path) = &temporary {
                remove_database(path);
            }
            std::process::exit(128 + second);
        });
        Ok(Interrupt { received })
    }

    /// The signal received, if any.
    fn signal(&self) -> Option<i32> {
        *self.received.borrow()
    }
}

/// Signal numbers (Linux), for exit codes 128 + N.
mod libc_signal {
    pub const SIGINT: i32 = 2;
    pub const SIGTERM: i32 = 15;
}

/// Writes the export of every campaign to `path` (one after the other) and their provenance
/// records to `path.provenance.json` (one record, or a JSON array for several).
async fn write_exports(
    coordinator: &Coordinator,
    campaign_ids: &[i64],
    path: &std::path::Path,
) -> Result<(), CliError> {
    let mut submission = String::new();
    let mut provenance = Vec::new();
    for &id in campaign_ids {
        let export = coordinator.export(id).await.map_err(anyhow::Error::from)?;
        submission += &export.submission;
        provenance.push(export.provenance_json);
    }
    std::fs::write(path, submission).with_context(|| format!("cannot write {}", path.display()))?;
    let record = match provenance.as_slice() {
        [single] => single.clone(),
        many => format!("[{}]", many.join(",")),
    };
    let provenance_path = format!("{}.provenance.json", path.display());
    std::fs::write(&provenance_path, record)
        .with_context(|| format!("cannot write {provenance_path}"))?;
    Ok(())
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

/// The shortest time between two status reads while `grind run` waits.
const STATUS_READ_GAP: std::time::Duration = std::time::Duration::from_millis(50);

/// Waits until every campaign has ended, until `deadline`, or until `interrupt` hears a
/// signal; returns their statuses.
async fn wait_until_finished(
    coordinator: &Coordinator,
    campaign_ids: &[i64],
    deadline: Option<Instant>,
    interrupt: Option<&Interrupt>,
) -> Result<Vec<pb::CampaignStatus>, CliError> {
    let mut changes = coordinator.subscribe();
    let mut signals = interrupt.map(|i| i.received.clone());
    loop {
        let mut statuses = Vec::with_capacity(campaign_ids.len());
        for &id in campaign_ids {
            statuses.push(
                coordinator
                    .campaign(id)
                    .await
                    .map_err(anyhow::Error::from)?,
            );
        }
        let ended =
            |s: &pb::CampaignStatus| matches!(s.state.as_str(), "done" | "failed" | "cancelled");
        let out_of_time = deadline.is_some_and(|d| Instant::now() >= d);
        let stopped = signals.as_ref().is_some_and(|s| s.borrow().is_some());
        if out_of_time || stopped || statuses.iter().all(ended) {
            return Ok(statuses);
        }
        // Wake on any change, on a signal, at the deadline, and at least every second; but
        // read the statuses at most every STATUS_READ_GAP: a status read counts every unit,
        // and a campaign of tiny units changes thousands of times a second.
        tokio::time::sleep(STATUS_READ_GAP).await;
        let mut wait = std::time::Duration::from_secs(1);
        if let Some(d) = deadline {
            wait = wait.min(d.saturating_duration_since(Instant::now()));
        }
        let signal = async {
            match signals.as_mut() {
                Some(s) => {
                    let _ = s.changed().await;
                }
                None => std::future::pending().await,
            }
        };
        let _ = tokio::time::timeout(wait, async {
            tokio::select! {
                _ = changes.changed() => {}
                _ = signal => {}
            }
        })
        .await;
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
    let listener = TcpListener::bind(&args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let local = listener.local_addr().context("local address")?;
    let loopback = local.ip().is_loopback();
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => {
            Some(ServerIdentity::load(cert, key).map_err(|e| CliError::Usage(e.to_string()))?)
        }
        _ => None,
    };
    if !loopback && tls.is_none() && !args.allow_plaintext {
        return Err(CliError::Usage(format!(
            "{local} is not a loopback address: serve TLS (--tls-cert/--tls-key, see `grind cert \
             self-signed`) or pass --allow-plaintext to send tokens in clear"
        )));
    }
    let _lock = DbLock::acquire(&args.db).map_err(anyhow::Error::from)?;
    let store = Store::open(&args.db)
        .with_context(|| format!("cannot open the database {}", args.db.display()))?;
    let auth = if args.require_auth || !loopback {
        let auth = Authenticator::reading(args.db.clone());
        Some(std::sync::Arc::new(auth))
    } else {
        None
    };
    let config = Config {
        lease_ttl_ms: args.lease_ttl_ms,
        heartbeat_interval_ms: args.heartbeat_ms,
        verify_rate: args.verify_rate,
        max_attempts: args.max_attempts,
        sweep_interval_ms: (args.lease_ttl_ms / 10).clamp(10, 1000) as u64,
        worker_calls_per_second: args.worker_calls_per_second,
        registrations_per_second: args.registrations_per_second,
        max_leases_per_worker: args.max_leases_per_worker,
        target_lease_ms: args.target_lease_ms,
        self_check_after_ms: args.self_check_after_ms,
        ..Config::default()
    };
    // The line tools and tests wait for: the address actually bound (port 0 resolves here).
    println!("grind coordinator listening on {local}");
    tracing::info!(
        "serving {} on {local} ({}, {})",
        args.db.display(),
        if tls.is_some() { "TLS" } else { "plain text" },
        if auth.is_some() {
            "tokens required"
        } else {
            "no authentication"
        }
    );
    if args.max_bundle_mib == 0 {
        return Err(CliError::Usage(
            "--max-bundle-mib must be at least 1".into(),
        ));
    }
    let bundles = BundleStore::open(
        BundleStore::beside(&args.db),
        store.clone(),
        args.max_bundle_mib.saturating_mul(1 << 20),
    )
    .map_err(anyhow::Error::from)?;
    // The coordinator runs users' checkers: their bundles come from its own store.
    StoreBundles::install(bundles.clone());
    let coordinator = Coordinator::new(store, Arc::new(SystemClock), config);
    let options = ServeOptions {
        auth,
        tls,
        bundles: Some(bundles),
    };
    crate::server::serve_with(coordinator, listener, shutdown_signal(), options)
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
