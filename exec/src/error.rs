//! The crate's error type.

use std::io;
use std::path::{Path, PathBuf};

/// Everything that can go wrong in `grind-exec`, each naming what it was doing.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An IO operation on a path failed.
    #[error("{what} {path}: {source}")]
    Io {
        /// What was being done ("reading", "creating directory", ...).
        what: &'static str,
        /// The path involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// Starting a program failed (the sandbox set-up in the child, or exec itself).
    #[error("starting {program}: {source}")]
    Spawn {
        /// The program.
        program: PathBuf,
        /// Why (a failed sandbox step names itself in the message).
        #[source]
        source: io::Error,
    },
    /// The sandbox could not be prepared as asked (e.g. Landlock required but unavailable).
    #[error("sandbox: {0}")]
    Sandbox(String),
    /// A bundle is malformed or unsafe (names the entry).
    #[error("bundle: {0}")]
    Bundle(String),
    /// Bytes do not have the digest they were announced with.
    #[error("digest mismatch: expected sha256 {expected}, got {actual}")]
    DigestMismatch {
        /// The digest asked for.
        expected: String,
        /// The digest of the bytes received.
        actual: String,
    },
    /// A specification that cannot be run (names the field).
    #[error("invalid specification: {0}")]
    InvalidSpec(String),
}

impl Error {
    /// An [`Error::Io`] for `path`.
    pub(crate) fn io(what: &'static str, path: &Path, source: io::Error) -> Error {
        Error::Io {
            what,
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Result with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
