//! Waiting on conditions: poll with a timeout, never a fixed sleep.

use super::rpc::{try_show, Transport};
use grind_kit::waiting::poll_until;
use grind_proto::v1 as pb;
use grind_proto::v1::admin_client::AdminClient;
use std::cell::RefCell;
use std::future::Future;
use std::time::Duration;

/// Polls `check` every 50 ms until it returns `Some`, or panics after `timeout` naming `what`.
pub async fn wait_for<T, F, Fut>(what: &str, timeout: Duration, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    poll_until(what, timeout, check)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
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
    let last = RefCell::new(None);
    let seen = poll_until(what, timeout, || async {
        let mut client = admin.clone();
        let c = try_show(&mut client, campaign).await.ok()?;
        if until(&c) {
            return Some(c);
        }
        *last.borrow_mut() = Some(c);
        None
    })
    .await;
    seen.unwrap_or_else(|e| panic!("{e}; last status: {:?}", last.into_inner()))
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
