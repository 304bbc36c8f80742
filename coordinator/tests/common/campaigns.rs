//! Campaigns through the admin API and what a test checks on them: totals, solutions,
//! which workers ran units, the event log.

use super::rpc::Transport;
use grind_proto::v1 as pb;
use grind_proto::v1::admin_client::AdminClient;
use std::collections::BTreeSet;
use std::path::Path;

/// Creates a campaign from a problem and JSON parameters.
pub async fn create<T: Transport>(
    admin: &mut AdminClient<T>,
    problem: &str,
    params: serde_json::Value,
    verify_rate: f64,
) -> i64 {
    admin
        .create_campaign(pb::CreateCampaignRequest {
            problem: problem.into(),
            params_json: params.to_string(),
            name: String::new(),
            verify_rate,
            max_attempts: 0,
            family: String::new(),
            target_lease_ms: 0,
        })
        .await
        .expect("create campaign")
        .into_inner()
        .campaign_id
}

/// One campaign's status with every unit result.
pub async fn status<T: Transport>(admin: &mut AdminClient<T>, campaign: i64) -> pb::StatusReply {
    admin
        .status(pb::StatusRequest {
            campaign_id: campaign,
            with_results: true,
        })
        .await
        .expect("status")
        .into_inner()
}

/// Every registered worker, as the admin status lists them.
pub async fn workers<T: Transport>(admin: &mut AdminClient<T>) -> Vec<pb::WorkerInfo> {
    admin
        .status(pb::StatusRequest::default())
        .await
        .expect("status")
        .into_inner()
        .workers
}

/// Asserts every unit of a campaign was counted exactly once: one accepted result per done
/// unit (replicas agreeing with it aside), and the total equals their sum.
pub fn assert_counted_once(reply: &pb::StatusReply, expected_total: u64) {
    let campaign = &reply.campaigns[0];
    assert_eq!(campaign.value, expected_total.to_string(), "campaign total");
    let units = campaign.units.unwrap();
    let mut accepted: std::collections::BTreeMap<i64, Vec<String>> = Default::default();
    for r in reply.results.iter().filter(|r| r.state == "accepted") {
        accepted.entry(r.unit_id).or_default().push(r.value.clone());
    }
    assert_eq!(
        accepted.len() as u64,
        units.done,
        "units with accepted results"
    );
    let mut sum = 0u64;
    for (unit, values) in &accepted {
        assert!(
            values.windows(2).all(|w| w[0] == w[1]),
            "unit {unit} accepted different values {values:?}"
        );
        sum += values[0].parse::<u64>().unwrap();
    }
    assert_eq!(sum, expected_total, "sum of accepted unit values");
}

/// The worker that produced a result.
pub fn provenance(result: &pb::UnitResultRecord) -> &pb::Provenance {
    result
        .provenance
        .as_ref()
        .expect("a result has a provenance")
}

/// Names of the workers whose results a status lists.
pub fn result_workers(reply: &pb::StatusReply) -> BTreeSet<String> {
    reply
        .results
        .iter()
        .map(|r| provenance(r).worker_name.clone())
        .collect()
}

/// The campaign's best solution as JSON.
pub fn solution(campaign: &pb::CampaignStatus) -> serde_json::Value {
    serde_json::from_str(&campaign.solution_json).expect("the solution is JSON")
}

/// One field of the campaign's best solution (`walk`, `deck`, `moves`...).
pub fn solution_field<V: serde::de::DeserializeOwned>(
    campaign: &pb::CampaignStatus,
    field: &str,
) -> V {
    serde_json::from_value(solution(campaign)[field].clone())
        .unwrap_or_else(|e| panic!("solution field {field}: {e}"))
}

/// The campaign's parameters as JSON.
pub fn params(campaign: &pb::CampaignStatus) -> serde_json::Value {
    serde_json::from_str(&campaign.params_json).expect("the parameters are JSON")
}

/// Opens a coordinator's database read-only (beside the running coordinator).
pub fn open_read_only(db: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .expect("open the store read-only")
}

/// How many events of `kind` the store logged, over every campaign.
pub fn count_events(db: &Path, kind: &str) -> i64 {
    open_read_only(db)
        .query_row("SELECT count(*) FROM events WHERE kind = ?1", [kind], |r| {
            r.get(0)
        })
        .expect("count events")
}

/// The details of a campaign's events of `kind`, oldest first.
pub fn event_details(db: &Path, campaign: i64, kind: &str) -> Vec<String> {
    open_read_only(db)
        .prepare("SELECT detail FROM events WHERE campaign_id = ?1 AND kind = ?2 ORDER BY id")
        .expect("prepare")
        .query_map(rusqlite::params![campaign, kind], |r| r.get(0))
        .expect("query events")
        .collect::<Result<_, _>>()
        .expect("read events")
}
