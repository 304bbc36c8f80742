//! The worker's gRPC connection to its coordinator: a lazily connecting, self-reconnecting
//! channel with per-call deadlines, implementing [`Coordinator`].

use grind_proto::v1 as pb;
use grind_proto::v1::worker_client::WorkerClient;
use tonic::Status;

use crate::connect::{authenticated, endpoint, Access, AuthChannel};
use crate::coordinator::{BoundUpdates, Coordinator};
use crate::WorkerError;

/// Largest gRPC message sent or accepted.
const MAX_MESSAGE_BYTES: usize = 256 << 20;

/// A cheap-to-clone client of the `grind.v1.Worker` service.
#[derive(Clone)]
pub struct Client {
    inner: WorkerClient<AuthChannel>,
}

impl Client {
    /// A client for `url` (e.g. `http://127.0.0.1:7878`) with `access`'s token and TLS
    /// settings; connects on first use.
    pub fn new(url: &str, access: &Access) -> Result<Client, WorkerError> {
        let channel = authenticated(endpoint(url, access)?.connect_lazy(), access)?;
        Ok(Client {
            inner: WorkerClient::new(channel)
                .max_decoding_message_size(MAX_MESSAGE_BYTES)
                .max_encoding_message_size(MAX_MESSAGE_BYTES),
        })
    }
}

impl Coordinator for Client {
    async fn register(&self, req: pb::RegisterRequest) -> Result<pb::RegisterReply, Status> {
        Ok(self.inner.clone().register(req).await?.into_inner())
    }

    async fn lease(&self, req: pb::LeaseRequest) -> Result<pb::LeaseReply, Status> {
        Ok(self.inner.clone().lease(req).await?.into_inner())
    }

    async fn heartbeat(&self, req: pb::HeartbeatRequest) -> Result<pb::HeartbeatReply, Status> {
        Ok(self.inner.clone().heartbeat(req).await?.into_inner())
    }

    async fn improve(&self, req: pb::ImprovementRequest) -> Result<pb::ImprovementReply, Status> {
        Ok(self
            .inner
            .clone()
            .report_improvement(req)
            .await?
            .into_inner())
    }

    async fn complete(&self, req: pb::CompleteRequest) -> Result<pb::CompleteReply, Status> {
        Ok(self.inner.clone().complete(req).await?.into_inner())
    }

    async fn complete_batch(
        &self,
        req: pb::CompleteBatchRequest,
    ) -> Result<pb::CompleteBatchReply, Status> {
        Ok(self.inner.clone().complete_batch(req).await?.into_inner())
    }

    async fn donate(&self, req: pb::DonateRequest) -> Result<pb::DonateReply, Status> {
        Ok(self.inner.clone().donate(req).await?.into_inner())
    }

    async fn release(&self, req: pb::ReleaseRequest) -> Result<pb::ReleaseReply, Status> {
        Ok(self.inner.clone().release(req).await?.into_inner())
    }

    async fn watch_bounds(&self, worker_id: i64) -> Result<BoundUpdates, Status> {
        // A stream lives as long as the worker: no per-call deadline.
        let mut request = tonic::Request::new(pb::WatchBoundsRequest { worker_id });
        request.set_timeout(std::time::Duration::from_secs(365 * 24 * 3600));
        let stream = self.inner.clone().watch_bounds(request).await?.into_inner();
        Ok(Box::pin(stream))
    }
}
