//! The admin client commands: campaigns, status, export, import, leaderboard.

use anyhow::Context;
use grind_proto::v1 as pb;
use grind_proto::v1::admin_client::AdminClient;
use grind_worker::connect::{authenticated, endpoint, Access, AuthChannel};
use std::path::PathBuf;
use tonic::transport::Endpoint;

use super::attachments::{self, Destination};
use super::problem_args;
use super::render;
use super::CliError;

/// Where the coordinator is, and how to prove who we are.
#[derive(clap::Args, Debug, Clone)]
pub struct CoordinatorUrl {
    /// Coordinator URL, e.g. http://127.0.0.1:7878 (https://... for TLS).
    #[arg(
        long,
        env = "GRIND_COORDINATOR",
        default_value = "http://127.0.0.1:7878"
    )]
    pub coordinator: String,
    /// The admin token, given directly.
    #[arg(long, env = "GRIND_ADMIN_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// File holding the admin token.
    #[arg(long, env = "GRIND_ADMIN_TOKEN_FILE")]
    pub token_file: Option<PathBuf>,
    /// CA certificate (PEM) the coordinator's certificate must chain to.
    #[arg(long, env = "GRIND_CA_FILE")]
    pub ca_file: Option<PathBuf>,
}

/// `grind campaign ...`
#[derive(clap::Subcommand, Debug)]
pub enum CampaignCommand {
    /// Create a campaign: `grind campaign add --coordinator URL <PROBLEM> [flags]`.
    /// Prints the new campaign's id as the last line.
    #[command(disable_help_flag = true)]
    Add {
        #[command(flatten)]
        url: CoordinatorUrl,
        /// The problem (see `grind problems`).
        #[arg(allow_hyphen_values = true)]
        problem: String,
        /// The problem's flags, and `--name`, `--verify-rate`, `--max-attempts`.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// List campaigns.
    List {
        #[command(flatten)]
        url: CoordinatorUrl,
        /// Print JSON: one campaign per line.
        #[arg(long)]
        json: bool,
    },
    /// Show one campaign.
    Show {
        #[command(flatten)]
        url: CoordinatorUrl,
        /// Campaign id.
        campaign: i64,
        /// Print JSON (one line).
        #[arg(long)]
        json: bool,
    },
    /// Stop handing out a campaign's units.
    Pause {
        #[command(flatten)]
        url: CoordinatorUrl,
        /// Campaign id.
        campaign: i64,
    },
    /// Continue a paused campaign (or retry a failed one's failed units).
    Resume {
        #[command(flatten)]
        url: CoordinatorUrl,
        /// Campaign id.
        campaign: i64,
    },
    /// End a campaign for good.
    Cancel {
        #[command(flatten)]
        url: CoordinatorUrl,
        /// Campaign id.
        campaign: i64,
    },
}

/// Flags of `grind campaign add` beside the problem's own.
#[derive(clap::Args, Debug)]
pub struct AddOptions {
    /// Display name of the campaign.
    #[arg(long, default_value = "")]
    pub name: String,
    /// Fraction of count and search units re-run on a second worker (default: the server's).
    #[arg(long)]
    pub verify_rate: Option<f64>,
    /// Failed attempts before a unit is marked failed (default: the server's).
    #[arg(long)]
    pub max_attempts: Option<u32>,
    /// The lease duration grants aim at, in ms: tiny units are granted several per slot to
    /// fill it and created coarser where the problem can join them (default: the server's;
    /// 0: off, units granted one per slot as the splitter made them).
    #[arg(long)]
    pub target_lease_ms: Option<i64>,
}

/// `grind status` flags.
#[derive(clap::Args, Debug)]
pub struct StatusArgs {
    #[command(flatten)]
    url: CoordinatorUrl,
    /// One campaign (default: the whole cluster).
    campaign: Option<i64>,
    /// Print JSON on one line (one campaign: with every unit result and its provenance).
    #[arg(long)]
    json: bool,
}

/// `grind export` flags.
#[derive(clap::Args, Debug)]
pub struct ExportArgs {
    #[command(flatten)]
    url: CoordinatorUrl,
    /// Campaign id.
    campaign: i64,
    /// Write the submission here (and the provenance to FILE.provenance.json) instead of
    /// printing the submission.
    #[arg(long)]
    out: Option<PathBuf>,
}

/// `grind import` flags.
#[derive(clap::Args, Debug)]
pub struct ImportArgs {
    #[command(flatten)]
    url: CoordinatorUrl,
    /// Campaign id.
    campaign: i64,
    /// File holding the solution as JSON.
    file: PathBuf,
    /// Where the solution came from (recorded in the provenance log).
    #[arg(long, default_value = "")]
    source: String,
}

/// `grind leaderboard` flags.
#[derive(clap::Args, Debug)]
pub struct LeaderboardArgs {
    #[command(flatten)]
    url: CoordinatorUrl,
    /// Print JSON: one entry per line.
    #[arg(long)]
    json: bool,
}

/// An admin client for `url`, with its token and TLS settings.
pub async fn connect(url: &CoordinatorUrl) -> Result<AdminClient<AuthChannel>, CliError> {
    let client = AdminClient::new(channel(url, |endpoint| endpoint).await?);
    Ok(client
        .max_decoding_message_size(256 << 20)
        .max_encoding_message_size(256 << 20))
}

/// An authenticated channel to the coordinator at `url` (its token and CA as the flags and
/// environment give them), its endpoint adjusted by `tune` (timeouts, windows) before
/// connecting.
pub async fn channel(
    url: &CoordinatorUrl,
    tune: impl FnOnce(Endpoint) -> Endpoint,
) -> Result<AuthChannel, CliError> {
    let access = Access::from_sources(
        url.token.clone(),
        url.token_file.as_deref(),
        url.ca_file.as_deref(),
    )
    .map_err(|e| CliError::Usage(e.to_string()))?;
    let endpoint =
        endpoint(&url.coordinator, &access).map_err(|e| CliError::Usage(e.to_string()))?;
    let channel = tune(endpoint)
        .connect()
        .await
        .with_context(|| format!("cannot reach the coordinator at {}", url.coordinator))?;
    authenticated(channel, &access).map_err(|e| CliError::Usage(e.to_string()))
}

/// A refused call as a command-line error (usage errors exit 2).
pub fn failed(status: tonic::Status) -> CliError {
    let message = format!("{}: {}", status.code(), status.message());
    match status.code() {
        tonic::Code::InvalidArgument | tonic::Code::NotFound | tonic::Code::FailedPrecondition => {
            CliError::Usage(message)
        }
        _ => CliError::Other(anyhow::anyhow!(message)),
    }
}

/// Prints one JSON value on one line. Every `--json` follows this convention: one value per
/// line, compact, so output pipes into line-oriented tools (`jq -c`, `grep`, `while read`).
pub fn print_json(value: &serde_json::Value) {
    println!("{value}");
}

/// Prints a list as JSON Lines: one compact object per line (nothing for an empty list).
pub fn print_json_lines(values: impl IntoIterator<Item = serde_json::Value>) {
    for value in values {
        print_json(&value);
    }
}

/// Runs a `grind campaign` command.
pub async fn campaign(cmd: CampaignCommand) -> Result<(), CliError> {
    match cmd {
        CampaignCommand::Add { url, problem, args } => {
            let mut raw =
                problem_args::parse_raw::<AddOptions>("grind campaign add", &problem, &args)?;
            if !raw.entry.attachments.is_empty() {
                let mut bundles = Destination::Remote(attachments::connect(&url).await?);
                let attached =
                    attachments::attach(raw.entry.attachments, &mut raw.raw, &mut bundles).await?;
                attachments::report(&attached);
            }
            let parsed = raw.build()?;
            let mut client = connect(&url).await?;
            let reply = client
                .create_campaign(pb::CreateCampaignRequest {
                    problem: parsed.entry.name.to_string(),
                    params_json: parsed.params.to_string(),
                    name: parsed.options.name,
                    verify_rate: parsed.options.verify_rate.unwrap_or(-1.0),
                    max_attempts: parsed.options.max_attempts.unwrap_or(0),
                    family: String::new(),
                    target_lease_ms: wire_target_lease_ms(parsed.options.target_lease_ms),
                })
                .await
                .map_err(failed)?
                .into_inner();
            for id in &reply.campaign_ids {
                println!("{id}");
            }
        }
        CampaignCommand::List { url, json } => {
            let reply = connect(&url)
                .await?
                .list_campaigns(pb::ListCampaignsRequest {})
                .await
                .map_err(failed)?
                .into_inner();
            if json {
                print_json_lines(reply.campaigns.iter().map(render::campaign));
            } else {
                for c in &reply.campaigns {
                    println!("{}", render::campaign_row(c));
                }
            }
        }
        CampaignCommand::Show {
            url,
            campaign,
            json,
        } => {
            let c = connect(&url)
                .await?
                .show_campaign(pb::CampaignRef {
                    campaign_id: campaign,
                })
                .await
                .map_err(failed)?
                .into_inner();
            if json {
                print_json(&render::campaign(&c));
            } else {
                print!("{}", render::campaign_text(&c));
            }
        }
        CampaignCommand::Pause { url, campaign } => {
            let c = connect(&url)
                .await?
                .pause_campaign(pb::CampaignRef {
                    campaign_id: campaign,
                })
                .await
                .map_err(failed)?
                .into_inner();
            println!("{}", render::campaign_row(&c));
        }
        CampaignCommand::Resume { url, campaign } => {
            let c = connect(&url)
                .await?
                .resume_campaign(pb::CampaignRef {
                    campaign_id: campaign,
                })
                .await
                .map_err(failed)?
                .into_inner();
            println!("{}", render::campaign_row(&c));
        }
        CampaignCommand::Cancel { url, campaign } => {
            let c = connect(&url)
                .await?
                .cancel_campaign(pb::CampaignRef {
                    campaign_id: campaign,
                })
                .await
                .map_err(failed)?
                .into_inner();
            println!("{}", render::campaign_row(&c));
        }
    }
    Ok(())
}

/// Runs `grind status`.
pub async fn status(args: StatusArgs) -> Result<(), CliError> {
    let reply = connect(&args.url)
        .await?
        .status(pb::StatusRequest {
            campaign_id: args.campaign.unwrap_or(0),
            with_results: args.campaign.is_some() && args.json,
        })
        .await
        .map_err(failed)?
        .into_inner();
    if args.json {
        let value = match (args.campaign, reply.campaigns.first()) {
            (Some(_), Some(c)) => {
                let mut value = render::campaign(c);
                value["results"] = reply.results.iter().map(render::result).collect();
                value["workers_registered"] = reply.workers.iter().map(render::worker).collect();
                value
            }
            _ => serde_json::json!({
                "coordinator_version": reply.coordinator_version,
                "campaigns": reply.campaigns.iter().map(render::campaign).collect::<Vec<_>>(),
                "workers": reply.workers.iter().map(render::worker).collect::<Vec<_>>(),
            }),
        };
        print_json(&value);
    } else {
        for c in &reply.campaigns {
            println!("{}", render::campaign_row(c));
        }
        println!("{} worker(s) registered", reply.workers.len());
        for w in &reply.workers {
            println!(
                "  worker {:>4} {:<24} {:<16} {:>3} cores  {} active lease(s)  {} unit(s) done",
                w.worker_id, w.name, w.host, w.cores, w.active_leases, w.units_done
            );
        }
    }
    Ok(())
}

/// Runs `grind export`.
pub async fn export(args: ExportArgs) -> Result<(), CliError> {
    let reply = connect(&args.url)
        .await?
        .export(pb::CampaignRef {
            campaign_id: args.campaign,
        })
        .await
        .map_err(failed)?
        .into_inner();
    match args.out {
        Some(path) => {
            std::fs::write(&path, &reply.submission)
                .with_context(|| format!("cannot write {}", path.display()))?;
            let provenance = PathBuf::from(format!("{}.provenance.json", path.display()));
            std::fs::write(&provenance, &reply.provenance_json)
                .with_context(|| format!("cannot write {}", provenance.display()))?;
            eprintln!("wrote {} and {}", path.display(), provenance.display());
        }
        None => print!("{}", reply.submission),
    }
    Ok(())
}

/// Runs `grind import`.
pub async fn import(args: ImportArgs) -> Result<(), CliError> {
    let solution = std::fs::read_to_string(&args.file)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    let reply = connect(&args.url)
        .await?
        .import(pb::ImportRequest {
            campaign_id: args.campaign,
            solution_json: solution.trim().to_string(),
            source: args.source,
        })
        .await
        .map_err(failed)?
        .into_inner();
    if reply.accepted {
        println!("imported: score {}", reply.verified_score);
    } else {
        println!(
            "valid (score {}) but {}",
            reply.verified_score, reply.reason
        );
    }
    Ok(())
}

/// Runs `grind leaderboard`.
pub async fn leaderboard(args: LeaderboardArgs) -> Result<(), CliError> {
    let reply = connect(&args.url)
        .await?
        .leaderboard(pb::LeaderboardRequest {})
        .await
        .map_err(failed)?
        .into_inner();
    if args.json {
        print_json_lines(reply.entries.iter().map(|e| {
            serde_json::json!({
                "campaign": e.campaign_id, "problem": e.problem,
                "params": serde_json::from_str::<serde_json::Value>(&e.params_json).unwrap_or_default(),
                "value": e.value, "proven": e.proven,
                "provenance": e.provenance.as_ref().map(render::provenance),
            })
        }));
    } else {
        for e in &reply.entries {
            let by = e
                .provenance
                .as_ref()
                .map(|p| format!("  by {} on {}", p.worker_name, p.host))
                .unwrap_or_default();
            println!(
                "{:>5}  {:<10} {:>22}{}  {}{}",
                e.campaign_id,
                e.problem,
                e.value,
                if e.proven { "*" } else { " " },
                render::params_text(&e.problem, &e.params_json),
                by
            );
        }
    }
    Ok(())
}

/// `grind worker ...`
#[derive(clap::Subcommand, Debug)]
pub enum WorkerCommand {
    /// List registered workers.
    List {
        #[command(flatten)]
        url: CoordinatorUrl,
        /// Print JSON: one worker per line.
        #[arg(long)]
        json: bool,
    },
    /// Ban a worker: its further calls and results are refused, its leases taken back.
    Ban {
        #[command(flatten)]
        url: CoordinatorUrl,
        /// Worker id (see `grind worker list`).
        worker: i64,
        /// Why (recorded in the event log).
        #[arg(long, default_value = "")]
        reason: String,
    },
}

/// Runs a `grind worker` command.
pub async fn worker(cmd: WorkerCommand) -> Result<(), CliError> {
    match cmd {
        WorkerCommand::List { url, json } => {
            let reply = connect(&url)
                .await?
                .status(pb::StatusRequest::default())
                .await
                .map_err(failed)?
                .into_inner();
            if json {
                print_json_lines(reply.workers.iter().map(render::worker));
            } else {
                for w in &reply.workers {
                    println!(
                        "{:>5}  {:<24} {:<20} {:>3} cores  {:>4} leases  {:>6} units{}",
                        w.worker_id,
                        w.name,
                        w.host,
                        w.cores,
                        w.active_leases,
                        w.units_done,
                        if w.banned { "  BANNED" } else { "" }
                    );
                }
            }
        }
        WorkerCommand::Ban {
            url,
            worker,
            reason,
        } => {
            let reply = connect(&url)
                .await?
                .ban_worker(pb::BanWorkerRequest {
                    worker_id: worker,
                    reason,
                })
                .await
                .map_err(failed)?
                .into_inner();
            println!(
                "worker {worker} banned; {} lease(s) taken back",
                reply.leases_taken_back
            );
        }
    }
    Ok(())
}

/// A campaign's `--target-lease-ms` as the wire carries it: 0 asks for the server's default,
/// so the flag's 0 (pacing off) travels as -1.
pub(crate) fn wire_target_lease_ms(flag: Option<i64>) -> i64 {
    match flag {
        None => 0,
        Some(0) => -1,
        Some(ms) => ms,
    }
}
