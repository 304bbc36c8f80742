//! The worker's connection to its coordinator: a lazily connecting, self-reconnecting gRPC
//! channel with per-call deadlines.

use grind_proto::v1 as pb;
use grind_proto::v1::worker_client::WorkerClient;
use tonic::{Code, Status};

use crate::connect::{authenticated, endpoint, Access, AuthChannel};
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

    /// See `Worker.Register`.
    pub async fn register(&self, req: pb::RegisterRequest) -> Result<pb::RegisterReply, Status> {
        Ok(self.inner.clone().register(req).await?.into_inner())
    }

    /// See `Worker.Lease`.
    pub async fn lease(&self, req: pb::LeaseRequest) -> Result<pb::LeaseReply, Status> {
        Ok(self.inner.clone().lease(req).await?.into_inner())
    }

    /// See `Worker.Heartbeat`.
    pub async fn heartbeat(&self, req: pb::HeartbeatRequest) -> Result<pb::HeartbeatReply, Status> {
        Ok(self.inner.clone().heartbeat(req).await?.into_inner())
    }

    /// See `Worker.ReportImprovement`.
    pub async fn improve(
        &self,
        req: pb::ImprovementRequest,
    ) -> Result<pb::ImprovementReply, Status> {
        Ok(self
            .inner
            .clone()
            .report_improvement(req)
            .await?
            .into_inner())
    }

    /// See `Worker.Complete`.
    pub async fn complete(&self, req: pb::CompleteRequest) -> Result<pb::CompleteReply, Status> {
        Ok(self.inner.clone().complete(req).await?.into_inner())
    }

    /// See `Worker.CompleteBatch`.
    pub async fn complete_batch(
        &self,
        req: pb::CompleteBatchRequest,
    ) -> Result<pb::CompleteBatchReply, Status> {
        Ok(self.inner.clone().complete_batch(req).await?.into_inner())
    }

    /// See `Worker.Donate`.
    pub async fn donate(&self, req: pb::DonateRequest) -> Result<pb::DonateReply, Status> {
        Ok(self.inner.clone().donate(req).await?.into_inner())
    }

    /// See `Worker.WatchBounds`.
    pub async fn watch_bounds(
        &self,
        worker_id: i64,
    ) -> Result<tonic::Streaming<pb::BoundsUpdate>, Status> {
        // A stream lives as long as the worker: no per-call deadline.
        let mut request = tonic::Request::new(pb::WatchBoundsRequest { worker_id });
        request.set_timeout(std::time::Duration::from_secs(365 * 24 * 3600));
        Ok(self.inner.clone().watch_bounds(request).await?.into_inner())
    }

    /// See `Worker.Release`.
    pub async fn release(&self, req: pb::ReleaseRequest) -> Result<pb::ReleaseReply, Status> {
        Ok(self.inner.clone().release(req).await?.into_inner())
    }
}

/// Whether a failed call is worth retrying later (the coordinator is down, restarting or
/// overloaded) rather than a refusal of the request itself.
pub fn is_transient(status: &Status) -> bool {
    matches!(
        status.code(),
        Code::Unavailable
            | Code::Unknown
            | Code::DeadlineExceeded
            | Code::Cancelled
            | Code::ResourceExhausted
            | Code::Aborted
            | Code::Internal
    )
}
