//! gRPC connections to a coordinator that may still be starting: retried until it answers.

use crate::waiting::poll_until;
use crate::KitError;
use grind_proto::v1 as pb;
use grind_proto::v1::admin_client::AdminClient;
use grind_proto::v1::worker_client::WorkerClient;
use std::time::Duration;
use tonic::transport::Channel;

/// An admin client to `url`, retried until it connects or `timeout` passes.
pub async fn admin(url: &str, timeout: Duration) -> Result<AdminClient<Channel>, KitError> {
    poll_until("the admin API", timeout, || async {
        AdminClient::connect(url.to_string()).await.ok()
    })
    .await
}

/// A worker client to `url` (to play a worker call by call), retried until it connects or
/// `timeout` passes.
pub async fn worker(url: &str, timeout: Duration) -> Result<WorkerClient<Channel>, KitError> {
    poll_until("the worker API", timeout, || async {
        WorkerClient::connect(url.to_string()).await.ok()
    })
    .await
}

/// A plain channel to `url`, retried until it connects or `timeout` passes.
pub async fn channel(url: &str, timeout: Duration) -> Result<Channel, KitError> {
    let endpoint = Channel::from_shared(url.to_string()).map_err(|e| KitError::InvalidUrl {
        url: url.to_string(),
        reason: e.to_string(),
    })?;
    poll_until("the server", timeout, || async {
        endpoint.connect().await.ok()
    })
    .await
}

/// Registers a worker with `request`, retrying a failed or refused call (bursts of
/// registrations meet the coordinator's per-address limit) up to `attempts` times in all,
/// sleeping `backoff` times the attempt number (at most 10 times) after each failure, which
/// goes to `on_error` first. The worker id, or `None` when every attempt failed.
pub async fn register_with_retries(
    client: &mut WorkerClient<Channel>,
    request: pb::RegisterRequest,
    attempts: u32,
    backoff: Duration,
    mut on_error: impl FnMut(tonic::Status),
) -> Option<i64> {
    for attempt in 1..=attempts {
        match client.register(request.clone()).await {
            Ok(reply) => return Some(reply.into_inner().worker_id),
            Err(status) => {
                on_error(status);
                tokio::time::sleep(backoff * attempt.min(10)).await;
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn bad_urls_and_silent_servers_are_errors() {
        let bad = channel("not a url", Duration::from_millis(10)).await;
        assert!(matches!(bad, Err(KitError::InvalidUrl { .. })), "{bad:?}");
        // Nothing listens on a port just released: every try is refused until the timeout.
        let url = format!("http://127.0.0.1:{}", crate::net::free_port());
        let refused = admin(&url, Duration::from_millis(200)).await.unwrap_err();
        assert_eq!(
            refused.to_string(),
            "timed out after 200ms waiting for the admin API"
        );
    }
}
