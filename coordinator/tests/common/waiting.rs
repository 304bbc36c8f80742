//! Waiting on conditions: poll with a timeout, never a fixed sleep.

use super::rpc::{try_show, Transport};
use grind_proto::v1 as pb;
use grind_proto::v1::admin_client::AdminClient;
use std::future::Future;
use std::time::{Duration, Instant};

/// Polls `check` every 50 ms until it returns `Some`, or panics after `timeout` naming `what`.
pub async fn wait_for<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Polls a campaign's status until `until` holds, returning that status; a timeout's panic
/// shows the last status seen.
pub async fn wait_campaign<T: Transport>(
    admin: &AdminClient<T>,
    campaign: i64,
    what: &str,
    timeout: Duration,
    until: &(dyn Fn(&pb::CampaignStatus) -> bool + Sync),
) -> pb::CampaignStatus {
    let deadline = Instant::now() + timeout;
    let mut last = None;
    loop {
        let mut client = admin.clone();
        if let Ok(c) = try_show(&mut client, campaign).await {
            if until(&c) {
                return c;
            }
            last = Some(c);
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}; last status: {last:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until the campaign has left the running state, returning its final status.
pub async fn wait_finished<T: Transport>(
    admin: &mut AdminClient<T>,
    campaign: i64,
    timeout: Duration,
) -> pb::CampaignStatus {
    wait_campaign(admin, campaign, "the campaign to finish", timeout, &|c| {
        c.state != "running"
    })
    .await
}

/// Waits until a log (of a process, say) contains `text`.
pub async fn wait_log(what: &str, timeout: Duration, log: impl Fn() -> String, text: &str) {
    wait_for(what, timeout, || {
        let found = log().contains(text);
        async move { found.then_some(()) }
    })
    .await
}
