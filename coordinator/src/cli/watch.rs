//! `grind watch`: live progress bars of a coordinator's campaigns in the terminal, and the
//! same bars for `grind run` when its stdout is a terminal.
//!
//! The bars show what the web UI's `/api/campaigns` returns: progress with its estimate,
//! best value, units, ETA with its interval. `grind watch` reads that JSON over the same
//! channel its gRPC calls use, with the same TLS settings and admin token (the web API
//! shares the coordinator's port, and an HTTP/2 GET travels fine on a gRPC channel);
//! `grind run` computes it in-process.

use anyhow::Context;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::time::Duration;
use tokio::sync::watch;

use super::admin::CoordinatorUrl;
use super::CliError;
use crate::core::Coordinator;
use crate::web::html::fmt_duration;

/// `grind watch` flags.
#[derive(clap::Args, Debug)]
pub struct WatchArgs {
    #[command(flatten)]
    url: CoordinatorUrl,
    /// Watch only this campaign (and exit when it ends).
    campaign: Option<i64>,
    /// Refresh period in milliseconds.
    #[arg(long, default_value_t = 1000)]
    interval_ms: u64,
    /// Print one snapshot as text lines and exit (also what a non-terminal gets each refresh).
    #[arg(long)]
    once: bool,
}

/// Progress bars, one per campaign, kept in campaign order.
pub struct Bars {
    multi: MultiProgress,
    bars: BTreeMap<i64, ProgressBar>,
    /// The time budget of `grind run --seconds`: an anytime search's bar then shows the time
    /// used of it.
    budget_seconds: Option<f64>,
}

/// Bar resolution: progress is shown in thousandths.
const STEPS: u64 = 1000;

/// A running anytime search with no end in sight (see
/// [`crate::web::data::CampaignRow::open_ended_search`]), from its `/api/campaigns` object.
pub fn open_ended_search(c: &Value) -> bool {
    c["anytime"].as_bool() == Some(true)
        && c["estimate"]["open_ended"].as_bool() == Some(true)
        && c["state"].as_str() == Some("running")
}

/// The fraction a bar shows: the estimate's progress; for an open-ended anytime search the
/// share of the time budget used, or nothing (`None`) without a budget.
fn shown_fraction(c: &Value, budget_seconds: Option<f64>) -> Option<f64> {
    if open_ended_search(c) {
        let elapsed = c["elapsed_seconds"].as_f64().unwrap_or(0.0);
        return budget_seconds
            .filter(|b| *b > 0.0)
            .map(|b| (elapsed / b).clamp(0.0, 1.0));
    }
    Some(c["estimate"]["progress"]["value"].as_f64().unwrap_or(0.0))
}

impl Bars {
    /// Bars drawn on stdout (nothing is drawn when stdout is not a terminal).
    pub fn on_stdout(budget_seconds: Option<f64>) -> Bars {
        Bars {
            multi: MultiProgress::with_draw_target(ProgressDrawTarget::stdout()),
            bars: BTreeMap::new(),
            budget_seconds,
        }
    }

    /// Updates the bars from `/api/campaigns` campaign objects.
    pub fn update(&mut self, campaigns: &[Value]) {
        for c in campaigns {
            let Some(id) = c["campaign"].as_i64() else {
                continue;
            };
            let bar = self
                .bars
                .entry(id)
                .or_insert_with(|| self.multi.add(ProgressBar::new(STEPS)));
            let fraction = shown_fraction(c, self.budget_seconds);
            // An anytime search without a budget has no fraction: no bar, only its line.
            let template = match fraction {
                Some(_) => "{prefix:.bold} [{bar:28.cyan/blue}] {percent:>3}% {wide_msg}",
                None => "{prefix:.bold} {wide_msg}",
            };
            bar.set_style(
                ProgressStyle::with_template(template)
                    .expect("valid template")
                    .progress_chars("=> "),
            );
            bar.set_prefix(format!(
                "#{id} {}",
                c["problem"].as_str().unwrap_or_default()
            ));
            bar.set_position((fraction.unwrap_or(0.0) * STEPS as f64) as u64);
            bar.set_message(summary(c, self.budget_seconds));
            let ended = matches!(c["state"].as_str(), Some("done" | "failed" | "cancelled"));
            if ended && !bar.is_finished() {
                bar.finish();
            }
        }
    }

    /// Leaves the bars as they are drawn.
    pub fn finish(&self) {
        for bar in self.bars.values() {
            if !bar.is_finished() {
                bar.abandon();
            }
        }
    }
}

/// One line about a campaign: state, best value, units, rate, ETA; for an open-ended
/// anytime search the time it has run (of the budget, when `budget_seconds` is given) and
/// its limit instead of an ETA.
pub fn summary(c: &Value, budget_seconds: Option<f64>) -> String {
    let units = &c["units"];
    let n = |k: &str| units[k].as_u64().unwrap_or(0);
    let total = n("pending") + n("verifying") + n("leased") + n("done") + n("failed");
    let open = if units["split_complete"].as_bool() == Some(false) {
        "+"
    } else {
        ""
    };
    let value = c["value"].as_str().unwrap_or("—");
    let proven = match c["outcome"].as_str() {
        Some(
            outcome @ ("proven_optimum"
            | "proven_none_reaches_target"
            | "conditional_proof"
            | "claimed_optimum"
            | "claimed_none"
            | "claimed_count"
            | "exact_count"),
        ) => {
            format!(" ({})", crate::views::outcome_words(outcome))
        }
        _ => String::new(),
    };
    let state = c["state"].as_str().unwrap_or("?");
    let mut line = format!(
        "{state} best {value}{proven} · {}/{total}{open} units",
        n("done")
    );
    if n("failed") > 0 {
        line += &format!(" ({} failed)", n("failed"));
    }
    if n("verifying") > 0 {
        line += &format!(
            " · {} verifying (waiting for a replica run on another worker)",
            n("verifying")
        );
    }
    if state == "running" {
        let rate = c["throughput"]["units_per_second"].as_f64().unwrap_or(0.0);
        line += &format!(" · {rate:.2}/s");
        if open_ended_search(c) {
            let elapsed = fmt_duration(c["elapsed_seconds"].as_f64().unwrap_or(0.0));
            line += &match budget_seconds {
                Some(budget) => format!(" · ran {elapsed} of {}", fmt_duration(budget)),
                None => format!(" · running {elapsed}"),
            };
            line += &match c["limit"].as_str() {
                Some(limit) => format!(" · anytime search, ends after {limit}"),
                None => " · anytime search, no end to estimate".to_string(),
            };
            return line;
        }
        let eta = &c["estimate"]["eta_seconds"];
        let bound = if c["estimate"]["open_ended"].as_bool() == Some(true) {
            "≥"
        } else {
            ""
        };
        match (
            eta["value"].as_f64(),
            eta["low"].as_f64(),
            eta["high"].as_f64(),
        ) {
            (Some(v), Some(lo), Some(hi)) => {
                line += &format!(
                    " · ETA {bound}{} ({}–{})",
                    fmt_duration(v),
                    fmt_duration(lo),
                    fmt_duration(hi)
                )
            }
            _ => line += " · ETA unknown",
        }
    }
    line
}

/// Reads `/api/campaigns` through the coordinator channel.
async fn fetch(
    channel: &tonic::transport::Channel,
    token: Option<&str>,
) -> anyhow::Result<Vec<Value>> {
    use http_body_util::BodyExt;
    use tower::ServiceExt;
    let mut request = http::Request::builder().method("GET").uri("/api/campaigns");
    if let Some(token) = token {
        request = request.header(http::header::AUTHORIZATION, format!("Bearer {token}"));
    }
    let request = request
        .body(tonic::body::Body::empty())
        .context("request")?;
    let response = channel.clone().oneshot(request).await?;
    let status = response.status();
    let body = response.into_body().collect().await?.to_bytes();
    anyhow::ensure!(
        status.is_success(),
        "the coordinator answered {status} to /api/campaigns: {}",
        String::from_utf8_lossy(&body)
    );
    let value: Value = serde_json::from_slice(&body).context("/api/campaigns is not JSON")?;
    Ok(value["campaigns"].as_array().cloned().unwrap_or_default())
}

/// Runs `grind watch`.
pub async fn watch(args: WatchArgs) -> Result<(), CliError> {
    let access = grind_worker::connect::Access::from_sources(
        args.url.token.clone(),
        args.url.token_file.as_deref(),
        args.url.ca_file.as_deref(),
    )
    .map_err(|e| CliError::Usage(e.to_string()))?;
    let channel = grind_worker::connect::endpoint(&args.url.coordinator, &access)
        .map_err(|e| CliError::Usage(e.to_string()))?
        .connect()
        .await
        .with_context(|| format!("cannot reach the coordinator at {}", args.url.coordinator))?;
    let terminal = std::io::stdout().is_terminal() && !args.once;
    let mut bars = Bars::on_stdout(None);
    let period = Duration::from_millis(args.interval_ms.max(50));
    loop {
        let mut campaigns = fetch(&channel, access.token.as_deref()).await?;
        if let Some(id) = args.campaign {
            campaigns.retain(|c| c["campaign"].as_i64() == Some(id));
            if campaigns.is_empty() {
                return Err(CliError::Usage(format!("no campaign {id}")));
            }
        }
        if terminal {
            bars.update(&campaigns);
        } else {
            for c in &campaigns {
                let shown = match shown_fraction(c, None) {
                    Some(fraction) => format!("{:5.1}%", fraction * 100.0),
                    None => "    —".to_string(),
                };
                println!(
                    "#{} {} {shown} {}",
                    c["campaign"],
                    c["problem"].as_str().unwrap_or_default(),
                    summary(c, None)
                );
            }
        }
        let all_ended = campaigns
            .iter()
            .all(|c| matches!(c["state"].as_str(), Some("done" | "failed" | "cancelled")));
        if args.once || (args.campaign.is_some() && all_ended) {
            bars.finish();
            return Ok(());
        }
        tokio::time::sleep(period).await;
    }
}

/// `grind run`'s bars: a task that redraws its campaigns until stopped. Does nothing when
/// stdout is not a terminal.
pub struct LocalBars {
    stop: watch::Sender<bool>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl LocalBars {
    /// Starts drawing `campaign_ids` of the in-process `coordinator`; `budget_seconds` is
    /// `grind run --seconds`.
    pub fn start(
        coordinator: &Coordinator,
        campaign_ids: &[i64],
        budget_seconds: Option<f64>,
    ) -> LocalBars {
        let (stop, mut stopped) = watch::channel(false);
        let task = std::io::stdout().is_terminal().then(|| {
            let coordinator = coordinator.clone();
            let ids = campaign_ids.to_vec();
            tokio::spawn(async move {
                let mut bars = Bars::on_stdout(budget_seconds);
                let mut changes = coordinator.subscribe();
                loop {
                    let now = coordinator.now();
                    let rows = coordinator
                        .store()
                        .read(move |conn| crate::web::data::campaign_rows(conn, now))
                        .await;
                    if let Ok(rows) = rows {
                        let shown: Vec<Value> = rows
                            .iter()
                            .filter(|r| ids.contains(&r.status.campaign_id))
                            .map(|r| r.to_json())
                            .collect();
                        bars.update(&shown);
                    }
                    if *stopped.borrow() {
                        bars.finish();
                        return;
                    }
                    tokio::select! {
                        _ = stopped.changed() => {}
                        _ = tokio::time::sleep(Duration::from_millis(500)) => {
                            let _ = tokio::time::timeout(
                                Duration::from_millis(500),
                                changes.changed(),
                            )
                            .await;
                        }
                    }
                }
            })
        });
        LocalBars { stop, task }
    }

    /// Draws the final state and stops.
    pub async fn finish(mut self) {
        let _ = self.stop.send(true);
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn summary_names_value_units_and_eta() {
        let c = json!({
            "campaign": 1, "problem": "primes", "state": "running", "value": "42",
            "proven": false,
            "units": {"pending": 3, "verifying": 0, "leased": 1, "done": 6, "failed": 0,
                      "split_complete": true},
            "throughput": {"units_per_second": 2.0},
            "estimate": {"open_ended": false, "progress": {"value": 0.6},
                         "eta_seconds": {"value": 2.0, "low": 1.0, "high": 3.0}},
        });
        let line = summary(&c, None);
        assert!(line.contains("best 42"), "{line}");
        assert!(line.contains("6/10 units"), "{line}");
        assert!(line.contains("ETA 2 s (1 s–3 s)"), "{line}");
        assert_eq!(shown_fraction(&c, None), Some(0.6));
    }

    #[test]
    fn an_open_ended_anytime_search_shows_its_time_not_a_fraction() {
        // What /api/campaigns says of a running `topswops --heuristic`: the estimate's
        // fraction is nearly 1 (every unit split so far is done), which is not true.
        let mut c = json!({
            "campaign": 2, "problem": "topswops", "state": "running", "value": "9000",
            "anytime": true, "elapsed_seconds": 75.0, "limit": null,
            "units": {"pending": 0, "verifying": 0, "leased": 1, "done": 400, "failed": 0,
                      "split_complete": false},
            "throughput": {"units_per_second": 2.0},
            "estimate": {"open_ended": true, "progress": {"value": 0.999},
                         "eta_seconds": {"value": 0.186, "low": 0.0, "high": 4.0}},
        });
        let line = summary(&c, None);
        assert!(line.contains("running 1 min 15 s"), "{line}");
        assert!(line.contains("no end to estimate"), "{line}");
        assert!(!line.contains("ETA"), "{line}");
        assert_eq!(shown_fraction(&c, None), None, "no bar without a budget");
        // With `grind run --seconds 300`: a quarter of the budget used.
        assert_eq!(shown_fraction(&c, Some(300.0)), Some(0.25));
        assert!(summary(&c, Some(300.0)).contains("ran 1 min 15 s of 5 min 00 s"));
        c["limit"] = json!("8 rounds");
        assert!(summary(&c, None).contains("ends after 8 rounds"));
        // Once its end is known (the splitter finished), the estimate is shown again.
        c["estimate"]["open_ended"] = json!(false);
        assert!(summary(&c, None).contains("ETA"));
        assert_eq!(shown_fraction(&c, None), Some(0.999));
    }
}
