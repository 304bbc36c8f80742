//! `grind contest`: a contest entry is a family of campaigns created together (one per
//! instance of the contest); these commands create it, show it scored against a reference
//! table, export it as one submission file and import a previous submission into it.

use anyhow::Context;
use grind_proto::v1 as pb;
use grind_shared::contests::{self, Contest};
use grind_shared::registry;
use serde_json::{json, Value};
use std::path::PathBuf;

use super::admin::{connect, failed, print_json, AddOptions, CoordinatorUrl};
use super::{problem_args, CliError};

/// `grind contest ...`
#[derive(clap::Subcommand, Debug)]
pub enum ContestCommand {
    /// List the contests this build can enter.
    List,
    /// Create a contest entry: one campaign per instance. Extra problem flags may follow.
    #[command(disable_help_flag = true)]
    Add {
        #[command(flatten)]
        url: CoordinatorUrl,
        /// The contest (see `grind contest list`).
        contest: String,
        /// More problem flags for every member (e.g. heuristic settings).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Show the entry: every instance's best value, scored against a reference table.
    Show {
        #[command(flatten)]
        url: CoordinatorUrl,
        /// The contest.
        contest: String,
        /// Best-known values, one `KEY VALUE` a line (KEY: the contest's key, e.g. n).
        #[arg(long)]
        reference: Option<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Write the submission file (one entry a line, in the contest's order) and its
    /// provenance (FILE.provenance.json).
    Export {
        #[command(flatten)]
        url: CoordinatorUrl,
        /// The contest.
        contest: String,
        /// The submission file to write.
        #[arg(long)]
        out: PathBuf,
    },
    /// Seed the entry's campaigns with a previous submission (each line goes to the
    /// campaign whose instance it solves; every one is verified by the coordinator).
    Import {
        #[command(flatten)]
        url: CoordinatorUrl,
        /// The contest.
        contest: String,
        /// The submission file.
        file: PathBuf,
        /// Where it came from (recorded in the provenance log).
        #[arg(long, default_value = "previous submission")]
        source: String,
    },
}

fn find(name: &str) -> Result<&'static Contest, CliError> {
    contests::lookup(name).ok_or_else(|| {
        let known: Vec<_> = contests::contests().iter().map(|c| c.name).collect();
        CliError::Usage(format!(
            "unknown contest {name:?} (known: {})",
            known.join(", ")
        ))
    })
}

/// The campaigns of a contest entry, oldest first (the contest's order).
async fn members(url: &CoordinatorUrl, name: &str) -> Result<Vec<pb::CampaignStatus>, CliError> {
    let mut campaigns = connect(url)
        .await?
        .list_campaigns(pb::ListCampaignsRequest {})
        .await
        .map_err(failed)?
        .into_inner()
        .campaigns;
    campaigns.retain(|c| c.family == name && c.state != "cancelled");
    campaigns.sort_by_key(|c| c.campaign_id);
    if campaigns.is_empty() {
        return Err(CliError::Usage(format!(
            "no entry for contest {name:?} on this coordinator (create it with `grind contest add {name}`)"
        )));
    }
    Ok(campaigns)
}

/// The member's key (e.g. its n) as text.
fn key_of(contest: &Contest, campaign: &pb::CampaignStatus) -> String {
    let params: Value = serde_json::from_str(&campaign.params_json).unwrap_or(Value::Null);
    match &params[contest.key] {
        Value::String(s) => s.clone(),
        Value::Null => campaign.campaign_id.to_string(),
        other => other.to_string(),
    }
}

/// Runs a `grind contest` command.
pub async fn contest(cmd: ContestCommand) -> Result<(), CliError> {
    match cmd {
        ContestCommand::List => {
            for c in contests::contests() {
                println!("{:<18} {}", c.name, c.about);
            }
            Ok(())
        }
        ContestCommand::Add { url, contest, args } => add(url, find(&contest)?, args).await,
        ContestCommand::Show {
            url,
            contest,
            reference,
            json,
        } => show(url, find(&contest)?, reference, json).await,
        ContestCommand::Export { url, contest, out } => export(url, find(&contest)?, out).await,
        ContestCommand::Import {
            url,
            contest,
            file,
            source,
        } => import(url, find(&contest)?, file, source).await,
    }
}

async fn add(url: CoordinatorUrl, contest: &Contest, extra: Vec<String>) -> Result<(), CliError> {
    let mut args: Vec<String> = contest.args.iter().map(|a| a.to_string()).collect();
    args.extend(extra);
    let parsed = problem_args::parse::<AddOptions>(
        &format!("grind contest add {}", contest.name),
        contest.problem,
        &args,
    )?;
    let reply = connect(&url)
        .await?
        .create_campaign(pb::CreateCampaignRequest {
            problem: contest.problem.to_string(),
            params_json: parsed.params.to_string(),
            name: contest.name.to_string(),
            verify_rate: parsed.options.verify_rate.unwrap_or(-1.0),
            max_attempts: parsed.options.max_attempts.unwrap_or(0),
            target_lease_ms: super::admin::wire_target_lease_ms(parsed.options.target_lease_ms),
            family: contest.name.to_string(),
        })
        .await
        .map_err(failed)?
        .into_inner();
    for id in &reply.campaign_ids {
        println!("{id}");
    }
    Ok(())
}

async fn show(
    url: CoordinatorUrl,
    contest: &Contest,
    reference: Option<PathBuf>,
    json: bool,
) -> Result<(), CliError> {
    let table = match &reference {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            contests::parse_reference(&text)
                .map_err(|e| CliError::Usage(format!("{}: {e}", path.display())))?
        }
        None => Vec::new(),
    };
    let campaigns = members(&url, contest.name).await?;
    let mut rows = Vec::new();
    let mut total = 0.0;
    for c in &campaigns {
        let key = key_of(contest, c);
        let best_known = table.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
        let value: Option<f64> = c.value.parse().ok();
        let score = match (value, best_known) {
            (Some(v), Some(r)) if v > 0.0 => {
                Some(contests::relative_score(v, r, c.objective == "min"))
            }
            _ => None,
        };
        total += score.unwrap_or(0.0);
        rows.push(json!({
            contest.key: key,
            "campaign": c.campaign_id,
            "state": c.state,
            "value": value,
            "proven": c.proven,
            "outcome": c.outcome,
            "reference": best_known,
            "score": score,
        }));
    }
    if json {
        print_json(&json!({"contest": contest.name, "entries": rows, "score": total}));
    } else {
        println!(
            "{:>6} {:>8} {:<8} {:>14} {:>14} {:>8}",
            contest.key, "campaign", "state", "value", "reference", "score"
        );
        for row in &rows {
            let num = |v: &Value| v.as_f64().map_or("-".to_string(), |x| format!("{x}"));
            println!(
                "{:>6} {:>8} {:<8} {:>14} {:>14} {:>8}{}",
                row[contest.key].as_str().unwrap_or("?"),
                row["campaign"],
                row["state"].as_str().unwrap_or(""),
                num(&row["value"]),
                num(&row["reference"]),
                row["score"]
                    .as_f64()
                    .map_or("-".to_string(), |s| format!("{s:.4}")),
                match row["outcome"].as_str().map(crate::views::outcome_words) {
                    Some(words) if !words.is_empty() => format!("  ({words})"),
                    _ => String::new(),
                }
            );
        }
        println!("total score {total:.4} over {} entries", rows.len());
    }
    Ok(())
}

async fn export(url: CoordinatorUrl, contest: &Contest, out: PathBuf) -> Result<(), CliError> {
    let campaigns = members(&url, contest.name).await?;
    let mut client = connect(&url).await?;
    let mut submission = String::new();
    let mut provenance = Vec::new();
    let mut missing = Vec::new();
    for c in &campaigns {
        if c.solution_json.is_empty() {
            missing.push(key_of(contest, c));
            continue;
        }
        let reply = client
            .export(pb::CampaignRef {
                campaign_id: c.campaign_id,
            })
            .await
            .map_err(failed)?
            .into_inner();
        submission += reply.submission.trim_end();
        submission.push('\n');
        provenance
            .push(serde_json::from_str::<Value>(&reply.provenance_json).unwrap_or(Value::Null));
    }
    std::fs::write(&out, submission).with_context(|| format!("cannot write {}", out.display()))?;
    let record = json!({"contest": contest.name, "entries": provenance, "missing": missing});
    let path = format!("{}.provenance.json", out.display());
    std::fs::write(
        &path,
        serde_json::to_string_pretty(&record).unwrap_or_default(),
    )
    .with_context(|| format!("cannot write {path}"))?;
    eprintln!(
        "wrote {} entries to {}{}",
        campaigns.len() - missing.len(),
        out.display(),
        if missing.is_empty() {
            String::new()
        } else {
            format!(
                " (no solution yet for {} = {})",
                contest.key,
                missing.join(", ")
            )
        }
    );
    Ok(())
}

async fn import(
    url: CoordinatorUrl,
    contest: &Contest,
    file: PathBuf,
    source: String,
) -> Result<(), CliError> {
    let text = std::fs::read_to_string(&file)
        .with_context(|| format!("cannot read {}", file.display()))?;
    let campaigns = members(&url, contest.name).await?;
    let entry = registry::lookup(contest.problem).map_err(|e| CliError::Usage(e.to_string()))?;
    let mut instances = Vec::new();
    for c in &campaigns {
        let params: Value = serde_json::from_str(&c.params_json)
            .with_context(|| format!("campaign {} has unreadable parameters", c.campaign_id))?;
        let (_, problem) = entry
            .build(&params)
            .map_err(|e| CliError::Other(anyhow::anyhow!("campaign {}: {e}", c.campaign_id)))?;
        instances.push((c, problem));
    }
    let mut client = connect(&url).await?;
    let (mut taken, mut refused) = (0, 0);
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        // The campaign whose instance this line solves (checked locally first; the
        // coordinator verifies again).
        let target = instances.iter().find_map(|(c, problem)| {
            let solution = problem.parse_submission(line).ok()?;
            problem
                .score(&solution)
                .ok()
                .map(|score| (c, solution, score))
        });
        let Some((c, solution, score)) = target else {
            eprintln!(
                "line {}: not a valid entry for any instance; skipped",
                index + 1
            );
            refused += 1;
            continue;
        };
        let reply = client
            .import(pb::ImportRequest {
                campaign_id: c.campaign_id,
                solution_json: solution.to_string(),
                source: format!("{source} ({} line {})", file.display(), index + 1),
            })
            .await
            .map_err(failed)?
            .into_inner();
        let key = key_of(contest, c);
        if reply.accepted {
            taken += 1;
            println!("{} = {key}: {score} imported", contest.key);
        } else {
            println!(
                "{} = {key}: {score} not imported ({})",
                contest.key, reply.reason
            );
        }
    }
    eprintln!("{taken} imported, {refused} skipped");
    Ok(())
}
