//! The `grind` command line: `run` (all-in-one), `serve`, and the admin client commands.
//! Problem flags are not declared here: each problem's own flags come from the registry.

pub mod admin;
pub mod attachments;
pub mod bundle;
pub mod contest;
pub mod db_lock;
pub mod problem_args;
pub mod proof;
pub mod render;
pub mod run;
pub mod security;
pub mod watch;
pub mod workers;

use clap::{Parser, Subcommand};
use std::path::PathBuf;

/// grind: a distributed contest-grinding cluster.
#[derive(Parser, Debug)]
#[command(name = "grind", version, about, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The `grind` subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run one problem on this machine (embedded coordinator + local workers) and print the
    /// verified result. Problem flags follow the problem name: `grind run nimsquare --n 29`.
    #[command(disable_help_flag = true)]
    Run(run::RunArgs),
    /// Serve a coordinator for workers on other machines.
    Serve(ServeArgs),
    /// Manage campaigns on a coordinator.
    #[command(subcommand)]
    Campaign(admin::CampaignCommand),
    /// Show campaign and cluster status.
    Status(admin::StatusArgs),
    /// Export a campaign's result (submission format) and its provenance.
    Export(admin::ExportArgs),
    /// Import a known solution as a campaign's starting incumbent.
    Import(admin::ImportArgs),
    /// Show the best result of every campaign.
    Leaderboard(admin::LeaderboardArgs),
    /// List the problems this build can run.
    Problems,
    /// Live progress bars of a coordinator's campaigns (all, or one until it ends).
    Watch(watch::WatchArgs),
    /// Enter contests: a family of campaigns scored and submitted together.
    #[command(subcommand)]
    Contest(contest::ContestCommand),
    /// List or ban workers.
    #[command(subcommand)]
    Worker(admin::WorkerCommand),
    /// Put workers on machines over SSH from a host list, stop them, or report them.
    #[command(subcommand)]
    Workers(workers::WorkersCommand),
    /// Import proof records from other grind databases (offline, against the database).
    #[command(subcommand)]
    Proof(proof::ProofCommand),
    /// Create, list or revoke access tokens (offline, against the database).
    #[command(subcommand)]
    Token(security::TokenCommand),
    /// Make TLS certificates for quick starts.
    #[command(subcommand)]
    Cert(security::CertCommand),
    /// Take a consistent snapshot of a coordinator's database (safe while it runs).
    Backup(security::BackupArgs),
    /// Upload or list content-addressed bundles (solvers, checkers, instances).
    #[command(subcommand)]
    Bundle(bundle::BundleCommand),
}

/// `grind serve` flags.
#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:7878")]
    pub listen: String,
    /// SQLite database holding all campaign state (created if missing).
    #[arg(long, default_value = "grind.db")]
    pub db: PathBuf,
    /// How long a lease lives without a heartbeat, in milliseconds.
    #[arg(long, default_value_t = 60_000)]
    pub lease_ttl_ms: i64,
    /// How often workers heartbeat, in milliseconds.
    #[arg(long, default_value_t = 2_000)]
    pub heartbeat_ms: i64,
    /// Default fraction of count and search units re-run on a second worker for verification.
    #[arg(long, default_value_t = 0.05)]
    pub verify_rate: f64,
    /// Default failed attempts after which a unit is marked failed.
    #[arg(long, default_value_t = 3)]
    pub max_attempts: u32,
    /// Refuse every grind call without a valid token (always on when --listen is not a
    /// loopback address). Health and reflection stay open.
    #[arg(long)]
    pub require_auth: bool,
    /// TLS certificate chain (PEM); needs --tls-key.
    #[arg(long, requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// TLS private key (PEM); needs --tls-cert.
    #[arg(long, requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Allow plain-text connections on a non-loopback address (tokens then travel in clear).
    #[arg(long)]
    pub allow_plaintext: bool,
    /// Calls a second each worker may make (0: no limit).
    #[arg(long, default_value_t = 200)]
    pub worker_calls_per_second: u32,
    /// Registrations a second accepted from one address.
    #[arg(long, default_value_t = 1000)]
    pub registrations_per_second: u32,
    /// Most active leases one worker may hold.
    #[arg(long, default_value_t = 1024)]
    pub max_leases_per_worker: u32,
    /// The lease duration grants aim at, in ms: a campaign whose units take less is granted
    /// several units per requested slot (`grind campaign add --target-lease-ms` overrides it).
    #[arg(long, default_value_t = 2_000)]
    pub target_lease_ms: i64,
    /// How long a unit waits for a replica run on another worker before the worker that ran
    /// it first may re-check it itself (recorded as self-checked), in ms.
    #[arg(long, default_value_t = 60_000)]
    pub self_check_after_ms: i64,
    /// The largest bundle (a user's solver, checker, instance) accepted, in MiB. Bundles
    /// are kept beside the database, in DB.bundles/.
    #[arg(long, default_value_t = crate::bundles::DEFAULT_MAX_BUNDLE_MIB)]
    pub max_bundle_mib: u64,
}

/// A command-line failure with the exit code it deserves.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Bad flags or values found by grind itself: exit code 2, one line.
    #[error("{0}")]
    Usage(String),
    /// Bad flags found by clap: exit code 2, clap's whole message (its "did you mean" tips
    /// and usage line included).
    #[error("{0}")]
    Clap(String),
    /// A signal stopped the command cleanly: exit code 128 + the signal number (130 for
    /// Ctrl-C), as a shell reports a command the signal killed.
    #[error("interrupted by signal {signal}: {hint}")]
    Interrupted {
        /// The signal number.
        signal: i32,
        /// What became of the work, and how to go on.
        hint: String,
    },
    /// Anything else: exit code 1.
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

impl CliError {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            CliError::Usage(_) | CliError::Clap(_) => 2,
            CliError::Interrupted { signal, .. } => 128 + signal,
            CliError::Other(_) => 1,
        }
    }

    /// The text to print on stderr: `grind: <error>` on one line, or clap's own message.
    pub fn report(&self) -> String {
        match self {
            CliError::Clap(text) => text.trim_end().to_string(),
            CliError::Usage(text) => format!("grind: {text}"),
            CliError::Interrupted { signal, hint } => {
                let name = match signal {
                    2 => "SIGINT".to_string(),
                    15 => "SIGTERM".to_string(),
                    n => format!("signal {n}"),
                };
                format!("grind: interrupted by {name}; {hint}")
            }
            CliError::Other(e) => format!("grind: {e:#}"),
        }
    }
}

/// Turns a clap error into a usage error that keeps clap's whole message; `--help` and
/// `--version` are printed as clap prints them and exit 0.
pub fn clap_error(err: clap::Error) -> CliError {
    use clap::error::ErrorKind;
    if matches!(
        err.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        err.exit();
    }
    CliError::Clap(err.render().to_string())
}

/// Runs a parsed command line.
pub async fn dispatch(cli: Cli) -> Result<(), CliError> {
    match cli.command {
        Command::Run(args) => run::run(args).await,
        Command::Serve(args) => run::serve(args).await,
        Command::Campaign(cmd) => admin::campaign(cmd).await,
        Command::Status(args) => admin::status(args).await,
        Command::Export(args) => admin::export(args).await,
        Command::Import(args) => admin::import(args).await,
        Command::Leaderboard(args) => admin::leaderboard(args).await,
        Command::Watch(args) => watch::watch(args).await,
        Command::Worker(cmd) => admin::worker(cmd).await,
        Command::Workers(cmd) => workers::workers(cmd).await,
        Command::Contest(cmd) => contest::contest(cmd).await,
        Command::Proof(cmd) => proof::proof(cmd).await,
        Command::Token(cmd) => security::token(cmd),
        Command::Cert(cmd) => security::cert(cmd),
        Command::Backup(args) => security::backup(args),
        Command::Bundle(cmd) => bundle::bundle(cmd).await,
        Command::Problems => {
            for entry in grind_shared::registry::registry() {
                println!("{:<12} {}", entry.name, entry.about);
            }
            Ok(())
        }
    }
}
