//! The campaigns a chaos run keeps going, each with its answer known in advance from
//! [`grind_kit::reference`]: `primes` ranges (units stretched with `min_unit_ms` so leases stay open
//! while faults land), `nimsquare` for small N, and `topswops` exact for small n.
//!
//! Campaigns are created through the Admin API under unique names, so a creation whose
//! reply was lost (coordinator killed after the commit) is found by name instead of being
//! created twice.

use grind_proto::v1 as pb;
use grind_proto::v1::admin_client::AdminClient;
use serde::Serialize;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;
use tonic::transport::Channel;

use crate::cluster::Cluster;
use crate::rng::{Random, Rng};
use grind_kit::reference;

/// The answer a campaign must end with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Expected {
    /// A count campaign's total.
    Count(u64),
    /// An optimisation campaign's proven best score.
    Max(i64),
}

impl Expected {
    /// The value as the coordinator shows it.
    pub fn as_value(&self) -> String {
        match self {
            Expected::Count(v) => v.to_string(),
            Expected::Max(v) => v.to_string(),
        }
    }
}

/// One campaign of the workload.
#[derive(Clone, Debug, Serialize)]
pub struct Spec {
    /// Unique name (the creation key).
    pub name: String,
    /// Registered problem.
    pub problem: &'static str,
    /// Its parameters.
    pub params: Value,
    /// Replication rate for counts.
    pub verify_rate: f64,
    /// The answer, computed by the harness.
    pub expected: Expected,
}

/// How big the workload's campaigns are.
#[derive(Clone, Copy, Debug)]
pub struct WorkloadSettings {
    /// Largest Topswops n (brute force over n! decks in the harness).
    pub topswops_max_n: u8,
    /// Campaigns running at once.
    pub concurrent: usize,
    /// Stretch of a primes unit (ms range).
    pub unit_ms: (u64, u64),
}

/// Draws the next campaign; its expected answer is computed here (CPU-bound: call it off
/// the async runtime).
pub fn next_spec(rng: &mut Rng, seq: u64, settings: &WorkloadSettings) -> Spec {
    let name = format!("chaos-{seq}");
    match rng.weighted(&[5.0, 2.0, 2.0]).unwrap_or(0) {
        0 => {
            let unit = rng.range_inclusive(2, 20) * 10_000;
            let units = rng.range_inclusive(6, 24);
            let from = rng.range_inclusive(0, 400) * 10_000;
            let to = from + unit * units - rng.range_inclusive(0, unit / 2);
            let min_unit_ms = rng.range_inclusive(settings.unit_ms.0, settings.unit_ms.1);
            let verify_rate = *rng.pick(&[0.0, 0.3, 1.0]).unwrap_or(&1.0);
            Spec {
                name,
                problem: "primes",
                params: json!({"from": from, "to": to, "unit": unit, "min_unit_ms": min_unit_ms}),
                verify_rate,
                expected: Expected::Count(reference::primes_between(from, to)),
            }
        }
        1 => {
            let n = rng.range_inclusive(10, 160);
            Spec {
                name,
                problem: "nimsquare",
                params: json!({"n": n}),
                verify_rate: *rng.pick(&[0.5, 1.0]).unwrap_or(&1.0),
                expected: Expected::Count(reference::nimsquare_losing(n)),
            }
        }
        _ => {
            let n = rng.range_inclusive(5, u64::from(settings.topswops_max_n.max(5))) as u8;
            Spec {
                name,
                problem: "topswops",
                params: json!({"n": n}),
                // Search units are replicated like counts (a second run from the beginning
                // on another worker).
                verify_rate: *rng.pick(&[0.0, 0.5, 1.0]).unwrap_or(&0.0),
                expected: Expected::Max(reference::topswops_max(n) as i64),
            }
        }
    }
}

/// A campaign the workload created, and how it ended.
#[derive(Clone, Debug, Serialize)]
pub struct Tracked {
    /// What was asked for.
    pub spec: Spec,
    /// Its id.
    pub campaign_id: i64,
    /// Its final status (state, value, proven), once it left `running`.
    pub final_state: Option<String>,
    /// Its final value.
    pub final_value: Option<String>,
    /// Whether it ended proven.
    pub proven: bool,
    /// Seconds from creation to its end.
    pub seconds: Option<f64>,
    #[serde(skip)]
    created: Option<Instant>,
}

/// The campaigns of a run, shared between the workload task and the report.
#[derive(Default)]
pub struct Ledger {
    campaigns: Mutex<Vec<Tracked>>,
}

impl Ledger {
    /// Every tracked campaign so far.
    pub fn snapshot(&self) -> Vec<Tracked> {
        self.campaigns.lock().map(|c| c.clone()).unwrap_or_default()
    }

    fn push(&self, tracked: Tracked) {
        if let Ok(mut campaigns) = self.campaigns.lock() {
            campaigns.push(tracked);
        }
    }

    fn unfinished(&self) -> Vec<i64> {
        self.campaigns
            .lock()
            .map(|c| {
                c.iter()
                    .filter(|t| t.final_state.is_none())
                    .map(|t| t.campaign_id)
                    .collect()
            })
            .unwrap_or_default()
    }

    fn finish(&self, status: &pb::CampaignStatus) {
        if let Ok(mut campaigns) = self.campaigns.lock() {
            if let Some(t) = campaigns
                .iter_mut()
                .find(|t| t.campaign_id == status.campaign_id)
            {
                t.final_state = Some(status.state.clone());
                t.final_value = Some(status.value.clone());
                t.proven = status.proven;
                t.seconds = t.created.map(|c| c.elapsed().as_secs_f64());
            }
        }
    }
}

async fn admin_client(cluster: &Cluster) -> Option<AdminClient<Channel>> {
    let url = cluster.wait_admin_url(Duration::from_secs(30)).await?;
    let channel = tonic::transport::Endpoint::from_shared(url)
        .ok()?
        .connect_timeout(Duration::from_secs(2))
        .timeout(Duration::from_secs(10))
        .connect()
        .await
        .ok()?;
    Some(AdminClient::new(channel))
}

/// Creates `spec`'s campaign unless one with its name exists already; returns its id.
async fn create(admin: &mut AdminClient<Channel>, spec: &Spec) -> Option<i64> {
    let existing = admin
        .list_campaigns(pb::ListCampaignsRequest {})
        .await
        .ok()?
        .into_inner()
        .campaigns
        .into_iter()
        .find(|c| c.name == spec.name);
    if let Some(found) = existing {
        return Some(found.campaign_id);
    }
    let reply = admin
        .create_campaign(pb::CreateCampaignRequest {
            problem: spec.problem.into(),
            params_json: spec.params.to_string(),
            name: spec.name.clone(),
            verify_rate: spec.verify_rate,
            max_attempts: 0,
            target_lease_ms: 0,
            family: String::new(),
        })
        .await
        .ok()?;
    Some(reply.into_inner().campaign_id)
}

/// Keeps `settings.concurrent` campaigns running until `create_until`, then waits for all
/// of them to end (or for `drain_until`). Returns whether every campaign ended.
pub async fn run(
    cluster: Arc<Cluster>,
    ledger: Arc<Ledger>,
    mut rng: Rng,
    settings: WorkloadSettings,
    create_until: Instant,
    drain_until: Instant,
) -> bool {
    let mut seq = 0u64;
    let mut next: Option<Spec> = None;
    let mut admin: Option<AdminClient<Channel>> = None;
    loop {
        let now = Instant::now();
        let creating = now < create_until;
        let unfinished = ledger.unfinished();
        if !creating && unfinished.is_empty() {
            return true;
        }
        if now >= drain_until {
            return false;
        }
        if admin.is_none() {
            admin = admin_client(&cluster).await;
        }
        let Some(client) = admin.as_mut() else {
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        };
        let mut failed = false;
        for id in unfinished.iter().copied() {
            match client
                .show_campaign(pb::CampaignRef { campaign_id: id })
                .await
            {
                Ok(status) => {
                    let status = status.into_inner();
                    if status.state != "running" {
                        ledger.finish(&status);
                    }
                }
                Err(_) => {
                    failed = true;
                    break;
                }
            }
        }
        if creating && !failed && ledger.unfinished().len() < settings.concurrent {
            if next.is_none() {
                let mut draw = rng;
                let drawn = tokio::task::spawn_blocking(move || {
                    let spec = next_spec(&mut draw, seq, &settings);
                    (spec, draw)
                })
                .await;
                if let Ok((spec, advanced)) = drawn {
                    rng = advanced;
                    next = Some(spec);
                }
            }
            if let Some(spec) = next.clone() {
                match create(client, &spec).await {
                    Some(campaign_id) => {
                        ledger.push(Tracked {
                            spec,
                            campaign_id,
                            final_state: None,
                            final_value: None,
                            proven: false,
                            seconds: None,
                            created: Some(Instant::now()),
                        });
                        seq += 1;
                        next = None;
                    }
                    None => failed = true,
                }
            }
        }
        if failed {
            // The coordinator is down or restarting: reconnect to wherever it is now.
            admin = None;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_are_deterministic_and_answered() {
        let settings = WorkloadSettings {
            topswops_max_n: 7,
            concurrent: 2,
            unit_ms: (50, 100),
        };
        let mut a = crate::rng::seeded(11);
        let mut b = crate::rng::seeded(11);
        let mut problems = std::collections::BTreeSet::new();
        for seq in 0..30 {
            let x = next_spec(&mut a, seq, &settings);
            let y = next_spec(&mut b, seq, &settings);
            assert_eq!(x.params, y.params);
            assert_eq!(x.expected, y.expected);
            problems.insert(x.problem);
            if x.problem == "primes" {
                let from = x.params["from"].as_u64().unwrap();
                let to = x.params["to"].as_u64().unwrap();
                assert!(from < to);
            }
        }
        assert_eq!(problems.len(), 3, "{problems:?}");
    }
}
