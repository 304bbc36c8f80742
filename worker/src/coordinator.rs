//! The worker's view of its coordinator: the calls it makes ([`Coordinator`]) and what a
//! failed call means to it ([`Failure`]). The agent is written against the trait, so tests
//! drive it with an in-memory coordinator; [`crate::client::Client`] is the gRPC one.

use grind_proto::refusal::refusal_of;
use grind_proto::v1 as pb;
use grind_proto::v1::refusal::Kind;
use std::future::Future;
use std::pin::Pin;
use tokio_stream::Stream;
use tonic::{Code, Status};

/// The coordinator's stream of bound updates (see `Worker.WatchBounds`).
pub type BoundUpdates = Pin<Box<dyn Stream<Item = Result<pb::BoundsUpdate, Status>> + Send>>;

/// The `grind.v1.Worker` calls a worker makes. Cheap to clone: each clone reaches the same
/// coordinator. Every call's future is `Send`, so a worker can run on any tokio runtime.
pub trait Coordinator: Clone + Send + Sync + 'static {
    /// See `Worker.Register`.
    fn register(
        &self,
        req: pb::RegisterRequest,
    ) -> impl Future<Output = Result<pb::RegisterReply, Status>> + Send;

    /// See `Worker.Lease`.
    fn lease(
        &self,
        req: pb::LeaseRequest,
    ) -> impl Future<Output = Result<pb::LeaseReply, Status>> + Send;

    /// See `Worker.Heartbeat`.
    fn heartbeat(
        &self,
        req: pb::HeartbeatRequest,
    ) -> impl Future<Output = Result<pb::HeartbeatReply, Status>> + Send;

    /// See `Worker.ReportImprovement`.
    fn improve(
        &self,
        req: pb::ImprovementRequest,
    ) -> impl Future<Output = Result<pb::ImprovementReply, Status>> + Send;

    /// See `Worker.Complete`.
    fn complete(
        &self,
        req: pb::CompleteRequest,
    ) -> impl Future<Output = Result<pb::CompleteReply, Status>> + Send;

    /// See `Worker.CompleteBatch`.
    fn complete_batch(
        &self,
        req: pb::CompleteBatchRequest,
    ) -> impl Future<Output = Result<pb::CompleteBatchReply, Status>> + Send;

    /// See `Worker.Donate`.
    fn donate(
        &self,
        req: pb::DonateRequest,
    ) -> impl Future<Output = Result<pb::DonateReply, Status>> + Send;

    /// See `Worker.Release`.
    fn release(
        &self,
        req: pb::ReleaseRequest,
    ) -> impl Future<Output = Result<pb::ReleaseReply, Status>> + Send;

    /// See `Worker.WatchBounds`: follows the bounds for as long as the stream lasts.
    fn watch_bounds(
        &self,
        worker_id: i64,
    ) -> impl Future<Output = Result<BoundUpdates, Status>> + Send;
}

/// What a failed call means to the worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The coordinator is down, restarting or overloaded: try again later.
    Transient,
    /// The coordinator does not know this worker (a typed refusal): register again.
    UnknownWorker,
    /// The worker is banned (a typed refusal): stop for good.
    Banned,
    /// The token is missing, wrong or revoked (`UNAUTHENTICATED`); it may also be new (a
    /// coordinator reads new tokens within a second).
    TokenRefused,
    /// This request was refused, not the worker (a stale lease, a bad result).
    Refused,
}

impl Failure {
    /// Classifies a failed call by its typed refusal and its status code (never its text).
    pub fn of(status: &Status) -> Failure {
        if let Some(refusal) = refusal_of(status) {
            match refusal.kind() {
                Kind::UnknownWorker => return Failure::UnknownWorker,
                Kind::Banned => return Failure::Banned,
                Kind::Unspecified => {}
            }
        }
        match status.code() {
            Code::Unauthenticated => Failure::TokenRefused,
            code if is_transient(code) => Failure::Transient,
            _ => Failure::Refused,
        }
    }
}

/// Whether a failed call is worth retrying later (the coordinator is down, restarting or
/// overloaded) rather than a refusal of the request itself.
pub fn is_transient(code: Code) -> bool {
    matches!(
        code,
        Code::Unavailable
            | Code::Unknown
            | Code::DeadlineExceeded
            | Code::Cancelled
            | Code::ResourceExhausted
            | Code::Aborted
            | Code::Internal
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use grind_proto::refusal::refusal_status;

    #[test]
    fn failures_are_classified_by_kind_and_code_not_text() {
        let banned = refusal_status(Code::PermissionDenied, "no", Kind::Banned, 3);
        assert_eq!(Failure::of(&banned), Failure::Banned);
        let unknown = refusal_status(Code::NotFound, "no", Kind::UnknownWorker, 3);
        assert_eq!(Failure::of(&unknown), Failure::UnknownWorker);
        // The words alone mean nothing.
        let words = Status::permission_denied("worker 3 is banned");
        assert_eq!(Failure::of(&words), Failure::Refused);
        let words = Status::not_found("unknown worker 3: register first");
        assert_eq!(Failure::of(&words), Failure::Refused);
        assert_eq!(
            Failure::of(&Status::unauthenticated("unknown or revoked token")),
            Failure::TokenRefused
        );
        assert_eq!(
            Failure::of(&Status::unavailable("down")),
            Failure::Transient
        );
        assert_eq!(
            Failure::of(&Status::resource_exhausted("slow down")),
            Failure::Transient
        );
        assert_eq!(
            Failure::of(&Status::failed_precondition("lease ended")),
            Failure::Refused
        );
    }
}
