//! The coordinator's one error type, mapped to a gRPC status at the service edge.

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
    /// The caller may not do this (someone else's lease, a banned worker).
    #[error("{0}")]
    PermissionDenied(String),
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
