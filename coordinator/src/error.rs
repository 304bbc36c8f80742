//! The coordinator's one error type, mapped to a gRPC status at the service edge.

use grind_proto::refusal::refusal_status;
use grind_proto::v1::refusal::Kind;
use grind_shared::problem::ProblemError;
use tonic::{Code, Status};

/// Everything a coordinator operation can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The database failed.
    #[error("store: {0}")]
    Store(#[from] rusqlite::Error),
    /// A named thing (campaign, lease, worker) does not exist.
    #[error("{0}")]
    NotFound(String),
    /// The request is malformed.
    #[error("{0}")]
    InvalidArgument(String),
    /// The caller may not do this (someone else's lease, another token's worker).
    #[error("{0}")]
    PermissionDenied(String),
    /// The worker id is not known here: the worker must register (again). Sent with a typed
    /// refusal (`grind_proto::refusal`), as is [`Error::Banned`].
    #[error("unknown worker {0}: register first")]
    UnknownWorker(i64),
    /// The worker is banned: its calls are refused for good.
    #[error("worker {0} is banned")]
    Banned(i64),
    /// The request is well-formed but the state does not allow it.
    #[error("{0}")]
    FailedPrecondition(String),
    /// A problem rejected parameters, a unit, a solution or a result.
    #[error(transparent)]
    Problem(#[from] ProblemError),
    /// The caller exceeded a rate limit; it may retry later.
    #[error("{0}")]
    ResourceExhausted(String),
    /// The coordinator cannot serve right now.
    #[error("{0}")]
    Unavailable(String),
    /// A bug or an unexpected failure.
    #[error("internal error: {0}")]
    Internal(String),
}

impl From<Error> for Status {
    fn from(err: Error) -> Status {
        let code = match &err {
            Error::UnknownWorker(id) => {
                return refusal_status(Code::NotFound, err.to_string(), Kind::UnknownWorker, *id)
            }
            Error::Banned(id) => {
                return refusal_status(Code::PermissionDenied, err.to_string(), Kind::Banned, *id)
            }
            Error::Store(_) | Error::Internal(_) => Code::Internal,
            Error::NotFound(_) => Code::NotFound,
            Error::InvalidArgument(_) | Error::Problem(_) => Code::InvalidArgument,
            Error::PermissionDenied(_) => Code::PermissionDenied,
            Error::FailedPrecondition(_) => Code::FailedPrecondition,
            Error::Unavailable(_) => Code::Unavailable,
            Error::ResourceExhausted(_) => Code::ResourceExhausted,
        };
        Status::new(code, err.to_string())
    }
}
