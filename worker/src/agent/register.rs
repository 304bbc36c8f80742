//! Registration (asking again for the previous identity after a coordinator restart) and the
//! task that follows the coordinator's bound stream for the registered identity.

use grind_proto::v1 as pb;
use std::time::{Duration, Instant};
use tokio_stream::StreamExt;

use super::contact::{Refusal, MAX_BACKOFF, MIN_BACKOFF, TOKEN_RETRY};
use super::Agent;
use crate::context::Bounds;
use crate::coordinator::{is_transient, Coordinator};
use crate::events::WorkerEvent;

impl<C: Coordinator> Agent<C> {
    pub(super) async fn register(&mut self) {
        let request = pb::RegisterRequest {
            name: self.config.name.clone(),
            host: self.config.host.clone(),
            cores: self.config.threads as u32,
            version: grind_shared::VERSION.to_string(),
            git_commit: grind_shared::GIT_COMMIT.to_string(),
            previous_worker_id: self.summary.worker_id,
            native_code_allowed: self.config.allow_exec,
            platform: grind_shared::placement::PLATFORM.to_string(),
        };
        let client = self.client.clone();
        match self
            .waiting(async move { client.register(request).await })
            .await
        {
            Ok(reply) => {
                self.contact.ok();
                self.worker_id = reply.worker_id;
                self.summary.worker_id = reply.worker_id;
                self.heartbeat_every =
                    Duration::from_millis(reply.heartbeat_interval_ms.clamp(50, 60_000) as u64);
                self.next_heartbeat = Instant::now() + self.heartbeat_every;
                tracing::info!("registered as worker {}", reply.worker_id);
                self.log.emit(WorkerEvent::Registered {
                    worker_id: reply.worker_id,
                });
                if let Some(old) = self.bound_watch.take() {
                    old.abort();
                }
                self.bound_watch = Some(tokio::spawn(watch_bounds(
                    self.client.clone(),
                    reply.worker_id,
                    self.bounds.clone(),
                )));
            }
            Err(status) if is_transient(status.code()) => self.contact.failed("register", &status),
            Err(status) => {
                tracing::error!("registration refused: {}", status.message());
                let retry = if self.on_refusal(&status) == Refusal::TokenGrace {
                    TOKEN_RETRY
                } else {
                    MAX_BACKOFF
                };
                self.contact.retry_in(retry);
            }
        }
    }
}

/// Follows the coordinator's bound stream for as long as the worker runs, reconnecting
/// with backoff: a new incumbent found anywhere reaches this worker's units in milliseconds.
async fn watch_bounds<C: Coordinator>(client: C, worker_id: i64, bounds: Bounds) {
    let mut backoff = MIN_BACKOFF;
    loop {
        match client.watch_bounds(worker_id).await {
            Ok(mut stream) => {
                backoff = MIN_BACKOFF;
                while let Some(Ok(update)) = stream.next().await {
                    for bound in update.bounds {
                        bounds.offer(bound.campaign_id, bound.bound);
                    }
                }
            }
            Err(status) => tracing::debug!("bound stream: {}", status.message()),
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}
